// dequantize: the inverse of quantize for one direction. x = decode(q) * scale (docs/spec.md section 7),
// computed in fp32 and rounded to nearest even into the output dtype.
#pragma once
#include <cstdint>

#include "quantize.hpp"

namespace mxq {

struct DequantizeArgs {
  // The quantize call that produced the data: format, layout and a single direction
  // (rowwise or colwise), the logical input shape (batch, rows, cols) and its groups.
  QuantizeParams params;
  int64_t batch = 1, rows = 0, cols = 0;
  QuantizeGroups groups;
  const void* data = nullptr;       // row_data or col_data of that call
  const uint8_t* scales = nullptr;  // row_scales or col_scales
  const float* s_dec = nullptr;     // nvfp4: [batch]
  // Output: (batch, rows', cols) row-major, not transposed; rows' = the data's padded rows when
  // that direction was padded, else rows. Rows that belong to no group come out as 0.
  void* out = nullptr;
  DType out_dtype = DType::bf16;  // bf16, fp16 or fp32
  Backend backend = Backend::auto_;
  void* stream = nullptr;
};

// Elements of the output (batch * rows' * cols).
Status dequantize_size(const DequantizeArgs& args, int64_t* out_elements);
Status dequantize(const DequantizeArgs& args);

}  // namespace mxq
