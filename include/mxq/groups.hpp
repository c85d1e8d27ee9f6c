// Token groups: pad / unpad with device-side offsets (docs/spec.md section 6) and an explicitly
// synchronising validation of offsets.
#pragma once
#include <cstdint>

#include "status.hpp"
#include "tensor.hpp"

namespace mxq {

struct PadArgs {
  TensorView input;  // 2-D (M, width), any dtype; row stride allowed
  TokenGroups groups;
  int32_t alignment = 32;            // power of two
  void* out = nullptr;               // (padded_rows_bound(M, G, A), width) contiguous, same dtype
  int32_t* padded_starts = nullptr;  // [G], required
  int32_t* padded_ends = nullptr;    // [G], required: padded_starts + A*ceil(size/A)
  float* amax = nullptr;             // optional [1]: max |x| of out in fp32 (NaN wins), found while copying
  Backend backend = Backend::auto_;
  void* stream = nullptr;
};

// `amax` (bf16 / fp16 / fp32 inputs, not overlapping `out`) is the tensor amax of the output, as
// tensor_amax(out) would give it: an nvfp4 quantize of `out` can take it as its tensor_amax and
// skip the reduction's second read of the tensor (docs/spec.md section 3, docs/layouts.md "pad / unpad").

// Rows of pad's output: round_up(M + G*A, A).
Status pad_rows(const PadArgs& args, int64_t* rows);
Status pad(const PadArgs& args);

struct UnpadArgs {
  TensorView input;    // the padded tensor: rows = padded_rows_bound(M, G, A)
  TokenGroups groups;  // the original (unpadded) end offsets
  int32_t alignment = 32;
  int64_t rows = 0;       // M, the rows of the output
  void* out = nullptr;    // (M, width) contiguous; rows past the last end come out as 0
  float* amax = nullptr;  // optional [1]: max |x| of out in fp32 (NaN wins), found while copying
  Backend backend = Backend::auto_;
  void* stream = nullptr;
};
Status unpad(const UnpadArgs& args);

// Checks offsets (monotone, within [0, M]) and synchronises: the only op that does. Returns
// Code::invalid_offsets with the first bad index in the message.
Status validate_group_ends(const TokenGroups& groups, int64_t M, Backend backend = Backend::auto_,
                           void* stream = nullptr);

}  // namespace mxq
