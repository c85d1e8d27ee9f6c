// Quantize a bf16 token matrix to MXFP8 in both directions with blocked scales, then dequantize
// the rowwise copy and report its error. Host buffers, so the CPU backend runs; pass device
// buffers (and a stream) and the same calls run on the GPU.
#include <mxq/mxq.hpp>
#include <mxq/numerics/halfprec.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const int64_t M = 256, K = 1024;
  std::vector<uint16_t> x(M * K);  // bf16 bits
  for (int64_t i = 0; i < M * K; ++i) x[i] = mxq::num::float_to_bf16_rne(std::sin(0.01f * static_cast<float>(i)));

  mxq::QuantizeArgs q;
  q.input = {x.data(), mxq::DType::bf16, /*batch=*/1, M, K};
  q.params.format = mxq::Format::mxfp8;
  q.params.layout = mxq::ScaleLayout::blocked;
  q.params.direction = mxq::Direction::both;

  mxq::QuantizeSizes sz;
  if (mxq::Status s = mxq::quantize_sizes(q, &sz); !s.ok()) return std::puts(s.message().c_str()), 1;
  std::vector<uint8_t> row(sz.row_data_bytes), row_sc(sz.row_scale_bytes);
  std::vector<uint8_t> col(sz.col_data_bytes), col_sc(sz.col_scale_bytes);
  q.out.row_data = row.data();
  q.out.row_scales = row_sc.data();
  q.out.col_data = col.data();
  q.out.col_scales = col_sc.data();
  if (mxq::Status s = mxq::quantize(q); !s.ok()) return std::puts(s.message().c_str()), 1;

  mxq::DequantizeArgs d;
  d.params = q.params;
  d.params.direction = mxq::Direction::rowwise;
  d.rows = M;
  d.cols = K;
  d.data = row.data();
  d.scales = row_sc.data();
  std::vector<float> y(M * K);
  d.out = y.data();
  d.out_dtype = mxq::DType::fp32;
  if (mxq::Status s = mxq::dequantize(d); !s.ok()) return std::puts(s.message().c_str()), 1;

  double sig = 0, err = 0;
  for (int64_t i = 0; i < M * K; ++i) {
    const double v = mxq::num::bf16_to_float(x[i]);
    sig += v * v;
    err += (v - y[i]) * (v - y[i]);
  }
  const double sqnr = 10 * std::log10(sig / err);
  std::printf("mxfp8 rowwise+colwise: %lld data bytes, %lld scale bytes, SQNR %.1f dB\n",
              static_cast<long long>(sz.row_data_bytes + sz.col_data_bytes),
              static_cast<long long>(sz.row_scale_bytes + sz.col_scale_bytes), sqnr);
  return sqnr > 28 ? 0 : 1;
}
