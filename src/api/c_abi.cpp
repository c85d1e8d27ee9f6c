// The C ABI (include/mxq/mxq.h): converts each C struct to its C++ counterpart and forwards to the
// C++ API, which does all validation. Errors are kept per thread for mxq_last_error().
#include <mxq/mxq.h>

#include <exception>
#include <string>

#include <mxq/mxq.hpp>

namespace {

using namespace mxq;

thread_local std::string last_error;

int32_t fail(Code code, std::string message) {
  last_error = std::move(message);
  return static_cast<int32_t>(code);
}

// Runs one C++ call, keeping its message on failure and never letting an exception cross the ABI.
template <class Call>
int32_t run(const char* fn, Call&& call) {
  try {
    const Status s = call();
    return s.ok() ? MXQ_OK : fail(s.code(), s.message());
  } catch (const std::exception& e) {
    return fail(Code::invalid_argument, std::string(fn) + ": unexpected exception: " + e.what());
  }
}

int32_t null_arg(const char* fn, const char* arg) {
  return fail(Code::invalid_argument, std::string(fn) + ": " + arg + " is null");
}

TensorView to_cpp(const mxq_tensor_view& v) {
  TensorView t;
  t.data = v.data;
  t.dtype = static_cast<DType>(v.dtype);
  t.batch = v.batch;
  t.rows = v.rows;
  t.cols = v.cols;
  t.row_stride = v.row_stride;
  t.batch_stride = v.batch_stride;
  return t;
}

TokenGroups to_cpp(const mxq_token_groups& g) { return {g.ends, g.count}; }

QuantizeParams params(int32_t format, int32_t rule, int32_t layout, int32_t direction) {
  return {static_cast<Format>(format), static_cast<ScaleRule>(rule), static_cast<ScaleLayout>(layout),
          static_cast<Direction>(direction)};
}

QuantizeGroups quantize_groups(const mxq_token_groups& g, int32_t pad_rowwise, int32_t pad_colwise) {
  return {to_cpp(g), pad_rowwise, pad_colwise};
}

QuantizeArgs to_cpp(const mxq_quantize_args& a) {
  QuantizeArgs q;
  q.input = to_cpp(a.input);
  q.params = params(a.format, a.rule, a.layout, a.direction);
  q.groups = quantize_groups(a.groups, a.pad_rowwise, a.pad_colwise);
  q.tensor_amax = a.tensor_amax;
  q.out = {a.row_data, a.row_scales,    a.col_data,    a.col_scales, a.s_enc,
           a.s_dec,    a.padded_starts, a.padded_ends, a.amax};
  q.backend = static_cast<Backend>(a.backend);
  q.stream = a.stream;
  return q;
}

SwigluParams to_cpp(const mxq_swiglu_params& p) {
  return {static_cast<SwigluVariant>(p.variant), static_cast<SwigluLayout>(p.layout), p.alpha, p.limit};
}

// The fields a SwiGLU call shares with the quantize call its C struct embeds.
template <class Args, class CArgs>
Args swiglu_common(const CArgs& a) {
  const QuantizeArgs q = to_cpp(a.quantize);
  Args s;
  s.input = q.input;
  s.swiglu = to_cpp(a.swiglu);
  s.weights = a.weights;
  s.params = q.params;
  s.groups = q.groups;
  s.tensor_amax = q.tensor_amax;
  s.out = q.out;
  s.backend = q.backend;
  s.stream = q.stream;
  return s;
}

SwigluArgs to_cpp(const mxq_swiglu_args& a) {
  SwigluArgs s = swiglu_common<SwigluArgs>(a);
  s.activation = a.activation;
  return s;
}

SwigluBackwardArgs to_cpp(const mxq_swiglu_backward_args& a) {
  SwigluBackwardArgs s = swiglu_common<SwigluBackwardArgs>(a);
  s.grad = to_cpp(a.grad);
  s.grad_input = a.grad_input;
  s.grad_weights = a.grad_weights;
  return s;
}

struct mxq_quantize_sizes to_c(const QuantizeSizes& s) {
  return {s.row_data_rows,  s.col_data_cols,   s.row_data_bytes,     s.row_scale_bytes,
          s.col_data_bytes, s.col_scale_bytes, s.tensor_scale_count, s.padded_offset_count};
}

DequantizeArgs to_cpp(const mxq_dequantize_args& a) {
  DequantizeArgs d;
  d.params = params(a.format, a.rule, a.layout, a.direction);
  d.batch = a.batch;
  d.rows = a.rows;
  d.cols = a.cols;
  d.groups = quantize_groups(a.groups, a.pad_rowwise, a.pad_colwise);
  d.data = a.data;
  d.scales = a.scales;
  d.s_dec = a.s_dec;
  d.out = a.out;
  d.out_dtype = static_cast<DType>(a.out_dtype);
  d.backend = static_cast<Backend>(a.backend);
  d.stream = a.stream;
  return d;
}

PadArgs to_cpp(const mxq_pad_args& a) {
  PadArgs p;
  p.input = to_cpp(a.input);
  p.groups = to_cpp(a.groups);
  p.alignment = a.alignment;
  p.out = a.out;
  p.padded_starts = a.padded_starts;
  p.padded_ends = a.padded_ends;
  p.amax = a.amax;
  p.backend = static_cast<Backend>(a.backend);
  p.stream = a.stream;
  return p;
}

UnpadArgs to_cpp(const mxq_unpad_args& a) {
  UnpadArgs u;
  u.input = to_cpp(a.input);
  u.groups = to_cpp(a.groups);
  u.alignment = a.alignment;
  u.rows = a.rows;
  u.out = a.out;
  u.amax = a.amax;
  u.backend = static_cast<Backend>(a.backend);
  u.stream = a.stream;
  return u;
}

SwizzleArgs to_cpp(const mxq_swizzle_args& a) {
  SwizzleArgs s;
  s.in = a.in;
  s.batch = a.batch;
  s.rows = a.rows;
  s.cols = a.cols;
  s.group_axis = static_cast<ScaleGroups>(a.group_axis);
  s.groups = to_cpp(a.groups);
  s.out = a.out;
  s.backend = static_cast<Backend>(a.backend);
  s.stream = a.stream;
  return s;
}

// A sizes query of the C++ API (args -> QuantizeSizes) behind its C function `fn`.
template <class CArgs, class CppArgs>
int32_t sizes_call(const char* fn, const CArgs* args, struct mxq_quantize_sizes* sizes,
                   Status (*query)(const CppArgs&, QuantizeSizes*)) {
  if (!args) return null_arg(fn, "args");
  if (!sizes) return null_arg(fn, "sizes");
  return run(fn, [&] {
    QuantizeSizes s;
    Status st = query(to_cpp(*args), &s);
    if (st.ok()) *sizes = to_c(s);
    return st;
  });
}

}  // namespace

extern "C" {

int32_t mxq_quantize(const mxq_quantize_args* args) {
  if (!args) return null_arg("mxq_quantize", "args");
  return run("mxq_quantize", [&] { return quantize(to_cpp(*args)); });
}

int32_t mxq_quantize_sizes(const mxq_quantize_args* args, struct mxq_quantize_sizes* sizes) {
  return sizes_call("mxq_quantize_sizes", args, sizes, &quantize_sizes);
}

int32_t mxq_swiglu_quantize(const mxq_swiglu_args* args) {
  if (!args) return null_arg("mxq_swiglu_quantize", "args");
  return run("mxq_swiglu_quantize", [&] { return swiglu_quantize(to_cpp(*args)); });
}

int32_t mxq_swiglu_quantize_sizes(const mxq_swiglu_args* args, struct mxq_quantize_sizes* sizes) {
  return sizes_call("mxq_swiglu_quantize_sizes", args, sizes, &swiglu_quantize_sizes);
}

int32_t mxq_swiglu_backward_quantize(const mxq_swiglu_backward_args* args) {
  if (!args) return null_arg("mxq_swiglu_backward_quantize", "args");
  return run("mxq_swiglu_backward_quantize", [&] { return swiglu_backward_quantize(to_cpp(*args)); });
}

int32_t mxq_swiglu_backward_quantize_sizes(const mxq_swiglu_backward_args* args, struct mxq_quantize_sizes* sizes) {
  return sizes_call("mxq_swiglu_backward_quantize_sizes", args, sizes, &swiglu_backward_quantize_sizes);
}

int32_t mxq_dequantize(const mxq_dequantize_args* args) {
  if (!args) return null_arg("mxq_dequantize", "args");
  return run("mxq_dequantize", [&] { return dequantize(to_cpp(*args)); });
}

int32_t mxq_dequantize_size(const mxq_dequantize_args* args, int64_t* out_elements) {
  if (!args) return null_arg("mxq_dequantize_size", "args");
  return run("mxq_dequantize_size", [&] { return dequantize_size(to_cpp(*args), out_elements); });
}

int32_t mxq_tensor_amax(const mxq_tensor_view* input, float* out, int32_t backend, void* stream) {
  if (!input) return null_arg("mxq_tensor_amax", "input");
  return run("mxq_tensor_amax",
             [&] { return tensor_amax(to_cpp(*input), out, static_cast<Backend>(backend), stream); });
}

int32_t mxq_pad(const mxq_pad_args* args) {
  if (!args) return null_arg("mxq_pad", "args");
  return run("mxq_pad", [&] { return pad(to_cpp(*args)); });
}

int32_t mxq_pad_rows(const mxq_pad_args* args, int64_t* rows) {
  if (!args) return null_arg("mxq_pad_rows", "args");
  return run("mxq_pad_rows", [&] { return pad_rows(to_cpp(*args), rows); });
}

int32_t mxq_unpad(const mxq_unpad_args* args) {
  if (!args) return null_arg("mxq_unpad", "args");
  return run("mxq_unpad", [&] { return unpad(to_cpp(*args)); });
}

int32_t mxq_swizzle(const mxq_swizzle_args* args) {
  if (!args) return null_arg("mxq_swizzle", "args");
  return run("mxq_swizzle", [&] { return swizzle(to_cpp(*args)); });
}

int32_t mxq_swizzle_size(const mxq_swizzle_args* args, int64_t* bytes) {
  if (!args) return null_arg("mxq_swizzle_size", "args");
  return run("mxq_swizzle_size", [&] { return swizzle_size(to_cpp(*args), bytes); });
}

int32_t mxq_unswizzle(const mxq_swizzle_args* args, uint8_t* linear_out) {
  if (!args) return null_arg("mxq_unswizzle", "args");
  return run("mxq_unswizzle", [&] { return unswizzle(to_cpp(*args), linear_out); });
}

int32_t mxq_validate_group_ends(const mxq_token_groups* groups, int64_t M, int32_t backend, void* stream) {
  if (!groups) return null_arg("mxq_validate_group_ends", "groups");
  return run("mxq_validate_group_ends",
             [&] { return validate_group_ends(to_cpp(*groups), M, static_cast<Backend>(backend), stream); });
}

const char* mxq_version_string(void) { return version(); }

int32_t mxq_abi_version(void) { return MXQ_ABI_VERSION; }

int32_t mxq_cuda_available(void) { return cuda_available() ? 1 : 0; }

const char* mxq_last_error(void) { return last_error.c_str(); }

}  // extern "C"
