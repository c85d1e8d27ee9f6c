// The cuda dequantize (MXFP8, rowwise or colwise data, linear or blocked scales) equals the cpu
// reference for every output dtype; every output byte is written.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

struct DequantCase {
  QuantizeParams params;  // direction: the one dequantized
  int64_t batch, rows, cols;
  DType out_dtype;
};

DequantizeArgs make_args(const DequantCase& c, const void* data, const uint8_t* scales, Backend b) {
  DequantizeArgs a;
  a.params = c.params;
  a.batch = c.batch;
  a.rows = c.rows;
  a.cols = c.cols;
  a.data = data;
  a.scales = scales;
  a.out_dtype = c.out_dtype;
  a.backend = b;
  return a;
}

std::vector<uint8_t> cpu_dequantize(const DequantCase& c, const std::vector<uint8_t>& data,
                                    const std::vector<uint8_t>& scales) {
  DequantizeArgs a = make_args(c, data.data(), scales.data(), Backend::cpu);
  int64_t n = 0;
  EXPECT_TRUE(dequantize_size(a, &n).ok());
  std::vector<uint8_t> out(size_t(n * dtype_size(c.out_dtype)), kPoisonA);
  a.out = out.data();
  const Status st = dequantize(a);
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

std::vector<uint8_t> cuda_dequantize(const DequantCase& c, const std::vector<uint8_t>& data,
                                     const std::vector<uint8_t>& scales) {
  const DeviceBuffer d = device_copy(data), s = device_copy(scales);
  DequantizeArgs a = make_args(c, d.get(), s.get(), Backend::cuda);
  int64_t n = 0;
  EXPECT_TRUE(dequantize_size(a, &n).ok());
  const DeviceBuffer out(size_t(n * dtype_size(c.out_dtype)));
  a.out = out.get();
  return dequantize_poisoned_twice(a, out);
}

TEST(CudaDequantize, MatchesCpuEveryLayoutDirectionAndDtype) {
  MXQ_FRESH_RNG(rng);
  const int64_t shapes[][3] = {{1, 33, 160}, {1, 129, 96}, {2, 65, 64}, {1, 256, 256}, {3, 1, 48}};
  for (const auto& sh : shapes) {
    for (Format f : {Format::mxfp8, Format::mxfp8_e5m2}) {
      for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
        QuantizeRequest req;
        req.params.format = f;
        req.params.layout = l;
        req.params.rule = rng.uniform(0, 1) ? ScaleRule::rceil : ScaleRule::floor;
        req.params.direction = Direction::both;
        const QuantizeResult q = run_quantize(special_tensor(rng, DType::bf16, sh[0], sh[1], sh[2], 0.01), req);
        for (Direction d : {Direction::rowwise, Direction::colwise}) {
          for (DType t : {DType::bf16, DType::fp16, DType::fp32}) {
            DequantCase c{req.params, sh[0], sh[1], sh[2], t};
            c.params.direction = d;
            SCOPED_TRACE(::testing::Message()
                         << "shape " << sh[0] << "x" << sh[1] << "x" << sh[2] << " format " << int(f) << " layout "
                         << int(l) << " direction " << int(d) << " out " << int(t));
            const bool row = d == Direction::rowwise;
            const auto& data = row ? q.row_data : q.col_data;
            const auto& scales = row ? q.row_scales : q.col_scales;
            EXPECT_EQ(cpu_dequantize(c, data, scales), cuda_dequantize(c, data, scales));  // NaN bits too
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace mxq::test
