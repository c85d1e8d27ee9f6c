// FastDiv (src/cuda/fast_div.hpp) against `/`: every divisor up to 4096 and divisors near powers
// of two up to 2^31 - 1, at the edges of the quotient steps, near 2^31 and at random dividends.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "cuda/fast_div.hpp"

namespace {

constexpr uint32_t kMaxN = 0x7FFFFFFFu;

void check_divisor(uint32_t d, std::mt19937& rng) {
  const mxq::cuda::FastDiv f(d);
  auto check = [&](uint64_t n) {
    if (n > kMaxN) return;
    const uint32_t n32 = static_cast<uint32_t>(n);
    ASSERT_EQ(f.div(n32), n32 / d) << "n = " << n << ", d = " << d;
  };
  for (uint64_t n = 0; n < 64; ++n) check(n);
  const uint64_t last = kMaxN / d;  // the largest quotient
  for (uint64_t q : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{1000}, last, last - 1}) {
    check(q * d - 1);
    check(q * d);
    check(q * d + 1);
  }
  for (uint64_t n = kMaxN - 64; n <= kMaxN; ++n) check(n);
  std::uniform_int_distribution<uint32_t> any(0, kMaxN);
  for (int i = 0; i < 200; ++i) check(any(rng));
}

TEST(FastDiv, MatchesDivisionOnEveryDivisorUpTo4096) {
  std::mt19937 rng(12345);
  for (uint32_t d = 1; d <= 4096; ++d) check_divisor(d, rng);
}

TEST(FastDiv, MatchesDivisionNearPowersOfTwo) {
  std::mt19937 rng(777);
  for (int k = 12; k <= 31; ++k) {
    const uint64_t p = uint64_t{1} << k;
    for (int64_t delta = -3; delta <= 3; ++delta) {
      const int64_t d = static_cast<int64_t>(p) + delta;
      if (d >= 1 && d <= kMaxN) check_divisor(static_cast<uint32_t>(d), rng);
    }
  }
  std::uniform_int_distribution<uint32_t> any(1, kMaxN);
  for (int i = 0; i < 2000; ++i) check_divisor(any(rng), rng);
}

TEST(FastDiv, ZeroDivisorIsTakenAsOne) {
  const mxq::cuda::FastDiv f(0);
  EXPECT_EQ(f.div(12345), 12345u);
}

}  // namespace
