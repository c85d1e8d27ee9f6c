#include "bench_plan.hpp"

#include <utility>

#include "random_normal.hpp"

namespace mxq::bench {
namespace {

constexpr uint64_t kInputSeed = 0x6D78715F62656E63ull;
// A plausible delayed-scaling amax for standard normal inputs (their max over 1e9 values is ~6).
constexpr float kGivenAmax = 8.0f;

int64_t tensor_bytes(const BenchCase& c, DType t) { return c.batch * c.rows * c.cols * dtype_size(t); }

DeviceBuffer random_buffer(BenchDevice& device, DType t, int64_t count) {
  DeviceBuffer buffer(device, count * dtype_size(t));
  device.fill_normal(buffer.get(), t, count, kInputSeed);
  return buffer;
}

void* keep(OpPlan& plan, DeviceBuffer&& buffer) {
  plan.buffers.push_back(std::move(buffer));
  return plan.buffers.back().get();
}

// A random input of `count` elements of t, counted as read.
void* input(OpPlan& plan, BenchDevice& device, DType t, int64_t count) {
  plan.bytes_read += count * dtype_size(t);
  return keep(plan, random_buffer(device, t, count));
}

// An output buffer, counted as written: every op writes all bytes of its outputs.
void* output(OpPlan& plan, BenchDevice& device, int64_t bytes) {
  plan.bytes_written += bytes;
  return keep(plan, DeviceBuffer(device, bytes));
}

template <class T>
T* upload(OpPlan& plan, BenchDevice& device, const std::vector<T>& host) {
  const int64_t bytes = static_cast<int64_t>(host.size() * sizeof(T));
  void* p = keep(plan, DeviceBuffer(device, bytes));
  device.upload(p, host.data(), bytes);
  plan.bytes_read += bytes;
  return static_cast<T*>(p);
}

TokenGroups group_ends(OpPlan& plan, BenchDevice& device, const BenchCase& c) {
  if (c.groups == 0) return {};
  return {upload(plan, device, jagged_group_ends(c.rows, c.groups, c.group_multiple)), c.groups};
}

TensorView view(const BenchCase& c, const void* data, DType t) {
  TensorView v;
  v.data = data;
  v.dtype = t;
  v.batch = c.batch;
  v.rows = c.rows;
  v.cols = c.cols;
  return v;
}

// nvfp4 with the amax given: the caller's tensor amax, uploaded (counted as read); else null.
const float* given_amax(const BenchCase& c, BenchDevice& device, OpPlan& plan) {
  if (c.format != Format::nvfp4 || !c.amax_given) return nullptr;
  return upload(plan, device, std::vector<float>(c.batch, kGivenAmax));
}

// Every output buffer of a quantize of `sizes` (and the amax output where the case asks for it).
QuantizeOutputs allocate_outputs(const BenchCase& c, const QuantizeSizes& sizes, BenchDevice& device, OpPlan& plan) {
  QuantizeOutputs o;
  o.row_data = output(plan, device, sizes.row_data_bytes);
  o.row_scales = static_cast<uint8_t*>(output(plan, device, sizes.row_scale_bytes));
  o.col_data = output(plan, device, sizes.col_data_bytes);
  o.col_scales = static_cast<uint8_t*>(output(plan, device, sizes.col_scale_bytes));
  const int64_t scale_bytes = sizes.tensor_scale_count * int64_t{sizeof(float)};
  o.s_enc = static_cast<float*>(output(plan, device, scale_bytes));
  o.s_dec = static_cast<float*>(output(plan, device, scale_bytes));
  const int64_t offset_bytes = sizes.padded_offset_count * int64_t{sizeof(int32_t)};
  o.padded_starts = static_cast<int32_t*>(output(plan, device, offset_bytes));
  o.padded_ends = static_cast<int32_t*>(output(plan, device, offset_bytes));
  if (c.amax_out) o.amax = static_cast<float*>(output(plan, device, c.batch * int64_t{sizeof(float)}));
  return o;
}

// Quantize arguments for `c` with `direction` over `input`, outputs allocated.
Status setup_quantize(const BenchCase& c, Direction direction, const void* input, DType input_dtype,
                      BenchDevice& device, OpPlan& plan, QuantizeArgs* args, QuantizeSizes* sizes) {
  args->input = view(c, input, input_dtype);
  args->params = {c.format, c.rule, c.layout, direction};
  args->groups = {group_ends(plan, device, c), c.pad_rowwise, c.pad_colwise};
  args->backend = device.backend();
  args->stream = device.stream();
  args->tensor_amax = given_amax(c, device, plan);
  Status st = quantize_sizes(*args, sizes);
  if (!st.ok()) return st;
  args->out = allocate_outputs(c, *sizes, device, plan);
  return Status();
}

Status plan_quantize(const BenchCase& c, BenchDevice& device, OpPlan* plan) {
  const void* x = input(*plan, device, c.dtype, c.batch * c.rows * c.cols);
  QuantizeArgs args;
  QuantizeSizes sizes;
  Status st = setup_quantize(c, c.direction, x, c.dtype, device, *plan, &args, &sizes);
  if (!st.ok()) return st;
  plan->call = [args] { return quantize(args); };
  return Status();
}

// Quantizes a bf16 input once (untimed), then times dequantize of that one direction.
Status plan_dequantize(const BenchCase& c, BenchDevice& device, OpPlan* plan) {
  QuantizeArgs q;
  QuantizeSizes sizes;
  {
    DeviceBuffer source = random_buffer(device, DType::bf16, c.batch * c.rows * c.cols);
    Status st = setup_quantize(c, c.direction, source.get(), DType::bf16, device, *plan, &q, &sizes);
    if (st.ok()) st = quantize(q);
    if (!st.ok()) return st;
    device.synchronize();
  }
  const bool rowwise = c.direction == Direction::rowwise;
  DequantizeArgs d;
  d.params = q.params;
  d.batch = c.batch;
  d.rows = c.rows;
  d.cols = c.cols;
  d.groups = q.groups;
  d.data = rowwise ? q.out.row_data : q.out.col_data;
  d.scales = rowwise ? q.out.row_scales : q.out.col_scales;
  d.s_dec = q.out.s_dec;
  d.out_dtype = c.dtype;
  d.backend = device.backend();
  d.stream = device.stream();
  int64_t out_elements = 0;
  Status st = dequantize_size(d, &out_elements);
  if (!st.ok()) return st;
  // Only what dequantize reads and writes counts, not the setup quantize's outputs.
  plan->bytes_read =
      (rowwise ? sizes.row_data_bytes + sizes.row_scale_bytes : sizes.col_data_bytes + sizes.col_scale_bytes) +
      sizes.tensor_scale_count * int64_t{sizeof(float)} + c.groups * int64_t{sizeof(int32_t)};
  plan->bytes_written = 0;
  d.out = output(*plan, device, out_elements * dtype_size(c.dtype));
  plan->call = [d] { return dequantize(d); };
  return Status();
}

Status plan_pad(const BenchCase& c, BenchDevice& device, OpPlan* plan) {
  PadArgs a;
  a.input = view(c, input(*plan, device, c.dtype, c.rows * c.cols), c.dtype);
  a.groups = group_ends(*plan, device, c);
  a.alignment = c.alignment;
  a.backend = device.backend();
  a.stream = device.stream();
  int64_t out_rows = 0;
  Status st = pad_rows(a, &out_rows);
  if (!st.ok()) return st;
  a.out = output(*plan, device, out_rows * c.cols * dtype_size(c.dtype));
  const int64_t offset_bytes = c.groups * int64_t{sizeof(int32_t)};
  a.padded_starts = static_cast<int32_t*>(output(*plan, device, offset_bytes));
  a.padded_ends = static_cast<int32_t*>(output(*plan, device, offset_bytes));
  if (c.amax_out) a.amax = static_cast<float*>(output(*plan, device, sizeof(float)));
  plan->call = [a] { return pad(a); };
  return Status();
}

// The input is a padded tensor; only its group rows are read, so they alone count.
Status plan_unpad(const BenchCase& c, BenchDevice& device, OpPlan* plan) {
  UnpadArgs u;
  u.out = output(*plan, device, tensor_bytes(c, c.dtype));
  // The padded tensor is what pad makes of a tensor shaped like the output.
  PadArgs pad_of_output;
  pad_of_output.input = view(c, u.out, c.dtype);
  pad_of_output.groups = group_ends(*plan, device, c);
  pad_of_output.alignment = c.alignment;
  int64_t padded_rows = 0;
  Status st = pad_rows(pad_of_output, &padded_rows);
  if (!st.ok()) return st;
  u.input = view(c, keep(*plan, random_buffer(device, c.dtype, padded_rows * c.cols)), c.dtype);
  u.input.rows = padded_rows;
  plan->bytes_read += tensor_bytes(c, c.dtype);
  u.groups = pad_of_output.groups;
  u.alignment = c.alignment;
  u.rows = c.rows;
  u.backend = device.backend();
  u.stream = device.stream();
  if (c.amax_out) u.amax = static_cast<float*>(output(*plan, device, sizeof(float)));
  plan->call = [u] { return unpad(u); };
  return Status();
}

// What the SwiGLU plans share: a's quantize parameters, groups, given amax and device, the outputs
// of its quantize, and the computed tensor's buffer (`computed`, `computed_bytes`) only where the
// backend needs one (swiglu_needs_computed). Default SwigluParams: concatenated halves, silu.
template <class Args>
Status setup_swiglu(const BenchCase& c, BenchDevice& device, OpPlan& plan, Status (*sizes_of)(const Args&, QuantizeSizes*),
                    void* Args::*computed, int64_t computed_bytes, Args& a) {
  a.params = {c.format, c.rule, c.layout, c.direction};
  a.groups = {group_ends(plan, device, c), c.pad_rowwise, c.pad_colwise};
  a.tensor_amax = given_amax(c, device, plan);
  a.backend = device.backend();
  a.stream = device.stream();
  QuantizeSizes sizes;
  Status st = sizes_of(a, &sizes);
  if (!st.ok()) return st;
  a.out = allocate_outputs(c, sizes, device, plan);
  if (swiglu_needs_computed(a, a.backend)) a.*computed = output(plan, device, computed_bytes);
  return Status();
}

// h (rows, 2 cols) in the case's dtype, counted as read.
TensorView swiglu_h(const BenchCase& c, BenchDevice& device, OpPlan& plan) {
  TensorView h = view(c, input(plan, device, c.dtype, c.rows * 2 * c.cols), c.dtype);
  h.cols = 2 * c.cols;
  return h;
}

// The forward: a (rows, cols) from h, quantized as the case says.
Status plan_swiglu(const BenchCase& c, BenchDevice& device, OpPlan* plan) {
  SwigluArgs a;
  a.input = swiglu_h(c, device, *plan);
  Status st = setup_swiglu(c, device, *plan, &swiglu_quantize_sizes, &SwigluArgs::activation, tensor_bytes(c, c.dtype), a);
  if (!st.ok()) return st;
  plan->call = [a] { return swiglu_quantize(a); };
  return Status();
}

// The backward: dA (rows, cols) and h to dh (rows, 2 cols), quantized.
Status plan_swiglu_backward(const BenchCase& c, BenchDevice& device, OpPlan* plan) {
  SwigluBackwardArgs a;
  a.grad = view(c, input(*plan, device, c.dtype, c.rows * c.cols), c.dtype);
  a.input = swiglu_h(c, device, *plan);
  Status st = setup_swiglu(c, device, *plan, &swiglu_backward_quantize_sizes, &SwigluBackwardArgs::grad_input,
                           2 * tensor_bytes(c, c.dtype), a);
  if (!st.ok()) return st;
  plan->call = [a] { return swiglu_backward_quantize(a); };
  return Status();
}

Status plan_amax(const BenchCase& c, BenchDevice& device, OpPlan* plan) {
  const TensorView x = view(c, input(*plan, device, c.dtype, c.batch * c.rows * c.cols), c.dtype);
  float* out = static_cast<float*>(output(*plan, device, c.batch * int64_t{sizeof(float)}));
  const Backend backend = device.backend();
  void* stream = device.stream();
  plan->call = [x, out, backend, stream] { return tensor_amax(x, out, backend, stream); };
  return Status();
}

}  // namespace

std::vector<int32_t> jagged_group_ends(int64_t rows, int32_t groups, int32_t multiple) {
  std::vector<double> weights(groups);
  double total = 0;
  for (int32_t g = 0; g < groups; ++g) {
    // A weight in [0.25, 1.75): group sizes within 0.25x-1.75x of the mean.
    weights[g] = 0.25 + 1.5 * static_cast<double>(splitmix64(0x67726F7570ull + g) >> 11) * 0x1p-53;
    total += weights[g];
  }
  std::vector<int32_t> ends(groups);
  double cumulative = 0;
  for (int32_t g = 0; g < groups; ++g) {
    cumulative += weights[g];
    const auto end = static_cast<int32_t>(static_cast<double>(rows) * cumulative / total);
    ends[g] = end - end % multiple;
  }
  if (groups > 0) ends.back() = static_cast<int32_t>(rows);
  return ends;
}

Status make_plan(const BenchCase& c, BenchDevice& device, OpPlan* plan) {
  switch (c.op) {
    case Op::quantize: return plan_quantize(c, device, plan);
    case Op::dequantize: return plan_dequantize(c, device, plan);
    case Op::pad: return plan_pad(c, device, plan);
    case Op::unpad: return plan_unpad(c, device, plan);
    case Op::amax: return plan_amax(c, device, plan);
    case Op::swiglu: return plan_swiglu(c, device, plan);
    case Op::swiglu_backward: return plan_swiglu_backward(c, device, plan);
  }
  return Status::error(Code::invalid_argument, "bench: unknown op");
}

}  // namespace mxq::bench
