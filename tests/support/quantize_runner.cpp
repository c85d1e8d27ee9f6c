#include "support/quantize_runner.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include <mxq/numerics.hpp>

namespace mxq::test {
namespace {

QuantizeArgs make_args(const HostTensor& input, const QuantizeRequest& req) {
  QuantizeArgs a;
  a.input = input.view();
  a.params = req.params;
  a.groups.groups = {req.ends.empty() ? nullptr : req.ends.data(), static_cast<int64_t>(req.ends.size())};
  a.groups.pad_rowwise = req.pad_rowwise;
  a.groups.pad_colwise = req.pad_colwise;
  a.tensor_amax = req.tensor_amax.empty() ? nullptr : req.tensor_amax.data();
  a.backend = req.backend;
  return a;
}

QuantizeResult run_once(const HostTensor& input, const QuantizeRequest& req, uint8_t pattern) {
  QuantizeArgs a = make_args(input, req);
  QuantizeResult r;
  const Status st = quantize_sizes(a, &r.sizes);
  EXPECT_TRUE(st.ok()) << st.message();
  const QuantizeSizes& s = r.sizes;
  const bool row = has_rowwise(req.params.direction), col = has_colwise(req.params.direction);
  auto fill = [&](std::vector<uint8_t>& v, int64_t n, bool on) {
    v = on ? poisoned(size_t(n), pattern) : std::vector<uint8_t>{};
  };
  fill(r.row_data, s.row_data_bytes, row);
  fill(r.row_scales, s.row_scale_bytes, row);
  fill(r.col_data, s.col_data_bytes, col);
  fill(r.col_scales, s.col_scale_bytes, col);
  float fpoison;
  const uint32_t pbits = pattern * 0x01010101u;
  std::memcpy(&fpoison, &pbits, 4);
  r.s_enc.assign(size_t(s.tensor_scale_count), fpoison);
  r.s_dec.assign(size_t(s.tensor_scale_count), fpoison);
  r.padded_starts.assign(size_t(s.padded_offset_count), int32_t(pbits));
  r.padded_ends.assign(size_t(s.padded_offset_count), int32_t(pbits));
  auto ptr = [](auto& v) { return v.empty() ? nullptr : v.data(); };
  a.out.row_data = ptr(r.row_data);
  a.out.row_scales = ptr(r.row_scales);
  a.out.col_data = ptr(r.col_data);
  a.out.col_scales = ptr(r.col_scales);
  a.out.s_enc = ptr(r.s_enc);
  a.out.s_dec = ptr(r.s_dec);
  a.out.padded_starts = ptr(r.padded_starts);
  a.out.padded_ends = ptr(r.padded_ends);
  const Status q = quantize(a);
  EXPECT_TRUE(q.ok()) << q.message();
  return r;
}

}  // namespace

void expect_every_byte_written(const QuantizeResult& a, const QuantizeResult& b, const std::string& label_prefix) {
  const std::string& p = label_prefix;
  EXPECT_TRUE(every_byte_written(a.row_data, b.row_data, p + "row_data"));
  EXPECT_TRUE(every_byte_written(a.row_scales, b.row_scales, p + "row_scales"));
  EXPECT_TRUE(every_byte_written(a.col_data, b.col_data, p + "col_data"));
  EXPECT_TRUE(every_byte_written(a.col_scales, b.col_scales, p + "col_scales"));
  EXPECT_TRUE(every_byte_written(as_bytes(a.s_enc), as_bytes(b.s_enc), p + "s_enc"));
  EXPECT_TRUE(every_byte_written(as_bytes(a.s_dec), as_bytes(b.s_dec), p + "s_dec"));
  EXPECT_TRUE(every_byte_written(as_bytes(a.padded_starts), as_bytes(b.padded_starts), p + "padded_starts"));
  EXPECT_TRUE(every_byte_written(as_bytes(a.padded_ends), as_bytes(b.padded_ends), p + "padded_ends"));
}

QuantizeResult run_quantize(const HostTensor& input, const QuantizeRequest& req) {
  QuantizeResult a = run_once(input, req, kPoisonA);
  const QuantizeResult b = run_once(input, req, kPoisonB);
  expect_every_byte_written(a, b, "");
  return a;
}

std::vector<float> run_dequantize(const QuantizeRequest& req, Direction dir, int64_t batch, int64_t rows, int64_t cols,
                                  const QuantizeResult& q, DType out_dtype) {
  DequantizeArgs a;
  a.params = req.params;
  a.params.direction = dir;
  a.batch = batch;
  a.rows = rows;
  a.cols = cols;
  a.groups.groups = {req.ends.empty() ? nullptr : req.ends.data(), static_cast<int64_t>(req.ends.size())};
  a.groups.pad_rowwise = req.pad_rowwise;
  a.groups.pad_colwise = req.pad_colwise;
  const bool row = dir == Direction::rowwise;
  a.data = row ? q.row_data.data() : q.col_data.data();
  a.scales = row ? q.row_scales.data() : q.col_scales.data();
  a.s_dec = q.s_dec.empty() ? nullptr : q.s_dec.data();
  a.out_dtype = out_dtype;
  a.backend = req.backend;
  int64_t n = 0;
  const Status st = dequantize_size(a, &n);
  EXPECT_TRUE(st.ok()) << st.message();
  const size_t bytes = size_t(n * dtype_size(out_dtype));
  std::vector<uint8_t> outs[2] = {poisoned(bytes, kPoisonA), poisoned(bytes, kPoisonB)};
  for (auto& o : outs) {
    a.out = o.data();
    const Status d = dequantize(a);
    EXPECT_TRUE(d.ok()) << d.message();
  }
  EXPECT_TRUE(every_byte_written(outs[0], outs[1], "dequantize out"));
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = outs[0].data() + i * dtype_size(out_dtype);
    if (out_dtype == DType::fp32) {
      std::memcpy(&values[size_t(i)], p, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      values[size_t(i)] = out_dtype == DType::bf16 ? num::bf16_to_float(h) : num::fp16_to_float(h);
    }
  }
  return values;
}

}  // namespace mxq::test
