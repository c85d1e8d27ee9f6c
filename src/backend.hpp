// The interface between src/api (validation, sizes, dispatch) and the backends. Every function
// here receives arguments that src/api has already validated, and the sizes it derived.
#pragma once
#include <mxq/mxq.hpp>

#include <cstdint>

namespace mxq {
// Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share no byte; a null b shares none.
inline bool disjoint_bytes(const void* a, uint64_t a_bytes, const void* b, uint64_t b_bytes) {
  if (b == nullptr) return true;
  const uint64_t a0 = reinterpret_cast<uintptr_t>(a), b0 = reinterpret_cast<uintptr_t>(b);
  return a0 + a_bytes <= b0 || b0 + b_bytes <= a0;
}
}  // namespace mxq

namespace mxq::cpu {
Status quantize(const QuantizeArgs& args, const QuantizeSizes& sizes);
Status dequantize(const DequantizeArgs& args);
Status tensor_amax(const TensorView& input, float* out);
Status pad(const PadArgs& args, int64_t out_rows);
Status unpad(const UnpadArgs& args);
Status swizzle(const SwizzleArgs& args);
Status unswizzle(const SwizzleArgs& args, uint8_t* linear_out);
Status validate_group_ends(const TokenGroups& groups, int64_t M);
// SwiGLU's elementwise part: a (M, F), or dh (M, 2F) and grad_weights, in h's dtype at `out`
// (contiguous); src/api quantizes it.
Status swiglu_forward(const SwigluArgs& args, void* out);
Status swiglu_backward(const SwigluBackwardArgs& args, void* out);
}  // namespace mxq::cpu

// Implemented in src/cuda/ when the build has CUDA. Ops return Code::unsupported for what the CUDA
// backend does not serve yet; src/api reports that error and never falls back silently.
// The code of a kernel family's folder src/cuda/<family>/ lives in namespace
// mxq::cuda::kernels::<family> (the folder's name, one level below these entry points, whose
// names it shares), except the entry points themselves; src/cuda/*.{hpp,cuh} are mxq::cuda.
// Includes in src/: the public API as <mxq/...>, the project's headers as "..." paths from src/.
namespace mxq::cuda {
bool device_present();
bool is_device_pointer(const void* p);  // memory the current device can read (device or managed)
Status quantize(const QuantizeArgs& args, const QuantizeSizes& sizes);
Status dequantize(const DequantizeArgs& args);
Status tensor_amax(const TensorView& input, float* out, void* stream);
Status pad(const PadArgs& args, int64_t out_rows);
Status unpad(const UnpadArgs& args);
Status swizzle(const SwizzleArgs& args);
Status unswizzle(const SwizzleArgs& args, uint8_t* linear_out);
Status validate_group_ends(const TokenGroups& groups, int64_t M, void* stream);
// SwiGLU with its quantize `q`, whose input is the computed tensor (a, or dh) at the caller's
// buffer (data null when the caller keeps no copy).
Status swiglu_quantize(const SwigluArgs& args, const QuantizeArgs& q, const QuantizeSizes& sizes);
Status swiglu_backward_quantize(const SwigluBackwardArgs& args, const QuantizeArgs& q, const QuantizeSizes& sizes);
// Whether those quantize the tensor as they compute it (no buffer needed): swiglu_needs_computed's rule.
bool swiglu_in_one_pass(const QuantizeParams& params, const float* tensor_amax, const float* amax_out,
                        const TensorView& h, const TensorView* grad, const float* weights);
}  // namespace mxq::cuda
