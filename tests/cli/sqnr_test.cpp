// Sqnr's sums against the plain one-element-at-a-time loop they must match bit for bit (the SQNR
// in a quantize summary must not depend on how the sums are vectorised or split over threads).
#include <gtest/gtest.h>

#include <mxq/numerics/halfprec.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "sqnr.hpp"

namespace mxq::cli {
namespace {

// The sums of one piece as a scalar loop: element i into partial sum i % 4, non-finite reference
// elements skipped, the four partial sums added pairwise.
SqnrSums scalar_piece(const std::vector<float>& ref, const std::vector<float>& approx, size_t at, size_t n) {
  double signal[4] = {}, noise[4] = {};
  int64_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const float x = ref[at + i];
    if (!std::isfinite(x)) continue;
    const double r = x, d = r - static_cast<double>(approx[at + i]);
    signal[i % 4] += r * r;
    noise[i % 4] += d * d;
    ++count;
  }
  return {(signal[0] + signal[1]) + (signal[2] + signal[3]), (noise[0] + noise[1]) + (noise[2] + noise[3]), count};
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

class SqnrSumsTest : public ::testing::TestWithParam<DType> {};

TEST_P(SqnrSumsTest, PiecesMatchTheScalarLoopWithNonFiniteValues) {
  const DType dtype = GetParam();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{7}, size_t{1024}, size_t{1021}, size_t{3001}}) {
    // The reference as stored (bf16/fp16 rounded by truncation: any bits do) and as fp32.
    std::vector<unsigned char> stored(n * static_cast<size_t>(dtype_size(dtype)));
    std::vector<float> ref(n), approx(n);
    for (size_t i = 0; i < n; ++i) {
      float x = normal(rng);
      if (i % 13 == 5) x = i % 2 ? inf : -inf;
      if (i % 17 == 3) x = nan;
      if (dtype == DType::fp32) {
        std::memcpy(&stored[i * 4], &x, 4);
      } else {
        const uint16_t h = dtype == DType::bf16 ? static_cast<uint16_t>(num::f2u(x) >> 16) : num::float_to_fp16_rne(x);
        std::memcpy(&stored[i * 2], &h, 2);
      }
      ref[i] = load_as_float(stored.data(), dtype, static_cast<int64_t>(i));
      approx[i] = ref[i] + 0.01f * normal(rng);
      if (i % 29 == 11) approx[i] = inf;  // a finite reference against an infinite approximation
    }
    Sqnr whole, scalar;
    whole.add(stored.data(), dtype, approx.data(), static_cast<int64_t>(n));
    for (size_t at = 0; at < n; at += Sqnr::kPiece) {
      const size_t m = std::min<size_t>(Sqnr::kPiece, n - at);
      const SqnrSums want = scalar_piece(ref, approx, at, m);
      const SqnrSums got = Sqnr::piece_sums(stored.data() + at * dtype_size(dtype), dtype, approx.data() + at,
                                            static_cast<int64_t>(m));
      EXPECT_TRUE(same_bits(got.signal, want.signal)) << n << " at " << at;
      EXPECT_TRUE(same_bits(got.noise, want.noise) || (std::isnan(got.noise) && std::isnan(want.noise)));
      EXPECT_EQ(got.count, want.count);
      scalar.add(want);
    }
    EXPECT_TRUE(same_bits(whole.db(), scalar.db()) || (std::isnan(whole.db()) && std::isnan(scalar.db()))) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SqnrSumsTest, ::testing::Values(DType::bf16, DType::fp16, DType::fp32));

}  // namespace
}  // namespace mxq::cli
