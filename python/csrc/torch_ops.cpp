// The torch operators mxq::quantize, dequantize, tensor_amax, pad, unpad, swizzle and unswizzle:
// each one a native operator over libmxq's C++ API, so that no Python runs between torch's
// dispatcher and the kernel launch. CUDA tensors run on the cuda backend on the tensor's device and
// torch's current stream; CPU tensors on the CPU backend. Outputs come from torch's allocator and
// are always fresh tensors (the ops never write into their arguments). The fake (meta) functions
// for torch.compile live in python/mxq/_torch.py, over the shapes of python/mxq/_shapes.py, which
// output_shapes.hpp mirrors here for eager calls; both are checked against the library's sizes.
#include <Python.h>  // first, as Python asks: it sets feature macros for the standard headers

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <torch/library.h>
#ifdef MXQ_TORCH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <mxq/mxq.hpp>

#include <array>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "output_shapes.hpp"

namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;
using mxq::torch_shapes::Shape;

// Library errors keep their message and map onto the Python exception that mxq's error classes
// derive from: invalid arguments ValueError, unsupported NotImplementedError, CUDA RuntimeError.
void check(const mxq::Status& s) {
  if (s.ok()) return;
  switch (s.code()) {
    case mxq::Code::invalid_argument:
    case mxq::Code::invalid_offsets: TORCH_CHECK_VALUE(false, s.message());
    case mxq::Code::unsupported: TORCH_CHECK_NOT_IMPLEMENTED(false, s.message());
    default: TORCH_CHECK(false, s.message());
  }
}

std::string_view view_of(c10::string_view s) { return std::string_view(s.data(), s.size()); }

template <class E>
E parse_enum(const char* op, const char* what, c10::string_view s) {
  E v{};
  if (mxq::parse(view_of(s), &v)) return v;
  std::string names;
  for (E e : mxq::AllValues<E>::v) names += std::string(names.empty() ? "" : ", ") + "'" + mxq::to_string(e) + "'";
  TORCH_CHECK_VALUE(false, op, ": ", what, " must be one of [", names, "] (got '", view_of(s), "')");
  return v;
}

mxq::ScaleGroups parse_group_axis(const char* op, c10::string_view s) {
  const std::string_view v = view_of(s);
  if (v == "none") return mxq::ScaleGroups::none;
  if (v == "m") return mxq::ScaleGroups::along_m;
  if (v == "k") return mxq::ScaleGroups::along_k;
  TORCH_CHECK_VALUE(false, op, ": group_axis must be one of ['k', 'm', 'none'] (got '", v, "')");
  return mxq::ScaleGroups::none;
}

int32_t as_int32(const char* op, const char* what, int64_t v) {
  TORCH_CHECK_VALUE(v >= 0 && v <= std::numeric_limits<int32_t>::max(), op, ": ", what, " (", v,
                    ") must be in [0, 2147483647]");
  return static_cast<int32_t>(v);
}

// Where an op runs: the tensor's device (made current for the call) and torch's current stream
// there. Torch already knows every tensor's device, so the library skips its per-pointer queries.
struct Exec {
  mxq::Backend backend = mxq::Backend::cpu;
  void* stream = nullptr;
#ifdef MXQ_TORCH_CUDA
  c10::cuda::OptionalCUDAGuard guard;
#endif

  Exec(const char* op, const Tensor& like) {
    if (like.is_cuda()) {
#ifdef MXQ_TORCH_CUDA
      guard.set_device(like.device());
      backend = mxq::Backend::cuda_unchecked;
      stream = c10::cuda::getCurrentCUDAStream(like.device().index()).stream();
#else
      TORCH_CHECK_NOT_IMPLEMENTED(false, op, ": mxq's torch operators were built without CUDA");
#endif
    } else {
      TORCH_CHECK_VALUE(like.is_cpu(), op, ": tensors must be on a CPU or CUDA device (got ", like.device(), ")");
    }
  }
};

void same_device(const char* op, const char* what, const Tensor& t, const Tensor& like) {
  TORCH_CHECK_VALUE(t.device() == like.device(), op, ": ", what, " is on ", t.device(), " but the input is on ",
                    like.device());
}

std::optional<mxq::DType> dtype_of(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return mxq::DType::bf16;
    case at::kHalf: return mxq::DType::fp16;
    case at::kFloat: return mxq::DType::fp32;
    // One-byte payloads (pad / unpad of quantized data and scales).
    case at::kByte:
    case at::kChar:
    case at::kFloat8_e4m3fn:
    case at::kFloat8_e5m2:
    case at::kFloat8_e8m0fnu: return mxq::DType::u8;
    default: return std::nullopt;
  }
}

// Innermost stride 1 and row / batch strides that do not overlap; anything else is copied.
bool strides_ok(const Tensor& x) {
  const auto st = x.strides();
  const int64_t rows = x.size(-2), cols = x.size(-1);
  if (cols > 1 && st.back() != 1) return false;
  if (rows > 1 && st[st.size() - 2] < cols) return false;
  if (x.dim() == 3 && x.size(0) > 1) {
    const int64_t extent = rows ? (rows - 1) * st[1] + cols : 0;
    if (st[0] < extent) return false;
  }
  return true;
}

// A 2-D (M, K) or 3-D (B, M, K) input as the library's view; `x` holds a copy when it was needed.
struct Input {
  Tensor x;
  mxq::TensorView view;
  bool batched = false;
};

Input input_view(const char* op, const Tensor& given) {
  TORCH_CHECK_VALUE(given.dim() == 2 || given.dim() == 3, op,
                    ": expected a 2-D (M, K) or 3-D (B, M, K) tensor (got shape ", given.sizes(), ")");
  const std::optional<mxq::DType> dtype = dtype_of(given.scalar_type());
  TORCH_CHECK_VALUE(dtype.has_value(), op, ": unsupported tensor dtype ", given.scalar_type(),
                    " (bfloat16, float16, float32, or a one-byte dtype for pad/unpad)");
  Input in;
  in.x = strides_ok(given) ? given : given.contiguous();
  in.batched = given.dim() == 3;
  mxq::TensorView& v = in.view;
  v.data = in.x.const_data_ptr();
  v.dtype = *dtype;
  v.batch = in.batched ? in.x.size(0) : 1;
  v.rows = in.x.size(-2);
  v.cols = in.x.size(-1);
  v.row_stride = v.rows > 1 ? in.x.stride(-2) : 0;
  v.batch_stride = in.batched && v.batch > 1 ? in.x.stride(0) : 0;
  return in;
}

// A 1-D vector argument on the input's device, converted to `dtype` and made contiguous.
Tensor vector_arg(const char* op, const char* what, const Tensor& t, at::ScalarType dtype, const Tensor& like) {
  same_device(op, what, t, like);
  TORCH_CHECK_VALUE(t.dim() == 1, op, ": ", what, " must be 1-D (got shape ", t.sizes(), ")");
  // Converted only when needed: each conversion is a trip through the dispatcher.
  const Tensor v = t.scalar_type() == dtype ? t : t.to(dtype);
  return v.is_contiguous() ? v : v.contiguous();
}

// Token-group ends (int32) and their count; an undefined tensor and 0 without groups.
std::pair<Tensor, int64_t> group_ends_arg(const char* op, const OptTensor& ends, const Tensor& like) {
  if (!ends.has_value()) return {Tensor(), 0};
  Tensor e = vector_arg(op, "group_ends", *ends, at::kInt, like);
  return {e, e.size(0)};
}

// nvfp4's per-batch float vectors (tensor_amax, s_dec): exactly one float per batch.
Tensor batch_floats_arg(const char* op, const char* what, const OptTensor& t, int64_t batch, const Tensor& like) {
  if (!t.has_value()) return Tensor();
  Tensor v = vector_arg(op, what, *t, at::kFloat, like);
  TORCH_CHECK_VALUE(v.size(0) == batch, op, ": ", what, " has ", v.size(0), " elements but the input has ", batch,
                    " batches (one float per batch)");
  return v;
}

const int32_t* ends_ptr(const Tensor& e) { return e.defined() ? e.const_data_ptr<int32_t>() : nullptr; }
const float* floats_ptr(const Tensor& t) { return t.defined() ? t.const_data_ptr<float>() : nullptr; }

// A fresh output on like's device from torch's allocator, without a trip through the dispatcher
// (at::empty's dispatch cost more than the rest of a small op's host time).
Tensor new_output(const Shape& shape, at::ScalarType dtype, const Tensor& like) {
  const at::IntArrayRef size(shape.data(), shape.size());
#ifdef MXQ_TORCH_CUDA
  if (like.is_cuda()) return Tensor(at::detail::empty_cuda(size, dtype, like.device(), std::nullopt));
#endif
  return Tensor(at::detail::empty_cpu(size, dtype, /*pin_memory=*/false, std::nullopt));
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The shapes of output_shapes.hpp must hold exactly what the library writes.
void expect_numel(const char* op, const char* what, const Shape& shape, int64_t library_count) {
  TORCH_CHECK(shape_numel(shape) == library_count, op, ": internal: ", what, " shape ", c10::IntArrayRef(shape),
              " disagrees with libmxq (", library_count, ")");
}

void expect_bytes(const char* op, const char* what, const Tensor& t, const Shape& shape) {
  TORCH_CHECK_VALUE(t.nbytes() == static_cast<size_t>(shape_numel(shape)), op, ": ", what, " has ", t.nbytes(),
                    " bytes but this quantize layout has ", shape_numel(shape), " (shape ", c10::IntArrayRef(shape),
                    ")");
}

at::ScalarType data_dtype(mxq::Format f) {
  switch (f) {
    case mxq::Format::mxfp8: return at::kFloat8_e4m3fn;
    case mxq::Format::mxfp8_e5m2: return at::kFloat8_e5m2;
    default: return at::kByte;  // fp4: two codes per byte
  }
}

at::ScalarType scale_dtype(mxq::Format f) { return f == mxq::Format::nvfp4 ? at::kFloat8_e4m3fn : at::kFloat8_e8m0fnu; }

mxq::QuantizeParams parse_params(const char* op, c10::string_view format, c10::string_view direction,
                                 c10::string_view scale_rule, c10::string_view scale_layout) {
  mxq::QuantizeParams p;
  p.format = parse_enum<mxq::Format>(op, "format", format);
  p.direction = parse_enum<mxq::Direction>(op, "direction", direction);
  p.rule = parse_enum<mxq::ScaleRule>(op, "scale_rule", scale_rule);
  p.layout = parse_enum<mxq::ScaleLayout>(op, "scale_layout", scale_layout);
  return p;
}

// Allocates the outputs a quantize with these params, sizes and shapes produces, appends them to
// `outs` in the order row_data, row_scales, col_data, col_scales, s_enc, s_dec, padded_starts,
// padded_ends (those the call does not produce are left out, so that none is allocated) and
// returns them as the library's outputs.
mxq::QuantizeOutputs quantize_outputs(const char* op, const mxq::QuantizeParams& params,
                                      const mxq::QuantizeSizes& sizes, const mxq::torch_shapes::QuantizeShapes& s,
                                      const Tensor& like, std::vector<Tensor>& outs) {
  const std::array<int64_t, 8> counts = {sizes.row_data_bytes,      sizes.row_scale_bytes,    sizes.col_data_bytes,
                                         sizes.col_scale_bytes,     sizes.tensor_scale_count, sizes.tensor_scale_count,
                                         sizes.padded_offset_count, sizes.padded_offset_count};
  const at::ScalarType d = data_dtype(params.format), sc = scale_dtype(params.format);
  const std::array<at::ScalarType, 8> dtypes = {d, sc, d, sc, at::kFloat, at::kFloat, at::kInt, at::kInt};
  std::array<void*, 8> ptrs{};
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    if (!s.outputs[i]) continue;
    expect_numel(op, "output", *s.outputs[i], counts[i]);
    outs.push_back(new_output(*s.outputs[i], dtypes[i], like));
    ptrs[i] = outs.back().data_ptr();
  }
  return {ptrs[0],
          static_cast<uint8_t*>(ptrs[1]),
          ptrs[2],
          static_cast<uint8_t*>(ptrs[3]),
          static_cast<float*>(ptrs[4]),
          static_cast<float*>(ptrs[5]),
          static_cast<int32_t*>(ptrs[6]),
          static_cast<int32_t*>(ptrs[7]),
          nullptr};
}

// The outputs this call produces, in the order of quantize_outputs, then amax with with_amax.
std::vector<Tensor> quantize(const Tensor& x, c10::string_view format, c10::string_view direction,
                             c10::string_view scale_rule, c10::string_view scale_layout, const OptTensor& group_ends,
                             int64_t pad_rowwise, int64_t pad_colwise, const OptTensor& tensor_amax, bool with_amax) {
  const char* op = "quantize";
  mxq::QuantizeArgs a;
  a.params = parse_params(op, format, direction, scale_rule, scale_layout);
  const Input in = input_view(op, x);
  Exec exec(op, in.x);
  const auto [ends, G] = group_ends_arg(op, group_ends, in.x);
  const Tensor amax_in = batch_floats_arg(op, "tensor_amax", tensor_amax, in.view.batch, in.x);
  a.input = in.view;
  a.groups.groups = {ends_ptr(ends), G};
  a.groups.pad_rowwise = as_int32(op, "pad_rowwise", pad_rowwise);
  a.groups.pad_colwise = as_int32(op, "pad_colwise", pad_colwise);
  a.tensor_amax = floats_ptr(amax_in);
  mxq::QuantizeSizes sizes;
  check(mxq::quantize_sizes(a, &sizes));  // every argument checked before anything is allocated

  const mxq::torch_shapes::QuantizeShapes s = mxq::torch_shapes::quantize_shapes(
      a.params, in.batched, in.view.batch, in.view.rows, in.view.cols, G, a.groups.pad_rowwise, a.groups.pad_colwise);
  std::vector<Tensor> outs;
  outs.reserve(9);
  a.out = quantize_outputs(op, a.params, sizes, s, in.x, outs);
  if (with_amax) {
    outs.push_back(new_output(Shape{in.view.batch}, at::kFloat, in.x));
    a.out.amax = outs.back().data_ptr<float>();
  }
  a.backend = exec.backend;
  a.stream = exec.stream;
  check(mxq::quantize(a));
  return outs;
}

mxq::SwigluParams parse_swiglu(const char* op, c10::string_view variant, c10::string_view layout, double alpha,
                               double limit) {
  mxq::SwigluParams p;
  const std::string_view v = view_of(variant), l = view_of(layout);
  TORCH_CHECK_VALUE(v == "silu" || v == "clamped", op, ": variant must be one of ['clamped', 'silu'] (got '", v, "')");
  TORCH_CHECK_VALUE(l == "concatenated" || l == "interleaved", op,
                    ": layout must be one of ['concatenated', 'interleaved'] (got '", l, "')");
  p.variant = v == "silu" ? mxq::SwigluVariant::silu : mxq::SwigluVariant::clamped;
  p.layout = l == "concatenated" ? mxq::SwigluLayout::concatenated : mxq::SwigluLayout::interleaved;
  p.alpha = static_cast<float>(alpha);
  p.limit = static_cast<float>(limit);
  return p;
}

// What the forward and the backward share: h, the quantize arguments of the computed tensor, the
// weights; `cols` is the computed tensor's width (F forward, 2F backward).
template <class Args>
std::vector<Tensor> swiglu_common(const char* op, Args& a, const Input& in, const Exec& exec, int64_t cols,
                                  c10::string_view format, c10::string_view direction, c10::string_view scale_rule,
                                  c10::string_view scale_layout, const OptTensor& group_ends, int64_t pad_rowwise,
                                  int64_t pad_colwise, const OptTensor& tensor_amax, const OptTensor& weights,
                                  bool keep_computed, Tensor* computed, Tensor* weights_arg) {
  TORCH_CHECK_VALUE(!in.batched, op, ": h must be 2-D (M, 2F)");
  a.params = parse_params(op, format, direction, scale_rule, scale_layout);
  const auto [ends, G] = group_ends_arg(op, group_ends, in.x);
  const Tensor amax_in = batch_floats_arg(op, "tensor_amax", tensor_amax, 1, in.x);
  if (weights.has_value()) {
    *weights_arg = vector_arg(op, "weights", *weights, at::kFloat, in.x);
    TORCH_CHECK_VALUE(weights_arg->size(0) == in.view.rows, op, ": weights has ", weights_arg->size(0),
                      " elements but h has ", in.view.rows, " rows (one weight per row)");
  }
  a.input = in.view;
  a.weights = floats_ptr(*weights_arg);
  a.groups.groups = {ends_ptr(ends), G};
  a.groups.pad_rowwise = as_int32(op, "pad_rowwise", pad_rowwise);
  a.groups.pad_colwise = as_int32(op, "pad_colwise", pad_colwise);
  a.tensor_amax = floats_ptr(amax_in);
  mxq::QuantizeSizes sizes;
  if constexpr (std::is_same_v<Args, mxq::SwigluArgs>) {
    check(mxq::swiglu_quantize_sizes(a, &sizes));
  } else {
    check(mxq::swiglu_backward_quantize_sizes(a, &sizes));
  }
  const mxq::torch_shapes::QuantizeShapes s = mxq::torch_shapes::quantize_shapes(
      a.params, false, 1, in.view.rows, cols, G, a.groups.pad_rowwise, a.groups.pad_colwise);
  std::vector<Tensor> outs;
  outs.reserve(10);
  a.out = quantize_outputs(op, a.params, sizes, s, in.x, outs);
  a.backend = exec.backend;
  a.stream = exec.stream;
  // The computed tensor: when the caller keeps it, or where the backend needs it to quantize.
  if (keep_computed || mxq::swiglu_needs_computed(a, exec.backend))
    *computed = new_output(Shape{in.view.rows, cols}, in.x.scalar_type(), in.x);
  return outs;
}

// The quantize outputs of a = swiglu(h) the call produces (quantize_outputs' order), then a when
// kept.
std::vector<Tensor> swiglu_quantize(const Tensor& h, c10::string_view format, c10::string_view direction,
                                    c10::string_view scale_rule, c10::string_view scale_layout,
                                    const OptTensor& group_ends, int64_t pad_rowwise, int64_t pad_colwise,
                                    const OptTensor& tensor_amax, const OptTensor& weights, c10::string_view variant,
                                    c10::string_view layout, double alpha, double limit, bool keep_computed) {
  const char* op = "swiglu_quantize";
  mxq::SwigluArgs a;
  a.swiglu = parse_swiglu(op, variant, layout, alpha, limit);
  const Input in = input_view(op, h);
  Exec exec(op, in.x);
  Tensor act, w;
  std::vector<Tensor> outs =
      swiglu_common(op, a, in, exec, in.view.cols / 2, format, direction, scale_rule, scale_layout, group_ends,
                    pad_rowwise, pad_colwise, tensor_amax, weights, keep_computed, &act, &w);
  a.activation = act.defined() ? act.data_ptr() : nullptr;
  check(mxq::swiglu_quantize(a));
  if (keep_computed) outs.push_back(act);
  return outs;
}

// The quantize outputs of dh the call produces, then dh when kept, then the weights' gradient with
// weights.
std::vector<Tensor> swiglu_backward_quantize(const Tensor& grad, const Tensor& h, c10::string_view format,
                                             c10::string_view direction, c10::string_view scale_rule,
                                             c10::string_view scale_layout, const OptTensor& group_ends,
                                             int64_t pad_rowwise, int64_t pad_colwise, const OptTensor& tensor_amax,
                                             const OptTensor& weights, c10::string_view variant,
                                             c10::string_view layout, double alpha, double limit,
                                             bool keep_computed) {
  const char* op = "swiglu_backward_quantize";
  mxq::SwigluBackwardArgs a;
  a.swiglu = parse_swiglu(op, variant, layout, alpha, limit);
  const Input in = input_view(op, h);
  Exec exec(op, in.x);
  same_device(op, "grad", grad, in.x);
  const Input g = input_view(op, grad);
  a.grad = g.view;
  Tensor dh, w;
  std::vector<Tensor> outs = swiglu_common(op, a, in, exec, in.view.cols, format, direction, scale_rule, scale_layout,
                                           group_ends, pad_rowwise, pad_colwise, tensor_amax, weights,
                                           keep_computed, &dh, &w);
  a.grad_input = dh.defined() ? dh.data_ptr() : nullptr;
  Tensor gw;
  if (w.defined()) {
    gw = new_output(Shape{in.view.rows}, at::kFloat, in.x);
    a.grad_weights = gw.data_ptr<float>();
  }
  check(mxq::swiglu_backward_quantize(a));
  if (keep_computed) outs.push_back(dh);
  if (gw.defined()) outs.push_back(gw);
  return outs;
}

std::optional<mxq::DType> out_dtype_of(at::ScalarType t) {
  const std::optional<mxq::DType> d = dtype_of(t);
  return d && *d != mxq::DType::u8 ? d : std::nullopt;
}

Tensor dequantize(const Tensor& data, const Tensor& scales, const OptTensor& s_dec, c10::SymIntArrayRef shape,
                  c10::string_view format, c10::string_view direction, c10::string_view scale_rule,
                  c10::string_view scale_layout, const OptTensor& group_ends, int64_t pad_rowwise, int64_t pad_colwise,
                  at::ScalarType out_dtype) {
  const char* op = "dequantize";
  mxq::DequantizeArgs a;
  a.params = parse_params(op, format, direction, scale_rule, scale_layout);
  TORCH_CHECK_VALUE(a.params.direction != mxq::Direction::both, op,
                    ": direction must be 'rowwise' or 'colwise' for dequantize (got 'both')");
  const std::optional<mxq::DType> out_code = out_dtype_of(out_dtype);
  TORCH_CHECK_VALUE(out_code.has_value(), op,
                    ": out_dtype must be torch.float32, torch.float16 or torch.bfloat16 (got ", out_dtype, ")");
  TORCH_CHECK_VALUE(shape.size() == 2 || shape.size() == 3, op, ": shape must be (M, K) or (B, M, K) (got ", shape,
                    ")");
  const bool batched = shape.size() == 3;
  a.batch = batched ? shape[0].expect_int() : 1;
  a.rows = shape[shape.size() - 2].expect_int();
  a.cols = shape.back().expect_int();
  Exec exec(op, data);
  same_device(op, "scales", scales, data);
  const Tensor d = data.contiguous(), sc = scales.contiguous();
  const auto [ends, G] = group_ends_arg(op, group_ends, data);
  const Tensor sdec = batch_floats_arg(op, "s_dec", s_dec, a.batch, data);
  a.groups.groups = {ends_ptr(ends), G};
  a.groups.pad_rowwise = as_int32(op, "pad_rowwise", pad_rowwise);
  a.groups.pad_colwise = as_int32(op, "pad_colwise", pad_colwise);
  // The data and scale sizes are the one thing the library cannot check: they must be exactly what
  // quantize wrote for these arguments.
  const mxq::torch_shapes::QuantizeShapes q = mxq::torch_shapes::quantize_shapes(
      a.params, batched, a.batch, a.rows, a.cols, G, a.groups.pad_rowwise, a.groups.pad_colwise);
  const size_t i = a.params.direction == mxq::Direction::rowwise ? 0 : 2;
  if (q.outputs[i]) expect_bytes(op, "data", d, *q.outputs[i]);
  if (q.outputs[i + 1]) expect_bytes(op, "scales", sc, *q.outputs[i + 1]);
  a.data = d.const_data_ptr();
  a.scales = static_cast<const uint8_t*>(sc.const_data_ptr());
  a.s_dec = floats_ptr(sdec);
  a.out_dtype = *out_code;
  a.backend = exec.backend;
  a.stream = exec.stream;
  int64_t elements = 0;
  check(mxq::dequantize_size(a, &elements));
  const Shape out_shape = mxq::torch_shapes::dequantize_shape(a.params.direction, batched, a.batch, a.rows, a.cols, G,
                                                              a.groups.pad_rowwise, a.groups.pad_colwise);
  expect_numel(op, "output", out_shape, elements);
  Tensor out = new_output(out_shape, out_dtype, data);
  a.out = out.data_ptr();
  check(mxq::dequantize(a));
  return out;
}

Tensor tensor_amax(const Tensor& x) {
  const char* op = "tensor_amax";
  const Input in = input_view(op, x);
  Exec exec(op, in.x);
  Tensor out = new_output(Shape{in.view.batch}, at::kFloat, in.x);
  check(mxq::tensor_amax(in.view, out.data_ptr<float>(), exec.backend, exec.stream));
  return out;
}

const Input& check_2d(const char* op, const Input& in) {
  TORCH_CHECK_VALUE(!in.batched, op, ": takes a 2-D tensor (got shape ", in.x.sizes(), ")");
  return in;
}

std::tuple<Tensor, Tensor, Tensor, Tensor> pad(const Tensor& x, const Tensor& group_ends, int64_t alignment,
                                               bool with_amax) {
  const char* op = "pad";
  const Input in = check_2d(op, input_view(op, x));
  Exec exec(op, in.x);
  const auto [ends, G] = group_ends_arg(op, group_ends, in.x);
  mxq::PadArgs a;
  a.input = in.view;
  a.groups = {ends_ptr(ends), G};
  a.alignment = as_int32(op, "alignment", alignment);
  a.backend = exec.backend;
  a.stream = exec.stream;
  int64_t rows = 0;
  check(mxq::pad_rows(a, &rows));
  Tensor out = new_output(Shape{rows, in.view.cols}, x.scalar_type(), in.x);
  Tensor starts = new_output(Shape{G}, at::kInt, in.x), pends = new_output(Shape{G}, at::kInt, in.x);
  Tensor amax = new_output(Shape{with_amax ? 1 : 0}, at::kFloat, in.x);
  a.out = out.data_ptr();
  a.padded_starts = starts.data_ptr<int32_t>();
  a.padded_ends = pends.data_ptr<int32_t>();
  a.amax = with_amax ? amax.data_ptr<float>() : nullptr;
  check(mxq::pad(a));
  return {out, starts, pends, amax};
}

std::tuple<Tensor, Tensor> unpad(const Tensor& x, const Tensor& group_ends, int64_t alignment, c10::SymInt rows,
                                 bool with_amax) {
  const char* op = "unpad";
  const Input in = check_2d(op, input_view(op, x));
  Exec exec(op, in.x);
  const auto [ends, G] = group_ends_arg(op, group_ends, in.x);
  mxq::UnpadArgs a;
  a.input = in.view;
  a.groups = {ends_ptr(ends), G};
  a.alignment = as_int32(op, "alignment", alignment);
  a.rows = rows.expect_int();
  TORCH_CHECK_VALUE(a.rows >= 0, op, ": rows (", a.rows, ") must be >= 0");
  Tensor out = new_output(Shape{a.rows, in.view.cols}, x.scalar_type(), in.x);
  Tensor amax = new_output(Shape{with_amax ? 1 : 0}, at::kFloat, in.x);
  a.out = out.data_ptr();
  a.amax = with_amax ? amax.data_ptr<float>() : nullptr;
  a.backend = exec.backend;
  a.stream = exec.stream;
  check(mxq::unpad(a));
  return {out, amax};
}

// Swizzle's (batch, rows, cols) from a 2-D or 3-D shape.
void swizzle_dims(const char* op, c10::IntArrayRef shape, mxq::SwizzleArgs* a) {
  TORCH_CHECK_VALUE(shape.size() == 2 || shape.size() == 3, op, ": scales must be (R, C) or (B, R, C) (got ", shape,
                    ")");
  for (int64_t d : shape) TORCH_CHECK_VALUE(d >= 0, op, ": shape ", shape, " has a negative dimension");
  a->batch = shape.size() == 3 ? shape[0] : 1;
  a->rows = shape[shape.size() - 2];
  a->cols = shape.back();
}

Tensor swizzle(const Tensor& scales, const OptTensor& group_ends, c10::string_view group_axis) {
  const char* op = "swizzle";
  mxq::SwizzleArgs a;
  a.group_axis = parse_group_axis(op, group_axis);
  swizzle_dims(op, scales.sizes(), &a);
  Exec exec(op, scales);
  const Tensor in = scales.contiguous();
  TORCH_CHECK_VALUE(in.element_size() == 1, op, ": scales must have a one-byte dtype (got ", in.scalar_type(), ")");
  const auto [ends, G] = group_ends_arg(op, group_ends, in);
  a.in = static_cast<const uint8_t*>(in.const_data_ptr());
  a.groups = {ends_ptr(ends), G};
  a.backend = exec.backend;
  a.stream = exec.stream;
  int64_t bytes = 0;
  check(mxq::swizzle_size(a, &bytes));
  const Shape shape = mxq::torch_shapes::swizzle_shape(scales.dim() == 3, a.batch, a.rows, a.cols, a.group_axis, G);
  expect_numel(op, "output", shape, bytes);
  Tensor out = new_output(shape, in.scalar_type(), in);
  a.out = static_cast<uint8_t*>(out.data_ptr());
  check(mxq::swizzle(a));
  return out;
}

Tensor unswizzle(const Tensor& blocked, c10::SymIntArrayRef shape, const OptTensor& group_ends,
                 c10::string_view group_axis) {
  const char* op = "unswizzle";
  mxq::SwizzleArgs a;
  a.group_axis = parse_group_axis(op, group_axis);
  const c10::IntArrayRef dims = C10_AS_INTARRAYREF_SLOW(shape);
  swizzle_dims(op, dims, &a);
  Exec exec(op, blocked);
  const Tensor in = blocked.contiguous();
  TORCH_CHECK_VALUE(in.element_size() == 1, op, ": blocked scales must have a one-byte dtype (got ", in.scalar_type(),
                    ")");
  const auto [ends, G] = group_ends_arg(op, group_ends, in);
  a.groups = {ends_ptr(ends), G};
  a.backend = exec.backend;
  a.stream = exec.stream;
  expect_bytes(op, "blocked scales", in,
               mxq::torch_shapes::swizzle_shape(dims.size() == 3, a.batch, a.rows, a.cols, a.group_axis, G));
  Tensor out = new_output(Shape(dims.begin(), dims.end()), in.scalar_type(), in);
  a.out = static_cast<uint8_t*>(const_cast<void*>(in.const_data_ptr()));  // read only: unswizzle's input
  check(mxq::unswizzle(a, static_cast<uint8_t*>(out.data_ptr())));
  return out;
}

}  // namespace

TORCH_LIBRARY(mxq, m) {
  m.def(
      "quantize(Tensor x, str format, str direction, str scale_rule, str scale_layout, Tensor? group_ends, "
      "int pad_rowwise, int pad_colwise, Tensor? tensor_amax, bool with_amax=False) -> Tensor[]");
  m.def(
      "dequantize(Tensor data, Tensor scales, Tensor? s_dec, SymInt[] shape, str format, str direction, "
      "str scale_rule, str scale_layout, Tensor? group_ends, int pad_rowwise, int pad_colwise, "
      "ScalarType out_dtype) -> Tensor");
  m.def(
      "swiglu_quantize(Tensor h, str format, str direction, str scale_rule, str scale_layout, Tensor? group_ends, "
      "int pad_rowwise, int pad_colwise, Tensor? tensor_amax, Tensor? weights, str variant, str layout, "
      "float alpha, float limit, bool keep_computed=False) -> Tensor[]");
  m.def(
      "swiglu_backward_quantize(Tensor grad, Tensor h, str format, str direction, str scale_rule, str scale_layout, "
      "Tensor? group_ends, int pad_rowwise, int pad_colwise, Tensor? tensor_amax, Tensor? weights, str variant, "
      "str layout, float alpha, float limit, bool keep_computed=False) -> Tensor[]");
  m.def("tensor_amax(Tensor x) -> Tensor");
  m.def("pad(Tensor x, Tensor group_ends, int alignment, bool with_amax) -> (Tensor, Tensor, Tensor, Tensor)");
  m.def("unpad(Tensor x, Tensor group_ends, int alignment, SymInt rows, bool with_amax) -> (Tensor, Tensor)");
  m.def("swizzle(Tensor scales, Tensor? group_ends, str group_axis) -> Tensor");
  m.def("unswizzle(Tensor blocked, SymInt[] shape, Tensor? group_ends, str group_axis) -> Tensor");
}

#define MXQ_TORCH_IMPLS(m)                                       \
  m.impl("quantize", &quantize);                                 \
  m.impl("dequantize", &dequantize);                             \
  m.impl("tensor_amax", &tensor_amax);                           \
  m.impl("swiglu_quantize", &swiglu_quantize);                   \
  m.impl("swiglu_backward_quantize", &swiglu_backward_quantize); \
  m.impl("pad", &pad);                                           \
  m.impl("unpad", &unpad);                                       \
  m.impl("swizzle", &swizzle);                                   \
  m.impl("unswizzle", &unswizzle)

TORCH_LIBRARY_IMPL(mxq, CPU, m) { MXQ_TORCH_IMPLS(m); }
#ifdef MXQ_TORCH_CUDA
TORCH_LIBRARY_IMPL(mxq, CUDA, m) { MXQ_TORCH_IMPLS(m); }
#endif

// Importing mxq._torch_ops registers the operators above; the module itself is empty.
PyMODINIT_FUNC PyInit__torch_ops(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT,
                               "_torch_ops",
                               "mxq's native torch operators",
                               -1,
                               nullptr,
                               nullptr,
                               nullptr,
                               nullptr,
                               nullptr};
  return PyModule_Create(&module);
}
