// quantize: bf16/fp16/fp32 -> mxfp8 (e4m3, e5m2), mxfp4, nvfp4; rowwise, colwise (transposed) or
// both from one read; 2-D tokens or 3-D expert weights; linear or blocked scales; token groups with
// optional fused padding. docs/layouts.md describes every output layout.
#pragma once
#include <cstdint>

#include "status.hpp"
#include "tensor.hpp"
#include "types.hpp"

namespace mxq {

struct QuantizeParams {
  Format format = Format::mxfp8;
  ScaleRule rule = ScaleRule::rceil;  // MX formats only
  ScaleLayout layout = ScaleLayout::blocked;
  Direction direction = Direction::rowwise;
};

// Token groups of a 2-D input and how each direction lays them out.
//  pad_rowwise: 0 keeps rowwise data at the input rows; A (power of two) pads each group to a
//               multiple of A rows starting at its padded offset (fused pad + quantize).
//  pad_colwise: the same for the colwise (transposed) data columns.
// Each group's blocks start at the group's first (padded) row and never cross a group boundary; a
// group whose (padded) size is not a multiple of the block ends in a partial block. Output bytes
// that belong to no group (padding rows, rows past the last end) are written as 0.
struct QuantizeGroups {
  TokenGroups groups;
  int32_t pad_rowwise = 0;
  int32_t pad_colwise = 0;
};

struct QuantizeOutputs {
  void* row_data = nullptr;          // rowwise: (batch, rows', K) codes; fp4 (batch, rows', K/2)
  uint8_t* row_scales = nullptr;     // rowwise scales, layout per QuantizeParams::layout
  void* col_data = nullptr;          // colwise: (batch, K, rows') codes; fp4 (batch, K, rows'/2)
  uint8_t* col_scales = nullptr;     // colwise scales
  float* s_enc = nullptr;            // nvfp4 only, [batch]: encode scale 448*6/T
  float* s_dec = nullptr;            // nvfp4 only, [batch]: decode scale 1/s_enc
  int32_t* padded_starts = nullptr;  // optional with padding, [G]
  int32_t* padded_ends = nullptr;    // optional with padding, [G]
  // Optional, [batch]: max |x| of each batch of the input in fp32 (NaN wins), exactly as
  // tensor_amax gives it. Delayed scaling without a second read: the next nvfp4 call's
  // tensor_amax (a separate buffer: it may not overlap tensor_amax, s_enc or s_dec). Found while
  // quantizing by an nvfp4 quantize with a caller tensor_amax and no token groups; copied from
  // the computed one by an nvfp4 quantize without; a reduction of the input in other calls.
  float* amax = nullptr;
};

struct QuantizeArgs {
  TensorView input;
  QuantizeParams params;
  QuantizeGroups groups;
  // nvfp4: optional caller-given amax [batch]; null: computed. It may be out.s_enc or out.s_dec
  // itself (the tensor scales are then derived from it in place); no other buffer of the call may
  // overlap it, nor may any output overlap the input, the group ends or another output.
  const float* tensor_amax = nullptr;
  QuantizeOutputs out;
  Backend backend = Backend::auto_;
  void* stream = nullptr;  // cudaStream_t for the cuda backend
};

// Exact byte sizes (upper bounds for grouped outputs) of every output for these arguments.
struct QuantizeSizes {
  int64_t row_data_rows = 0;  // rows of the rowwise data per batch (padded bound with pad_rowwise)
  int64_t col_data_cols = 0;  // columns (M) of the colwise data per batch (bound with pad_colwise)
  int64_t row_data_bytes = 0;
  int64_t row_scale_bytes = 0;
  int64_t col_data_bytes = 0;
  int64_t col_scale_bytes = 0;
  int64_t tensor_scale_count = 0;   // floats in each of s_enc and s_dec (nvfp4: batch)
  int64_t padded_offset_count = 0;  // int32 in each of padded_starts/padded_ends (G when padding)
};

// Validates args (outputs may be null) and fills sizes.
Status quantize_sizes(const QuantizeArgs& args, QuantizeSizes* sizes);

// Validates args and runs the op on args.stream. Never synchronises, never allocates device memory.
Status quantize(const QuantizeArgs& args);

// NVFP4 tensor amax: max |x| over each batch of the input in fp32 into out[batch] (NaN wins).
Status tensor_amax(const TensorView& input, float* out, Backend backend = Backend::auto_, void* stream = nullptr);

}  // namespace mxq
