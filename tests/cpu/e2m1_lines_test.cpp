// The kernels' E2M1 encoders (src/cuda/e2m1_lines.hpp: inputs rounded to odd into bf16x2, three
// bf16 rounding lines, a byte-permute gather), with the bf16 arithmetic emulated exactly on the
// host, equal the numerics core on every input that is not NaN (NaN only occurs in poisoned
// blocks, which the kernels encode without it):
// - encode_e2m1(y) == num::encode<E2M1>(y): every y whose magnitude lies in [2^-3, 2^4) (all
//   rounding boundaries and the saturation are in there) and a coprime stride over all the others;
//   MXQ_E2M1_EXHAUSTIVE=1 checks all 2^32 inputs (minutes).
// - encode_e2m1_pow2(x, r) == num::encode<E2M1>(x * r) for every E8M0 reciprocal r (bytes 0..254):
//   every bf16 x, and a stride over the fp32 x whose product lands in [2^-3, 2^4).
// - the fp16 words of fp16 -> mxfp4 (fp16x2_scaled_odd_pair, multiplier times 2^112) equal
//   num::encode<E2M1>(x * r) for every finite fp16 x and every r up to kFp16PairsMaxPow2.
// tests/cuda/convert_test.cu repeats them on the device's bf16 instructions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "cuda/e2m1_lines.hpp"
#include "mxq/numerics/e8m0.hpp"
#include "mxq/numerics/halfprec.hpp"
#include "mxq/numerics/minifloat.hpp"

namespace num = mxq::num;
namespace cuda = mxq::cuda;

namespace {

constexpr int kNoScale = -1;  // encode_e2m1 of the input itself

struct Result {
  uint64_t checked = 0, mismatches = 0;
  uint32_t first = 0;  // first differing input (fp32 bits; fp16 bits in the fp16 test)
  int first_scale = kNoScale;

  void add(const Result& o) {
    if (o.mismatches > 0 && mismatches == 0) {
      first = o.first;
      first_scale = o.first_scale;
    }
    checked += o.checked;
    mismatches += o.mismatches;
  }
};

// Encodes inputs[0..7] as one word (each at its own nibble), by encode_e2m1 (scale_byte kNoScale)
// or encode_e2m1_pow2 with the reciprocal of E8M0 byte scale_byte, and compares every nibble.
void check_word(const uint32_t (&in)[8], int scale_byte, Result& r) {
  float x[8];
  for (int j = 0; j < 8; ++j) x[j] = num::u2f(in[j]);
  const float pow2 = scale_byte == kNoScale ? 1.0f : num::e8m0_reciprocal(static_cast<uint8_t>(scale_byte));
  const uint32_t word = scale_byte == kNoScale ? cuda::encode_e2m1(x) : cuda::encode_e2m1_pow2(x, pow2);
  for (int j = 0; j < 8; ++j) {
    const uint32_t want = num::encode<num::E2M1>(x[j] * pow2);
    ++r.checked;
    if (((word >> (4 * j)) & 0xFu) != want && r.mismatches++ == 0) {
      r.first = in[j];
      r.first_scale = scale_byte;
    }
  }
}

bool is_nan_bits(uint32_t u) { return (u & 0x7FFFFFFFu) > num::kF32ExpMask; }

// Checks the inputs base + i * stride for i in [0, count), eight to a word; NaN inputs are
// replaced by the input at the same nibble of the previous word (both signs of zero at first).
void check_range(uint32_t base, uint32_t stride, uint64_t count, int scale_byte, Result& r) {
  uint32_t in[8] = {0, 0x80000000u, 0, 0x80000000u, 0, 0x80000000u, 0, 0x80000000u};
  int n = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t u = base + static_cast<uint32_t>(i) * stride;
    if (!is_nan_bits(u)) in[n] = u;
    if (++n == 8) {
      check_word(in, scale_byte, r);
      n = 0;
    }
  }
  if (n > 0) check_word(in, scale_byte, r);
}

// Runs work(t, result) for t in [0, kThreads) on two threads and sums the results.
template <class Work>
Result run_parallel(Work work) {
  constexpr int kThreads = 2;
  Result results[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { work(t, kThreads, results[t]); });
  for (auto& th : threads) th.join();
  Result total;
  for (const Result& r : results) total.add(r);
  return total;
}

// check_range over the `count` inputs base + i * stride of encode_e2m1, split between the threads.
Result check_parallel(uint32_t base, uint32_t stride, uint64_t count) {
  return run_parallel([&](int t, int threads, Result& r) {
    const uint64_t per = (count + threads - 1) / threads;
    const uint64_t start = t * per, n = start >= count ? 0 : std::min(per, count - start);
    check_range(base + static_cast<uint32_t>(start) * stride, stride, n, kNoScale, r);
  });
}

void expect_clean(const Result& r, uint64_t min_checked) {
  EXPECT_GE(r.checked, min_checked);
  EXPECT_EQ(r.mismatches, 0u) << "first differing input 0x" << std::hex << r.first << std::dec
                              << (r.first_scale == kNoScale ? "" : " with E8M0 byte ") << r.first_scale;
}

TEST(E2M1Lines, EqualsNumericsNearTheGrid) {
  // Magnitudes [2^-3, 2^4): biased exponents 124..130, both signs.
  const uint64_t n = uint64_t{7} << 23;
  expect_clean(check_parallel(0x3E000000u, 1, n), n);
  expect_clean(check_parallel(0xBE000000u, 1, n), n);
}

TEST(E2M1Lines, EqualsNumericsOnAStrideOfAllInputs) {
  const uint64_t n = (uint64_t{1} << 32) / 251;
  expect_clean(check_parallel(7, 251, n), n);
}

TEST(E2M1Lines, SpecialValues) {
  const uint32_t in[8] = {0x7F800000u, 0xFF800000u, 0, 0x80000000u, 0x00000001u, 0x80000001u, 0x7F7FFFFFu, 0xFF7FFFFFu};
  for (int scale_byte : {kNoScale, 0, 1, 126, 127, 128, 253, 254}) {
    Result r;
    check_word(in, scale_byte, r);
    expect_clean(r, 8);
  }
}

TEST(E2M1Lines, Pow2EqualsNumericsOnEveryBf16AndScale) {
  // bf16 pattern h is the fp32 pattern h << 16: stride 2^16 over the fp32 patterns.
  const Result r = run_parallel([](int t, int threads, Result& res) {
    for (int b = t; b <= 254; b += threads) check_range(0, 0x10000u, 0x10000u, b, res);
  });
  expect_clean(r, uint64_t{255} * 0x10000u);
}

TEST(E2M1Lines, Pow2EqualsNumericsOnAStrideNearEachScalesGrid) {
  // fp32 x with x * 2^(127 - b) in [2^-3, 2^4), fp32 subnormals included, both signs: the
  // patterns from 2^(b - 130) to 2^(b - 123) (clamped to the finite range), 1/1009 of them.
  const Result r = run_parallel([](int t, int threads, Result& res) {
    for (int b = t; b <= 254; b += threads) {
      const uint32_t lo = num::f2u(std::ldexp(1.0f, b - 130));
      const uint32_t hi = b - 123 >= 128 ? 0x7F7FFFFFu : num::f2u(std::ldexp(1.0f, b - 123));
      for (uint32_t sign : {0u, 0x80000000u}) check_range(sign | lo, 1009, (hi - lo) / 1009, b, res);
    }
  });
  expect_clean(r, uint64_t{255} * 2 * 9000);
}

// The host emulation of the bf16 instructions on a few hand-checked cases: bf16 has spacing 1/2
// on [64, 128), ties go to the even mantissa, subnormals (multiples of 2^-133) are kept.
TEST(E2M1Lines, HostBf16ArithmeticRoundsOnceToNearestEven) {
  auto bf = [](float v) { return num::f2u(v) >> 16; };
  auto fma1 = [&](float a, float b, float c) { return cuda::bf16x2_fma(bf(a), bf(b), bf(c)) & 0xFFFFu; };
  EXPECT_EQ(fma1(1.5f, 1.0f, 64.0f), bf(65.5f));
  EXPECT_EQ(fma1(0.25f, 1.0f, 64.0f), bf(64.0f));       // tie, even
  EXPECT_EQ(fma1(0.75f, 1.0f, 64.0f), bf(65.0f));       // tie, even
  EXPECT_EQ(fma1(0.2578125f, 1.0f, 64.0f), bf(64.5f));  // just above the tie
  EXPECT_EQ(fma1(0x1p-128f, 0x1p120f, 64.0f), bf(64.0f));
  EXPECT_EQ(fma1(0x1p-133f, 1.0f, 0.0f), 0x0001u);  // smallest subnormal kept
  EXPECT_EQ(fma1(0x1p-133f, 0.5f, 0.0f), 0x0000u);  // half of it: tie to even zero
  EXPECT_EQ(fma1(0x1p127f, 4.0f, 64.0f), 0x7F80u);  // overflow to Inf
  EXPECT_EQ(cuda::bf16x2_fma(bf(3.0f) | (bf(0.75f) << 16), bf(1.0f) * 0x10001u, bf(64.0f) * 0x10001u),
            bf(67.0f) | (bf(65.0f) << 16));
  EXPECT_EQ(cuda::bf16x2_min(bf(2.0f) | (bf(3.0f) << 16), bf(2.5f) | (bf(1.0f) << 16)), bf(2.0f) | (bf(1.0f) << 16));
  EXPECT_EQ(cuda::bf16x2_mul(bf(0x1p-127f) * 0x10001u, 0x3E803F00u), 0x00100020u);  // 2^-128, 2^-129
}

// The colwise kernels hand bf16 words to encode_e2m1_pow2_pairs through bf16x2_exact_pair, not
// through the fp32 widenings and round_to_odd_bf16x2 of encode_e2m1_pow2: the same pair for every
// word (each half depends on its own element only: every value of one half with a stride of the
// other, both ways round).
TEST(E2M1Lines, Bf16WordsAreTheirOwnOddRounding) {
  auto same = [](uint32_t w) {
    const cuda::Bf16x2Odd a = cuda::bf16x2_exact_pair(w);
    const cuda::Bf16x2Odd b = cuda::round_to_odd_bf16x2<true>(num::u2f(w << 16), num::u2f(w & 0xFFFF0000u));
    return a.truncated == b.truncated && a.magnitudes == b.magnitudes;
  };
  uint64_t mismatches = 0;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    for (uint32_t other = 0; other < 0x10000u; other += 257) {
      mismatches += !same(h | (other << 16));
      mismatches += !same(other | (h << 16));
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

// fp16 words go to encode_e2m1_pow2_pairs through fp16x2_scaled_odd_pair with the multiplier
// times 2^112, for every E8M0 reciprocal up to kFp16PairsMaxPow2 (bytes 112..254): the codes of
// num::encode<E2M1>(x * pow2) for every fp16 x but NaN and Inf (which only poisoned blocks hold),
// each value in every nibble of a word (the other nibbles: a stride of values), both halves.
TEST(E2M1Lines, Fp16PairsEqualNumericsOnEveryFp16AndScale) {
  const Result r = run_parallel([](int t, int threads, Result& res) {
    for (int b = 112 + t; b <= 254; b += threads) {
      const float pow2 = num::e8m0_reciprocal(static_cast<uint8_t>(b));
      EXPECT_LE(pow2, cuda::kFp16PairsMaxPow2);
      for (uint32_t h = 0; h < 0x10000u; ++h) {
        if ((h & 0x7C00u) == 0x7C00u) continue;
        uint32_t in[8];
        for (int j = 0; j < 8; ++j) in[j] = (h + 0x1F3Du * j) & 0xFFFFu;
        for (int j = 0; j < 8; ++j) {
          if ((in[j] & 0x7C00u) == 0x7C00u) in[j] &= 0x83FFu;  // a finite value in the other nibbles
        }
        cuda::Bf16x2Odd pairs[4];
        for (int k = 0; k < 4; ++k) pairs[k] = cuda::fp16x2_scaled_odd_pair(in[2 * k] | (in[2 * k + 1] << 16));
        const uint32_t word = cuda::encode_e2m1_pow2_pairs<4>(pairs, pow2 * cuda::kFp16PairsScale);
        for (int j = 0; j < 8; ++j) {
          const uint32_t want = num::encode<num::E2M1>(num::fp16_to_float(static_cast<uint16_t>(in[j])) * pow2);
          ++res.checked;
          if (((word >> (4 * j)) & 0xFu) != want && res.mismatches++ == 0) {
            res.first = in[j];
            res.first_scale = b;
          }
        }
      }
    }
  });
  expect_clean(r, uint64_t{143} * 0xF800u * 8);
}

TEST(E2M1Lines, EqualsNumericsOnAllInputs) {
  const char* e = std::getenv("MXQ_E2M1_EXHAUSTIVE");
  if (e == nullptr || std::strcmp(e, "1") != 0) GTEST_SKIP() << "set MXQ_E2M1_EXHAUSTIVE=1 for all 2^32 inputs";
  const uint64_t n = uint64_t{1} << 32;
  expect_clean(check_parallel(0, 1, n), n);
}

}  // namespace
