// The CPU backend's thread pool under callers of its own: ops from several threads at once (one
// of them runs on the pool, the others on their calling threads) give the bytes of a lone call.
#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include <mxq/mxq.hpp>

namespace {

std::vector<uint8_t> quantize_bytes(const std::vector<float>& x, int64_t M, int64_t K, mxq::Format f) {
  mxq::QuantizeArgs q;
  q.input = {x.data(), mxq::DType::fp32, 1, M, K};
  q.params.format = f;
  q.params.direction = mxq::Direction::both;
  q.backend = mxq::Backend::cpu;
  mxq::QuantizeSizes sz;
  EXPECT_TRUE(mxq::quantize_sizes(q, &sz).ok());
  std::vector<uint8_t> out(
      static_cast<size_t>(sz.row_data_bytes + sz.row_scale_bytes + sz.col_data_bytes + sz.col_scale_bytes), 0xA5);
  uint8_t* p = out.data();
  q.out.row_data = p;
  q.out.row_scales = p + sz.row_data_bytes;
  q.out.col_data = p + sz.row_data_bytes + sz.row_scale_bytes;
  q.out.col_scales = p + sz.row_data_bytes + sz.row_scale_bytes + sz.col_data_bytes;
  float tensor_scales[2] = {0.0f, 0.0f};  // nvfp4: s_enc, s_dec
  if (f == mxq::Format::nvfp4) {
    q.out.s_enc = &tensor_scales[0];
    q.out.s_dec = &tensor_scales[1];
  }
  const mxq::Status s = mxq::quantize(q);
  EXPECT_TRUE(s.ok()) << s.message();
  const auto* scale_bytes = reinterpret_cast<const uint8_t*>(tensor_scales);
  out.insert(out.end(), scale_bytes, scale_bytes + sizeof tensor_scales);
  return out;
}

TEST(ThreadPool, ConcurrentCallersGetTheBytesOfALoneCall) {
  const int64_t M = 512, K = 1024;
  std::vector<float> x(static_cast<size_t>(M * K));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  const mxq::Format formats[] = {mxq::Format::mxfp8, mxq::Format::mxfp4, mxq::Format::nvfp4};
  std::vector<std::vector<uint8_t>> alone;
  for (mxq::Format f : formats) alone.push_back(quantize_bytes(x, M, K, f));

  constexpr int kCallers = 4, kRounds = 5;
  std::vector<int> mismatches(kCallers, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int r = 0; r < kRounds; ++r) {
        const size_t i = static_cast<size_t>((c + r) % 3);
        if (quantize_bytes(x, M, K, formats[i]) != alone[i]) ++mismatches[static_cast<size_t>(c)];
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(mismatches[static_cast<size_t>(c)], 0) << "caller " << c;
}

}  // namespace
