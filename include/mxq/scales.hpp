// Scale-matrix layout conversion: linear <-> blocked (128x4 swizzle), plain or per token group.
#pragma once
#include <cstdint>

#include "status.hpp"
#include "tensor.hpp"

namespace mxq {

enum class ScaleGroups : int32_t {
  none = 0,     // one blocked matrix per batch
  along_m = 1,  // groups of rows: ends in rows; each group starts on its own 128-row tile
  along_k = 2,  // groups of columns: ends in scale columns; each group padded to 4 columns
};

struct SwizzleArgs {
  const uint8_t* in = nullptr;  // linear (batch, rows, cols)
  int64_t batch = 1, rows = 0, cols = 0;
  ScaleGroups group_axis = ScaleGroups::none;
  TokenGroups groups;      // batch must be 1 with groups
  uint8_t* out = nullptr;  // blocked, size from swizzle_size
  Backend backend = Backend::auto_;
  void* stream = nullptr;
};

Status swizzle_size(const SwizzleArgs& args, int64_t* bytes);
Status swizzle(const SwizzleArgs& args);
// The inverse: reads args.out (blocked) and writes args.in's layout into `linear_out`.
Status unswizzle(const SwizzleArgs& args, uint8_t* linear_out);

}  // namespace mxq
