// mxq::cuda::swiglu_quantize and swiglu_backward_quantize: the quantize kernels compute the tensor
// from h as they read it (source.cuh) where they can; otherwise the elementwise kernel writes it to
// the caller's buffer and the quantize reads it back. A kept tensor's rows past the token groups,
// which no quantize tile reads, come from the elementwise kernel.
#include <string>

#include "backend.hpp"
#include "cuda/swiglu/elementwise.hpp"
#include "cuda/swiglu/quantize_computed.hpp"
#include "cuda/swiglu/tuning.hpp"

namespace mxq::cuda::kernels::swiglu {
namespace {

// swiglu_in_one_pass, and a copy the kernels can store elements to.
bool computable(const QuantizeArgs& q, const TensorView& h, const TensorView* grad, const float* weights,
                const void* copy) {
  return swiglu_in_one_pass(q.params, q.tensor_amax, q.out.amax, h, grad, weights) && aligned_to(copy, 2);
}

quantize::SwigluSource make_source(const TensorView& h, const SwigluParams& sp, const float* weights, void* copy,
                                   int64_t cols) {
  quantize::SwigluSource s;
  s.weights = weights;
  s.copy = copy;
  s.copy_vec = aligned_to(copy, 16) && (cols * dtype_size(h.dtype)) % 16 == 0;
  s.F = h.cols / 2;
  s.interleaved = sp.layout == SwigluLayout::interleaved;
  s.rule = {sp.variant == SwigluVariant::clamped, sp.alpha, sp.limit};
  return s;
}

// The quantize kernels over h for q, computing its (M, cols) tensor as they read (source.cuh):
// q's input becomes that tensor's view of h (h's data and row stride).
template <bool kBackward>
Status quantize_from_h(const QuantizeArgs& q, const QuantizeSizes& sizes, const TensorView& h, int64_t cols,
                       const quantize::SwigluSource& src, bool vec) {
  QuantizeArgs v = q;
  v.input = {h.data, h.dtype, 1, h.rows, cols, h.rstride(), 0};
  return h.dtype == DType::fp16 ? quantize_computed<SwigluInput<Fp16In, kBackward>>(v, sizes, src, vec)
                                : quantize_computed<SwigluInput<Bf16In, kBackward>>(v, sizes, src, vec);
}

// The 16-byte path needs each half of a concatenated h in whole 16-byte chunks (a chunk of a, or of
// dh, then never spans both halves).
bool halves_in_chunks(const TensorView& h, const SwigluParams& sp) {
  return sp.layout == SwigluLayout::interleaved || ((h.cols / 2) * dtype_size(h.dtype)) % 16 == 0;
}

Status needs_buffer(const char* op, const char* name, int64_t cols) {
  return Status::error(Code::unsupported,
                       std::string(op) + ": the cuda backend needs " + name + " (an (M, " + std::to_string(cols) +
                           ") buffer in the input's dtype) for this call: it writes that tensor, then quantizes "
                           "it (swiglu_needs_computed)");
}

}  // namespace
}  // namespace mxq::cuda::kernels::swiglu

namespace mxq::cuda {

using namespace kernels::swiglu;  // this folder's helpers above

bool swiglu_in_one_pass(const QuantizeParams& params, const float* tensor_amax, const float* amax_out,
                        const TensorView& h, const TensorView* grad, const float* weights) {
  Facts f;
  f.half_precision_h = h.dtype == DType::bf16 || h.dtype == DType::fp16;
  f.grad_dtype_of_h = grad == nullptr || grad->dtype == h.dtype;
  f.whole_tensor_pass = (params.format == Format::nvfp4 && tensor_amax == nullptr) || amax_out != nullptr;
  f.elements_aligned = aligned_to(h.data, 2) && (!grad || aligned_to(grad->data, 2)) && aligned_to(weights, 4);
  return one_pass(f);
}

Status swiglu_quantize(const SwigluArgs& a, const QuantizeArgs& q, const QuantizeSizes& sizes) {
  const TensorView& h = a.input;
  const int64_t F = h.cols / 2;
  if (computable(q, h, nullptr, a.weights, a.activation)) {
    const kernels::quantize::SwigluSource src = make_source(h, a.swiglu, a.weights, a.activation, F);
    const Status st = quantize_from_h<false>(q, sizes, h, F, src, halves_in_chunks(h, a.swiglu));
    return st.ok() && a.activation && q.groups.groups.count ? elementwise_forward(a, a.activation, q.groups.groups)
                                                            : st;
  }
  if (a.activation == nullptr && h.rows * F > 0) return needs_buffer("swiglu_quantize", "activation", F);
  const Status st = elementwise_forward(a, a.activation);
  return st.ok() ? quantize(q, sizes) : st;
}

Status swiglu_backward_quantize(const SwigluBackwardArgs& a, const QuantizeArgs& q, const QuantizeSizes& sizes) {
  const TensorView& h = a.input;
  const bool one_pass = computable(q, h, &a.grad, a.weights, a.grad_input);
  if (!one_pass && a.grad_input == nullptr && h.rows * h.cols > 0)
    return needs_buffer("swiglu_backward_quantize", "grad_input", h.cols);
  const Status weights_done = weight_grad(a);
  if (!weights_done.ok()) return weights_done;
  if (one_pass) {
    kernels::quantize::SwigluSource src = make_source(h, a.swiglu, a.weights, a.grad_input, h.cols);
    src.grad = a.grad.data;
    src.grad_row_stride = a.grad.rstride();
    const int64_t grad_row_bytes = a.grad.rstride() * dtype_size(a.grad.dtype);
    const bool vec = halves_in_chunks(h, a.swiglu) && aligned_to(a.grad.data, 16) && grad_row_bytes % 16 == 0;
    const Status st = quantize_from_h<true>(q, sizes, h, h.cols, src, vec);
    return st.ok() && a.grad_input && q.groups.groups.count ? elementwise_backward(a, a.grad_input, q.groups.groups)
                                                            : st;
  }
  const Status st = elementwise_backward(a, a.grad_input);
  return st.ok() ? quantize(q, sizes) : st;
}

}  // namespace mxq::cuda
