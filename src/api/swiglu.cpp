// swiglu_quantize and swiglu_backward_quantize: validation, sizes and dispatch. The quantization
// of the computed tensor (a, or dh) is validated and run as quantize's own.
#include <mxq/swiglu.hpp>

#include <type_traits>
#include <vector>

#include <mxq/numerics/common.hpp>

#include "backend.hpp"
#include "check.hpp"
#include "quantize_layout.hpp"

namespace mxq {
namespace {

Status check_swiglu_params(const char* op, const SwigluParams& p) {
  MXQ_REQUIRE(p.variant == SwigluVariant::silu || p.variant == SwigluVariant::clamped,
              "swiglu.variant must be silu (0) or clamped (1) (got ", static_cast<int32_t>(p.variant), ")");
  MXQ_REQUIRE(p.layout == SwigluLayout::concatenated || p.layout == SwigluLayout::interleaved,
              "swiglu.layout must be concatenated (0) or interleaved (1) (got ", static_cast<int32_t>(p.layout), ")");
  if (p.variant == SwigluVariant::clamped) {
    MXQ_REQUIRE(p.limit > 0.0f && p.limit <= num::kFltMax, "swiglu.limit (", p.limit,
                ") must be finite and > 0 for the clamped variant");
    MXQ_REQUIRE(p.alpha >= -num::kFltMax && p.alpha <= num::kFltMax, "swiglu.alpha (", p.alpha, ") must be finite");
  }
  return {};
}

// h: a 2-D float tensor of gate / up pairs.
Status check_h(const char* op, const TensorView& h) {
  MXQ_TRY(api::check_tensor(op, "input", h));
  MXQ_TRY(api::check_float_dtype(op, "input.dtype", h.dtype));
  MXQ_REQUIRE(h.batch == 1, "input must be 2-D (M, 2F): batch must be 1 (got ", h.batch, ")");
  MXQ_REQUIRE(h.cols % 2 == 0, "input.cols (", h.cols, ") must be even: F gate and F up columns");
  return {};
}

// The quantize call over the computed tensor (M, cols) in h's dtype at `data`.
QuantizeArgs computed_quantize(const TensorView& h, int64_t cols, const void* data, const QuantizeParams& params,
                               const QuantizeGroups& groups, const float* tensor_amax, const QuantizeOutputs& out,
                               Backend backend, void* stream) {
  QuantizeArgs q;
  q.input = {data, h.dtype, 1, h.rows, cols, 0, 0};
  q.params = params;
  q.groups = groups;
  q.tensor_amax = tensor_amax;
  q.out = out;
  q.backend = backend;
  q.stream = stream;
  return q;
}

// No output may share a byte with an input or another output: h, dA, weights, group ends and
// tensor_amax in; the computed tensor, the weights' gradient and the quantize outputs out.
Status check_swiglu_overlap(const char* op, const QuantizeArgs& q, const QuantizeSizes& s, const TensorView& h,
                            const TensorView* grad, const float* weights, const char* computed_name,
                            const void* computed, const float* grad_weights) {
  const QuantizeOutputs& o = q.out;
  const uint64_t floats = uint64_t(h.rows) * sizeof(float);
  const uint64_t offsets = uint64_t(s.padded_offset_count) * sizeof(int32_t);
  const uint64_t computed_bytes = uint64_t(q.input.rows) * uint64_t(q.input.cols) * dtype_size(h.dtype);
  const bool amax_in_place = q.tensor_amax && (q.tensor_amax == o.s_enc || q.tensor_amax == o.s_dec);
  return api::check_no_overlap(
      op,
      {{"input.data", h.data, api::view_bytes(h)},
       {"grad.data", grad ? grad->data : nullptr, grad ? api::view_bytes(*grad) : 0},
       {"weights", weights, floats},
       {"groups.groups.ends", q.groups.groups.ends, uint64_t(q.groups.groups.count) * sizeof(int32_t)},
       {"tensor_amax", amax_in_place ? nullptr : q.tensor_amax, sizeof(float)}},
      {{computed_name, computed, computed_bytes},
       {"grad_weights", grad_weights, floats},
       {"out.row_data", o.row_data, uint64_t(s.row_data_bytes)},
       {"out.row_scales", o.row_scales, uint64_t(s.row_scale_bytes)},
       {"out.col_data", o.col_data, uint64_t(s.col_data_bytes)},
       {"out.col_scales", o.col_scales, uint64_t(s.col_scale_bytes)},
       {"out.s_enc", o.s_enc, uint64_t(s.tensor_scale_count) * sizeof(float)},
       {"out.s_dec", o.s_dec, uint64_t(s.tensor_scale_count) * sizeof(float)},
       {"out.padded_starts", o.padded_starts, offsets},
       {"out.padded_ends", o.padded_ends, offsets},
       {"out.amax", o.amax, sizeof(float)}});
}

Status validate_forward(const char* op, const SwigluArgs& a, QuantizeSizes* s) {
  MXQ_TRY(check_h(op, a.input));
  MXQ_TRY(check_swiglu_params(op, a.swiglu));
  const QuantizeArgs q = computed_quantize(a.input, a.input.cols / 2, a.input.data, a.params, a.groups, a.tensor_amax,
                                           a.out, a.backend, a.stream);
  return api::validate_quantize_layout(op, q, "activation.", s);
}

Status validate_backward(const char* op, const SwigluBackwardArgs& a, QuantizeSizes* s) {
  MXQ_TRY(check_h(op, a.input));
  MXQ_TRY(check_swiglu_params(op, a.swiglu));
  MXQ_TRY(api::check_tensor(op, "grad", a.grad));
  MXQ_TRY(api::check_float_dtype(op, "grad.dtype", a.grad.dtype));
  MXQ_REQUIRE(a.grad.batch == 1 && a.grad.rows == a.input.rows && a.grad.cols * 2 == a.input.cols,
              "grad must be (M, F) = (", a.input.rows, ", ", a.input.cols / 2, ") for an input of (", a.input.rows,
              ", ", a.input.cols, ") (got batch ", a.grad.batch, ", ", a.grad.rows, " x ", a.grad.cols, ")");
  const QuantizeArgs q = computed_quantize(a.input, a.input.cols, a.input.data, a.params, a.groups, a.tensor_amax,
                                           a.out, a.backend, a.stream);
  return api::validate_quantize_layout(op, q, "grad_input.", s);
}

}  // namespace

Status swiglu_quantize_sizes(const SwigluArgs& args, QuantizeSizes* sizes) {
  const char* op = "swiglu_quantize_sizes";
  MXQ_REQUIRE(sizes != nullptr, "sizes is null");
  QuantizeSizes s;
  MXQ_TRY(validate_forward(op, args, &s));
  *sizes = s;
  return {};
}

Status swiglu_backward_quantize_sizes(const SwigluBackwardArgs& args, QuantizeSizes* sizes) {
  const char* op = "swiglu_backward_quantize_sizes";
  MXQ_REQUIRE(sizes != nullptr, "sizes is null");
  QuantizeSizes s;
  MXQ_TRY(validate_backward(op, args, &s));
  *sizes = s;
  return {};
}

namespace {

// The computed tensor's buffer, its name and width, and the backend call that fills it.
const char* computed_name(const SwigluArgs&) { return "activation"; }
const char* computed_name(const SwigluBackwardArgs&) { return "grad_input"; }
void* computed_buffer(const SwigluArgs& a) { return a.activation; }
void* computed_buffer(const SwigluBackwardArgs& a) { return a.grad_input; }
int64_t computed_cols(const SwigluArgs& a) { return a.input.cols / 2; }
int64_t computed_cols(const SwigluBackwardArgs& a) { return a.input.cols; }
const TensorView* grad_of(const SwigluArgs&) { return nullptr; }
const TensorView* grad_of(const SwigluBackwardArgs& a) { return &a.grad; }
float* grad_weights_of(const SwigluArgs&) { return nullptr; }
float* grad_weights_of(const SwigluBackwardArgs& a) { return a.grad_weights; }

// Validated args: the reference computes the tensor into the caller's buffer, or host memory of its
// own, then quantizes it; the cuda backend quantizes it as it computes it where it can
// (src/cuda/swiglu).
template <class Args>
Status run_swiglu(const char* op, const Args& args, const QuantizeSizes& s) {
  const TensorView& h = args.input;
  const int64_t cols = computed_cols(args);
  QuantizeArgs q = computed_quantize(h, cols, computed_buffer(args), args.params, args.groups, args.tensor_amax,
                                     args.out, args.backend, args.stream);
  MXQ_TRY(api::check_quantize_outputs_present(op, q, s));  // the overlap check below covers more buffers
  MXQ_TRY(check_swiglu_overlap(op, q, s, h, grad_of(args), args.weights, computed_name(args), computed_buffer(args),
                               grad_weights_of(args)));
  const QuantizeOutputs& o = args.out;
  const TensorView* grad = grad_of(args);
  Backend b;
  MXQ_TRY(api::resolve_backend(op, args.backend,
                               {{"grad.data", grad ? grad->data : nullptr},
                                {"input.data", h.data},
                                {"weights", args.weights},
                                {"groups.groups.ends", args.groups.groups.ends},
                                {"tensor_amax", args.tensor_amax},
                                {computed_name(args), computed_buffer(args)},
                                {"grad_weights", grad_weights_of(args)},
                                {"out.row_data", o.row_data},
                                {"out.row_scales", o.row_scales},
                                {"out.col_data", o.col_data},
                                {"out.col_scales", o.col_scales},
                                {"out.s_enc", o.s_enc},
                                {"out.s_dec", o.s_dec},
                                {"out.padded_starts", o.padded_starts},
                                {"out.padded_ends", o.padded_ends},
                                {"out.amax", o.amax}},
                               &b));
  constexpr bool kForward = std::is_same_v<Args, SwigluArgs>;
#ifdef MXQ_WITH_CUDA
  if (b == Backend::cuda) {
    if constexpr (kForward) {
      return cuda::swiglu_quantize(args, q, s);
    } else {
      return cuda::swiglu_backward_quantize(args, q, s);
    }
  }
#endif
  // The reference computes the tensor into host memory of its own when the caller keeps no copy.
  std::vector<unsigned char> scratch;
  if (q.input.data == nullptr) {
    scratch.resize(static_cast<size_t>(h.rows * cols * dtype_size(h.dtype)));
    q.input.data = scratch.data();
  }
  void* out = const_cast<void*>(q.input.data);
  if constexpr (kForward) {
    MXQ_TRY(cpu::swiglu_forward(args, out));
  } else {
    MXQ_TRY(cpu::swiglu_backward(args, out));
  }
  return cpu::quantize(q, s);
}

}  // namespace

namespace {
bool on_cuda(Backend b) { return b == Backend::cuda || b == Backend::cuda_unchecked; }
}  // namespace

bool swiglu_needs_computed(const SwigluArgs& args, Backend backend) {
#ifdef MXQ_WITH_CUDA
  return on_cuda(backend) &&
         !cuda::swiglu_in_one_pass(args.params, args.tensor_amax, args.out.amax, args.input, nullptr, args.weights);
#else
  (void)args;
  return on_cuda(backend);  // a build without CUDA fails such a call whatever is passed
#endif
}

bool swiglu_needs_computed(const SwigluBackwardArgs& args, Backend backend) {
#ifdef MXQ_WITH_CUDA
  return on_cuda(backend) && !cuda::swiglu_in_one_pass(args.params, args.tensor_amax, args.out.amax, args.input,
                                                       &args.grad, args.weights);
#else
  (void)args;
  return on_cuda(backend);
#endif
}

Status swiglu_quantize(const SwigluArgs& args) {
  const char* op = "swiglu_quantize";
  QuantizeSizes s;
  MXQ_TRY(validate_forward(op, args, &s));
  return run_swiglu(op, args, s);
}

Status swiglu_backward_quantize(const SwigluBackwardArgs& args) {
  const char* op = "swiglu_backward_quantize";
  QuantizeSizes s;
  MXQ_TRY(validate_backward(op, args, &s));
  MXQ_REQUIRE(args.weights == nullptr || args.grad_weights != nullptr || args.input.rows == 0,
              "grad_weights is null but weights are given (the gradient of each row's weight, ", args.input.rows,
              " floats)");
  MXQ_REQUIRE(args.weights != nullptr || args.grad_weights == nullptr,
              "grad_weights is given but weights are not (there is no weight to differentiate)");
  return run_swiglu(op, args, s);
}

}  // namespace mxq
