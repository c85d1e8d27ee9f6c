#include "support/swiglu_runner.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace mxq::test {
namespace {

// The quantize outputs of `sizes`, each poisoned with `pattern`, wired into `out`.
void poisoned_outputs(const QuantizeSizes& s, Direction d, uint8_t pattern, QuantizeResult* r, QuantizeOutputs* out) {
  r->sizes = s;
  const bool row = has_rowwise(d), col = has_colwise(d);
  auto fill = [&](std::vector<uint8_t>& v, int64_t n, bool on) {
    v = on ? poisoned(size_t(n), pattern) : std::vector<uint8_t>{};
  };
  fill(r->row_data, s.row_data_bytes, row);
  fill(r->row_scales, s.row_scale_bytes, row);
  fill(r->col_data, s.col_data_bytes, col);
  fill(r->col_scales, s.col_scale_bytes, col);
  float fpoison;
  const uint32_t pbits = pattern * 0x01010101u;
  std::memcpy(&fpoison, &pbits, 4);
  r->s_enc.assign(size_t(s.tensor_scale_count), fpoison);
  r->s_dec.assign(size_t(s.tensor_scale_count), fpoison);
  r->padded_starts.assign(size_t(s.padded_offset_count), int32_t(pbits));
  r->padded_ends.assign(size_t(s.padded_offset_count), int32_t(pbits));
  auto ptr = [](auto& v) { return v.empty() ? nullptr : v.data(); };
  *out = {ptr(r->row_data),      ptr(r->row_scales),  ptr(r->col_data),
          ptr(r->col_scales),    ptr(r->s_enc),       ptr(r->s_dec),
          ptr(r->padded_starts), ptr(r->padded_ends), nullptr};
}

template <class Args>
void set_common(Args& a, const HostTensor& h, const SwigluRequest& req) {
  const QuantizeRequest& q = req.quantize;
  a.input = h.view();
  a.swiglu = req.swiglu;
  a.weights = req.weights.empty() ? nullptr : req.weights.data();
  a.params = q.params;
  a.groups.groups = {q.ends.empty() ? nullptr : q.ends.data(), static_cast<int64_t>(q.ends.size())};
  a.groups.pad_rowwise = q.pad_rowwise;
  a.groups.pad_colwise = q.pad_colwise;
  a.tensor_amax = q.tensor_amax.empty() ? nullptr : q.tensor_amax.data();
  a.backend = q.backend;
}

SwigluResult forward_once(const HostTensor& h, const SwigluRequest& req, uint8_t pattern) {
  SwigluArgs a;
  set_common(a, h, req);
  QuantizeSizes s;
  const Status st = swiglu_quantize_sizes(a, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  SwigluResult r;
  poisoned_outputs(s, req.quantize.params.direction, pattern, &r.quantized, &a.out);
  if (req.keep_computed) {
    r.computed = poisoned(size_t(h.rows * (h.cols / 2) * dtype_size(h.dtype)), pattern);
    a.activation = r.computed.empty() ? nullptr : r.computed.data();
  }
  const Status run = swiglu_quantize(a);
  EXPECT_TRUE(run.ok()) << run.message();
  return r;
}

SwigluResult backward_once(const HostTensor& grad, const HostTensor& h, const SwigluRequest& req, uint8_t pattern) {
  SwigluBackwardArgs a;
  set_common(a, h, req);
  a.grad = grad.view();
  QuantizeSizes s;
  const Status st = swiglu_backward_quantize_sizes(a, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  SwigluResult r;
  poisoned_outputs(s, req.quantize.params.direction, pattern, &r.quantized, &a.out);
  if (req.keep_computed) {
    r.computed = poisoned(size_t(h.rows * h.cols * dtype_size(h.dtype)), pattern);
    a.grad_input = r.computed.empty() ? nullptr : r.computed.data();
  }
  if (!req.weights.empty()) {
    float fpoison;
    const uint32_t pbits = pattern * 0x01010101u;
    std::memcpy(&fpoison, &pbits, 4);
    r.grad_weights.assign(size_t(h.rows), fpoison);
    a.grad_weights = r.grad_weights.data();
  }
  const Status run = swiglu_backward_quantize(a);
  EXPECT_TRUE(run.ok()) << run.message();
  return r;
}

void expect_all_written(const SwigluResult& a, const SwigluResult& b) {
  expect_every_byte_written(a.quantized, b.quantized, "");
  EXPECT_TRUE(every_byte_written(a.computed, b.computed, "computed"));
  EXPECT_TRUE(every_byte_written(as_bytes(a.grad_weights), as_bytes(b.grad_weights), "grad_weights"));
}

}  // namespace

SwigluResult run_swiglu(const HostTensor& h, const SwigluRequest& req) {
  SwigluResult a = forward_once(h, req, kPoisonA);
  expect_all_written(a, forward_once(h, req, kPoisonB));
  return a;
}

SwigluResult run_swiglu_backward(const HostTensor& grad, const HostTensor& h, const SwigluRequest& req) {
  SwigluResult a = backward_once(grad, h, req, kPoisonA);
  expect_all_written(a, backward_once(grad, h, req, kPoisonB));
  return a;
}

HostTensor computed_tensor(const SwigluResult& r, DType dtype, int64_t rows, int64_t cols) {
  HostTensor t(dtype, 1, rows, cols);
  const size_t n = static_cast<size_t>(rows * cols * dtype_size(dtype));
  EXPECT_EQ(n, r.computed.size());
  if (n == r.computed.size() && n > 0) std::memcpy(t.bytes.data(), r.computed.data(), n);
  return t;
}

}  // namespace mxq::test
