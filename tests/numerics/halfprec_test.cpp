// bf16 / fp16 <-> fp32 against the independent oracle: every 16-bit pattern widened, narrowing of
// every midpoint between neighbouring 16-bit values (ties, overflow threshold, subnormals) and of a
// dense sweep over all fp32 exponents, and round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mxq/numerics/halfprec.hpp"
#include "oracle.hpp"

namespace num = mxq::num;

namespace {

using NarrowFn = uint16_t (*)(float);
using WidenFn = float (*)(uint16_t);

uint16_t bf16_narrow(float f) { return num::float_to_bf16_rne(f); }
uint16_t fp16_narrow(float f) { return num::float_to_fp16_rne(f); }
float bf16_widen(uint16_t h) { return num::bf16_to_float(h); }
float fp16_widen(uint16_t h) { return num::fp16_to_float(h); }

// A NaN of the 16-bit format: exponent all ones, mantissa non-zero, quiet bit (top mantissa bit) set.
bool is_quiet_nan16(const oracle::FormatDesc& f, uint16_t h) {
  const uint32_t exp_mask = ((1u << f.ebits) - 1u) << f.mbits;
  const uint32_t man_mask = (1u << f.mbits) - 1u;
  const uint32_t quiet = 1u << (f.mbits - 1);
  return (h & exp_mask) == exp_mask && (h & man_mask) != 0 && (h & quiet) != 0;
}

struct Narrowing {
  const oracle::FormatDesc& fmt;
  oracle::IeeeNarrow want;
  NarrowFn got;
  long mismatches = 0;
  std::string first;

  Narrowing(const oracle::FormatDesc& f, NarrowFn fn) : fmt(f), want(f), got(fn) {}

  void check(float x) {
    const uint16_t g = got(x);
    bool ok;
    uint16_t w = 0;
    if (std::isnan(x)) {
      ok = is_quiet_nan16(fmt, g);
    } else {
      w = want(x);
      ok = g == w;
    }
    if (!ok && mismatches++ < 8) {
      char line[128];
      std::snprintf(line, sizeof line, "x=%a (0x%08X) got 0x%04X want 0x%04X\n", static_cast<double>(x),
                    oracle::bits_of(x), g, w);
      first += line;
    }
  }

  // Every midpoint between neighbouring non-negative values (the last one is max -> Inf), and its
  // fp32 neighbours, with both signs.
  void check_midpoints() {
    const std::vector<double>& v = want.with_inf;
    for (size_t i = 0; i + 1 < v.size(); ++i) {
      const double mid = (v[i] + v[i + 1]) / 2;
      const float x = static_cast<float>(mid);
      ASSERT_EQ(static_cast<double>(x), mid) << "midpoint not exact in fp32";
      for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, 1e38f)}) {
        check(y);
        check(-y);
      }
    }
  }

  // For every fp32 exponent field and sign: a few structured mantissas and random ones.
  void check_exponent_sweep() {
    std::mt19937 rng(42);
    const uint32_t structured[] = {0x000000u, 0x000001u, 0x7FFFFFu, 0x400000u, 0x008000u,
                                   0x018000u, 0x007FFFu, 0x008001u, 0x001000u, 0x003000u};
    for (uint32_t sign = 0; sign < 2; ++sign) {
      for (uint32_t e = 0; e < 256; ++e) {
        const uint32_t base = (sign << 31) | (e << 23);
        for (uint32_t m : structured) check(oracle::float_of(base | m));
        for (int i = 0; i < 2000; ++i) check(oracle::float_of(base | (rng() & 0x7FFFFFu)));
      }
    }
  }
};

void check_widening(const oracle::FormatDesc& f, WidenFn widen) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const double want = oracle::decode_value(f, h);
    const float got = widen(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(oracle::bits_of(got), oracle::bits_of(static_cast<float>(want)))
          << std::hex << "h=0x" << h << " got " << got << " want " << want;
    }
  }
}

void check_round_trip(const oracle::FormatDesc& f, WidenFn widen, NarrowFn narrow) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t back = narrow(widen(static_cast<uint16_t>(h)));
    if (std::isnan(oracle::decode_value(f, h))) {
      ASSERT_TRUE(is_quiet_nan16(f, back)) << std::hex << h << " -> " << back;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

}  // namespace

TEST(HalfPrecision, Bf16WidenAllPatterns) { check_widening(oracle::kBF16, bf16_widen); }
TEST(HalfPrecision, Fp16WidenAllPatterns) { check_widening(oracle::kFP16, fp16_widen); }

TEST(HalfPrecision, Bf16NarrowMidpoints) {
  Narrowing n(oracle::kBF16, bf16_narrow);
  n.check_midpoints();
  EXPECT_EQ(n.mismatches, 0) << n.first;
}
TEST(HalfPrecision, Fp16NarrowMidpoints) {
  Narrowing n(oracle::kFP16, fp16_narrow);
  n.check_midpoints();
  EXPECT_EQ(n.mismatches, 0) << n.first;
}
TEST(HalfPrecision, Bf16NarrowExponentSweep) {
  Narrowing n(oracle::kBF16, bf16_narrow);
  n.check_exponent_sweep();
  EXPECT_EQ(n.mismatches, 0) << n.first;
}
TEST(HalfPrecision, Fp16NarrowExponentSweep) {
  Narrowing n(oracle::kFP16, fp16_narrow);
  n.check_exponent_sweep();
  EXPECT_EQ(n.mismatches, 0) << n.first;
}

TEST(HalfPrecision, RoundTrips) {
  check_round_trip(oracle::kBF16, bf16_widen, bf16_narrow);
  check_round_trip(oracle::kFP16, fp16_widen, fp16_narrow);
}

// Hand-written cases (IEEE 754 binary16 / bfloat16 facts).
TEST(HalfPrecision, HandCases) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(num::float_to_bf16_rne(1.0f), 0x3F80);
  EXPECT_EQ(num::float_to_bf16_rne(0x1.01p0f), 0x3F80);  // tie, even stays
  EXPECT_EQ(num::float_to_bf16_rne(0x1.03p0f), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(num::float_to_bf16_rne(-0.0f), 0x8000);
  EXPECT_EQ(num::float_to_bf16_rne(3.4028234e38f), 0x7F80);  // FLT_MAX rounds to Inf in bf16
  EXPECT_EQ(num::float_to_bf16_rne(-inf), 0xFF80);
  EXPECT_EQ(num::float_to_bf16_rne(0x1p-149f), 0x0000);  // smallest fp32 subnormal: tie to 0
  EXPECT_EQ(num::float_to_bf16_rne(0x1p-133f), 0x0001);  // smallest bf16 subnormal
  EXPECT_EQ(num::float_to_fp16_rne(65504.0f), 0x7BFF);
  EXPECT_EQ(num::float_to_fp16_rne(65519.996f), 0x7BFF);
  EXPECT_EQ(num::float_to_fp16_rne(65520.0f), 0x7C00);  // max + half ulp: tie goes to Inf
  EXPECT_EQ(num::float_to_fp16_rne(-1e10f), 0xFC00);
  EXPECT_EQ(num::float_to_fp16_rne(0x1p-24f), 0x0001);
  EXPECT_EQ(num::float_to_fp16_rne(0x1p-25f), 0x0000);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(num::float_to_fp16_rne(-0x1p-25f), 0x8000);
  EXPECT_EQ(num::float_to_fp16_rne(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(num::float_to_fp16_rne(0x1.8p-24f), 0x0002);    // 1.5 quanta: tie to even 2
  EXPECT_EQ(num::float_to_fp16_rne(0x1.ffcp-15f), 0x0400);  // top subnormal + half: carries
  EXPECT_EQ(num::float_to_fp16_rne(0x1p-14f), 0x0400);
  EXPECT_EQ(num::fp16_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(num::fp16_to_float(0x7C00), inf);
  EXPECT_EQ(num::fp16_to_float(0x8000), 0.0f);
  EXPECT_TRUE(std::signbit(num::fp16_to_float(0x8000)));
  EXPECT_EQ(num::bf16_to_float(0x0001), 0x1p-133f);
}

static_assert(mxq::num::float_to_bf16_rne(1.0f) == 0x3F80, "constexpr bf16 narrowing");
static_assert(mxq::num::float_to_fp16_rne(65504.0f) == 0x7BFF, "constexpr fp16 narrowing");
static_assert(mxq::num::fp16_to_float(0x3C00) == 1.0f, "constexpr fp16 widening");
static_assert(mxq::num::bf16_to_float(0xC000) == -2.0f, "constexpr bf16 widening");
