// NVFP4 tensor scales on the device, for the quantize launcher and the tensor_amax op.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include <mxq/mxq.hpp>

#include "backend.hpp"

namespace mxq::cuda::kernels::quantize {

// max |x| per batch of `in` as fp32 bit patterns (the unsigned max, so NaN wins) into bits[batch]:
// clears them (cudaMemsetAsync), then one reduction kernel reads the input once with atomicMax.
Status tensor_amax_bits(const TensorView& in, uint32_t* bits, cudaStream_t stream);

// s_enc[b], s_dec[b] of every batch from the caller's amax (`given`, device [batch]) or, when it is
// null, from the tensor amax reduced on the device into s_enc's slots first; that amax also into
// amax_out[b] when amax_out is not null. No allocation, no sync.
Status write_nvfp4_tensor_scales(const TensorView& in, const float* given, float* s_enc, float* s_dec, float* amax_out,
                                 cudaStream_t stream);

// An nvfp4 quantize whose tile kernel can derive the tensor scales from the caller's amax itself:
// the amax shares no byte with s_enc / s_dec (a delayed amax kept in an output slot must be read
// before any CTA overwrites it, so that case keeps the separate kernel, which reads it first).
inline bool tensor_scales_from_given_amax(const QuantizeArgs& a) {
  if (a.params.format != Format::nvfp4 || a.tensor_amax == nullptr) return false;
  const uint64_t bytes = uint64_t(a.input.batch) * sizeof(float);
  return disjoint_bytes(a.tensor_amax, bytes, a.out.s_enc, bytes) &&
         disjoint_bytes(a.tensor_amax, bytes, a.out.s_dec, bytes);
}

// The tensor scales of an nvfp4 quantize (args.out.s_enc / s_dec; none for the MX formats), and the
// optional out.amax where no tile kernel finds it (amax_in_tile_kernel false): copied from the
// computed amax, else by a reduction of its own.
inline Status write_tensor_scales_and_amax(const QuantizeArgs& a, cudaStream_t stream,
                                           bool amax_in_tile_kernel = false) {
  float* amax_out = amax_in_tile_kernel ? nullptr : a.out.amax;
  const bool computed = a.params.format == Format::nvfp4 && a.tensor_amax == nullptr;
  if (amax_out != nullptr && !computed) {
    const Status st = tensor_amax_bits(a.input, reinterpret_cast<uint32_t*>(amax_out), stream);
    if (!st.ok()) return st;
  }
  if (a.params.format != Format::nvfp4) return {};
  return write_nvfp4_tensor_scales(a.input, a.tensor_amax, a.out.s_enc, a.out.s_dec, computed ? amax_out : nullptr,
                                   stream);
}

}  // namespace mxq::cuda::kernels::quantize
