// One quantize call and its inverse on a backend, with outputs in backend memory: shared by
// `mxq demo` and `mxq quantize`. Inputs (TensorView data, group ends) must already live in the
// backend's memory (see backend_memory.hpp).
#pragma once
#include <mxq/mxq.hpp>

#include <vector>

#include "backend_memory.hpp"

namespace mxq::cli {

struct QuantizeJob {
  TensorView input;
  QuantizeParams params;
  QuantizeGroups groups;
  const float* tensor_amax = nullptr;  // nvfp4: [batch] in backend memory; null: computed
};

struct Quantized {
  QuantizeSizes sizes;
  BackendBuffer row_data, row_scales, col_data, col_scales, s_enc, s_dec;
  double seconds = 0;  // the quantize call alone, synchronised

  // Bytes of the quantized representation: data + scales of every direction + tensor scales.
  int64_t bytes() const;
};

Quantized quantize_on(Backend backend, const QuantizeJob& job);

// quantize_on into the buffers of `q`, which keep their memory from call to call when it is large
// enough (for weight after weight of a checkpoint).
void quantize_into(Backend backend, const QuantizeJob& job, Quantized& q);

// The first half of quantize_into: sizes `q`'s buffers for `job` and returns the arguments of the
// quantize call that would fill them (for callers that quantize the rows a piece at a time).
QuantizeArgs prepare_into(Backend backend, const QuantizeJob& job, Quantized& q);

// Dequantizes one direction (rowwise or colwise) of `q` into fp32 host memory, shape
// (batch, rows', cols) row-major as docs/layouts.md describes.
std::vector<float> dequantize_on(Backend backend, const QuantizeJob& job, const Quantized& q, Direction direction);

}  // namespace mxq::cli
