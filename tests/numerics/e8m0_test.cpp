// E8M0 block scales (docs/spec.md section 2): reciprocal and value of all 256 bytes, the rceil table,
// rceil and floor of every format against the oracle on amax sweeps, the golden block table through
// the quantizer's own steps, the clipping properties of both rules, and MX dequantization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mxq/numerics/formats.hpp"
#include "oracle.hpp"

namespace num = mxq::num;
using mxq::ScaleRule;

namespace {

// Finite non-negative amax values: every positive bf16 and fp16 pattern at several scales, the
// fp32 extremes, and random fp32 bits.
const std::vector<float>& amax_sweep() {
  static const std::vector<float> sweep = [] {
    std::vector<float> v;
    for (int k : {-140, -20, -8, 0, 8, 20, 100}) {
      const float scale = std::ldexp(1.0f, k);
      for (uint32_t h = 0; h < 0x8000u; ++h) {
        for (const oracle::FormatDesc* f : {&oracle::kBF16, &oracle::kFP16}) {
          const float x = static_cast<float>(oracle::decode_value(*f, h)) * scale;
          if (std::isfinite(x)) v.push_back(x);
        }
      }
    }
    for (uint32_t u : {0x00000000u, 0x00000001u, 0x003FFFFFu, 0x00400000u, 0x00400001u, 0x007FFFFFu, 0x00800000u,
                       0x7F7FFFFFu, 0x7F000000u, 0x7EFFFFFFu})
      v.push_back(oracle::float_of(u));
    // Power-of-two multiples of each format's max and their fp32 neighbours: the rceil boundaries.
    for (double max_elem : {448.0, 57344.0, 6.0}) {
      for (int k = -160; k < 128; ++k) {
        const float x = static_cast<float>(std::ldexp(max_elem, k));
        if (!std::isfinite(x) || x == 0.0f) continue;
        for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, 1e38f)}) v.push_back(y);
      }
    }
    std::mt19937 rng(7);
    for (int i = 0; i < 300000; ++i) {
      const float x = oracle::float_of(rng() & 0x7FFFFFFFu);
      if (std::isfinite(x)) v.push_back(x);
    }
    return v;
  }();
  return sweep;
}

const uint32_t kNonFiniteAmaxBits[] = {0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu};

}  // namespace

TEST(E8M0, ReciprocalAllBytes) {
  for (int b = 0; b < 256; ++b) {
    const float r = num::e8m0_reciprocal(static_cast<uint8_t>(b));
    if (b == 255) {
      EXPECT_TRUE(std::isnan(r));
    } else {
      EXPECT_EQ(oracle::bits_of(r), oracle::bits_of(static_cast<float>(std::ldexp(1.0, 127 - b)))) << b;
    }
  }
  EXPECT_EQ(oracle::bits_of(num::e8m0_reciprocal(254)), 0x00400000u);
  EXPECT_EQ(oracle::bits_of(num::e8m0_reciprocal(253)), 0x00800000u);
  EXPECT_EQ(oracle::bits_of(num::e8m0_reciprocal(0)), 0x7F000000u);
  EXPECT_EQ(num::e8m0_reciprocal(127), 1.0f);
}

TEST(E8M0, ToFloatAllBytes) {
  for (int b = 0; b < 256; ++b) {
    const float v = num::e8m0_to_float(static_cast<uint8_t>(b));
    if (b == 255) {
      EXPECT_TRUE(std::isnan(v));
      continue;
    }
    EXPECT_EQ(oracle::bits_of(v), oracle::bits_of(static_cast<float>(oracle::e8m0_value(b)))) << b;
    EXPECT_EQ(v * num::e8m0_reciprocal(static_cast<uint8_t>(b)), 1.0f) << b;
  }
  EXPECT_EQ(oracle::bits_of(num::e8m0_to_float(0)), 0x00400000u);  // 2^-127, not zero
  EXPECT_EQ(oracle::bits_of(num::e8m0_to_float(254)), 0x7F000000u);
}

TEST(E8M0, RceilFromBitsSpecTable) {
  const struct {
    uint32_t v;
    uint8_t b;
  } table[] = {{0x00000000u, 0},   {0x00400000u, 0},   {0x00400001u, 1},   {0x00800000u, 1},
               {0x3F7FFFFFu, 127}, {0x3F800000u, 127}, {0x3F800001u, 128}, {0x7F000000u, 254}};
  for (const auto& row : table) EXPECT_EQ(num::e8m0_rceil_from_bits(row.v), row.b) << std::hex << row.v;
}

TEST(E8M0, RceilFromBitsSweep) {
  long mismatches = 0;
  auto check = [&](uint32_t u) {
    const uint8_t got = num::e8m0_rceil_from_bits(u);
    const uint8_t want = oracle::rceil_of_value(oracle::float_of(u));
    if (got != want && mismatches++ < 8)
      ADD_FAILURE() << std::hex << "v=0x" << u << " got " << +got << " want " << +want;
  };
  for (uint32_t u = 0; u <= 0x00900000u; ++u) check(u);  // all subnormals and the first binade
  std::mt19937 rng(3);
  for (uint32_t e = 0; e < 255; ++e) {
    for (uint32_t m : {0x0u, 0x1u, 0x400000u, 0x400001u, 0x7FFFFFu}) check((e << 23) | m);
    for (int i = 0; i < 2000; ++i) check((e << 23) | (rng() & 0x7FFFFFu));
  }
  EXPECT_EQ(mismatches, 0);
}

template <class T>
void check_rules_against_oracle(const char* name) {
  const double max_elem = T::max_value;
  const int emax = T::Elem::emax;
  long mismatches = 0;
  for (float A : amax_sweep()) {
    const uint32_t bits = oracle::bits_of(A);
    const uint8_t rc = num::e8m0_rceil(bits, T::inv_max);
    const uint8_t fl = num::e8m0_floor(bits, emax);
    const uint8_t rc_want = oracle::rceil_scale(A, max_elem);
    const uint8_t fl_want = oracle::floor_scale(A, emax);
    if ((rc != rc_want || fl != fl_want) && mismatches++ < 8) {
      ADD_FAILURE() << name << " A=" << std::hexfloat << A << " rceil " << +rc << " want " << +rc_want << " floor "
                    << +fl << " want " << +fl_want;
    }
    EXPECT_EQ(num::block_scale<T>(bits, ScaleRule::rceil, 1.0f), rc);
    EXPECT_EQ(num::block_scale<T>(bits, ScaleRule::floor, 1.0f), fl);
  }
  for (uint32_t bits : kNonFiniteAmaxBits) {
    EXPECT_EQ(num::e8m0_rceil(bits, T::inv_max), 255) << name;
    EXPECT_EQ(num::e8m0_floor(bits, emax), 255) << name;
    EXPECT_EQ(num::block_scale<T>(bits, ScaleRule::rceil, 1.0f), 255) << name;
    EXPECT_EQ(num::block_scale<T>(bits, ScaleRule::floor, 1.0f), 255) << name;
  }
  EXPECT_EQ(mismatches, 0) << name;
}

TEST(E8M0, RulesAgainstOracleAllFormats) {
  EXPECT_EQ(oracle::bits_of(num::MXFP8::inv_max), oracle::bits_of(static_cast<float>(1.0 / 448)));
  EXPECT_EQ(oracle::bits_of(num::MXFP8_E5M2::inv_max), oracle::bits_of(static_cast<float>(1.0 / 57344)));
  EXPECT_EQ(oracle::bits_of(num::MXFP4::inv_max), oracle::bits_of(static_cast<float>(1.0 / 6)));
  check_rules_against_oracle<num::MXFP8>("mxfp8");
  check_rules_against_oracle<num::MXFP8_E5M2>("mxfp8_e5m2");
  check_rules_against_oracle<num::MXFP4>("mxfp4");
}

// ---- golden block table of docs/spec.md section 2, through the quantizer's own steps ---------------

namespace {

struct BlockResult {
  uint8_t scale;
  std::vector<uint32_t> codes;
};

// What a backend does for one block: amax over abs bits (NaN wins), scale byte, multiplier, codes.
template <class T>
BlockResult quantize_block(const std::vector<float>& x, ScaleRule rule) {
  uint32_t amax = 0;
  for (float v : x) amax = std::max(amax, oracle::bits_of(v) & 0x7FFFFFFFu);
  BlockResult r;
  r.scale = num::block_scale<T>(amax, rule, 1.0f);
  const bool poisoned = r.scale == T::scale_nan;
  const float mult = poisoned ? 0.0f : num::element_multiplier<T>(r.scale, 1.0f);
  for (float v : x) r.codes.push_back(num::encode_element<T>(v, mult, poisoned));
  return r;
}

std::vector<float> block_of(float v) { return std::vector<float>(32, v); }
// Alternating +v / -v.
std::vector<float> signed_block_of(float v) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = i % 2 ? -v : v;
  return x;
}

float bf16(uint16_t h) { return static_cast<float>(oracle::decode_value(oracle::kBF16, h)); }

void expect_block(const std::vector<float>& x, ScaleRule rule, uint8_t scale, uint32_t pos_code, const char* row) {
  const BlockResult r = quantize_block<num::MXFP8>(x, rule);
  EXPECT_EQ(r.scale, scale) << row << (rule == ScaleRule::floor ? " floor" : " rceil");
  for (size_t i = 0; i < x.size(); ++i) {
    const uint32_t want = std::signbit(x[i]) ? (pos_code | 0x80u) : pos_code;
    ASSERT_EQ(r.codes[i], want) << row << " element " << i;
  }
}

}  // namespace

TEST(E8M0, GoldenBlockTable) {
  const ScaleRule F = ScaleRule::floor, R = ScaleRule::rceil;
  expect_block(block_of(0.0f), F, 0, 0x00, "all 0");
  expect_block(block_of(0.0f), R, 0, 0x00, "all 0");
  expect_block(block_of(bf16(0x0080)), F, 0, 0x40, "all 2^-126");
  expect_block(block_of(bf16(0x0080)), R, 0, 0x40, "all 2^-126");
  expect_block(signed_block_of(448.0f), F, 127, 0x7E, "+-448");
  expect_block(signed_block_of(448.0f), R, 127, 0x7E, "+-448");
  expect_block(signed_block_of(480.0f), F, 127, 0x7E, "+-480");
  expect_block(signed_block_of(480.0f), R, 128, 0x77, "+-480");
  expect_block(block_of(bf16(0x0001)), F, 0, 0x08, "all 2^-133");
  expect_block(block_of(bf16(0x0001)), R, 0, 0x08, "all 2^-133");
  const float x35 = oracle::float_of(0x40600001u);
  expect_block(block_of(x35), F, 120, 0x7E, "fp32 0x40600001");  // 448.00003 saturates
  expect_block(block_of(x35), R, 121, 0x76, "fp32 0x40600001");
  const float x512 = oracle::float_of(0x43FFFFFFu);
  expect_block(block_of(x512), F, 127, 0x7E, "fp32 0x43FFFFFF");
  expect_block(block_of(x512), R, 128, 0x78, "fp32 0x43FFFFFF");  // 255.99998 rounds to 256

  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (ScaleRule rule : {F, R}) {
    for (float bad : {inf, -inf, nan, -nan}) {
      std::vector<float> x = block_of(1.0f);
      x[17] = bad;
      const BlockResult r = quantize_block<num::MXFP8>(x, rule);
      EXPECT_EQ(r.scale, 255);
      for (uint32_t c : r.codes) ASSERT_EQ(c, 0x7Fu);
      const BlockResult r4 = quantize_block<num::MXFP4>(x, rule);
      EXPECT_EQ(r4.scale, 255);
      for (uint32_t c : r4.codes) ASSERT_EQ(c, 0x7u);
    }
  }
}

// ---- clipping properties ------------------------------------------------------------------------

// rceil never clips: 2^(b-127) * max_elem >= A. The one exception allowed by docs/spec.md's formula is
// when v = fl(A * fl(1/max)) is an fp32 subnormal, whose rounding may land exactly on 2^-127
// (b = 0) while A / max_elem is a hair above it; the clip is then below 2^-20 relative.
template <class T>
void check_rceil_no_clip(const char* name) {
  const double max_elem = T::max_value;
  long exceptions = 0;
  for (float A : amax_sweep()) {
    const uint8_t b = num::e8m0_rceil(oracle::bits_of(A), T::inv_max);
    const double covered = std::ldexp(max_elem, b - 127);  // exact
    if (covered >= A) continue;
    ++exceptions;
    ASSERT_EQ(b, 0) << name << " clips A=" << std::hexfloat << A;
    ASSERT_LT((A - covered) / A, std::ldexp(1.0, -20)) << name << " A=" << std::hexfloat << A;
  }
  // The tightness half: b is the smallest such byte up to v's rounding (never more than one off).
  for (float A : amax_sweep()) {
    const uint8_t b = num::e8m0_rceil(oracle::bits_of(A), T::inv_max);
    if (b > 0) {
      ASSERT_LT(std::ldexp(max_elem, b - 128), A * (1 + std::ldexp(1.0, -22))) << name;
    }
  }
  ::testing::Test::RecordProperty(std::string(name) + "_subnormal_v_exceptions", static_cast<int>(exceptions));
}

// floor clips the block maximum by less than 12.5 % (fp8) / 25 % (fp4).
template <class T>
void check_floor_clip_bound(double max_clip, const char* name) {
  const double max_elem = T::max_value;
  for (float A : amax_sweep()) {
    const uint8_t b = num::e8m0_floor(oracle::bits_of(A), T::Elem::emax);
    const double y = std::ldexp(static_cast<double>(A), 127 - b);  // A / scale, exact
    const double clip = y > max_elem ? (y - max_elem) / y : 0.0;
    ASSERT_LT(clip, max_clip) << name << " A=" << std::hexfloat << A;
    // The scale is never more than needed: y >= 2^emax unless the scale is clamped at 2^-127.
    if (b > 0) {
      ASSERT_GE(y, std::ldexp(1.0, T::Elem::emax)) << name;
    }
  }
}

// The exception above, pinned: A = max_elem * 2^-127 + 1 ulp gives v = 2^-127 exactly (0x00400000),
// so b = 0 and the block maximum saturates to max_elem (a 2^-23 relative clip). This is docs/spec.md's
// formula applied literally (v is an fp32 product), not an implementation slip.
TEST(E8M0, RceilSubnormalVRoundsOntoTwoToMinus127) {
  const struct {
    uint32_t A;
    float inv_max;
  } cases[] = {
      {0x04600001u, num::MXFP8::inv_max}, {0x07E00001u, num::MXFP8_E5M2::inv_max}, {0x01400001u, num::MXFP4::inv_max}};
  for (const auto& c : cases) {
    EXPECT_EQ(oracle::bits_of(oracle::float_of(c.A) * c.inv_max), 0x00400000u);
    EXPECT_EQ(num::e8m0_rceil(c.A, c.inv_max), 0) << std::hex << c.A;
  }
  EXPECT_EQ(num::encode<num::E4M3>(oracle::float_of(0x04600001u) * num::e8m0_reciprocal(0)), 0x7Eu);
}

TEST(E8M0, RceilNeverClips) {
  check_rceil_no_clip<num::MXFP8>("mxfp8");
  check_rceil_no_clip<num::MXFP8_E5M2>("mxfp8_e5m2");
  check_rceil_no_clip<num::MXFP4>("mxfp4");
}

TEST(E8M0, FloorClipsWithinSpecBound) {
  check_floor_clip_bound<num::MXFP8>(0.125, "mxfp8");
  check_floor_clip_bound<num::MXFP8_E5M2>(0.125, "mxfp8_e5m2");
  check_floor_clip_bound<num::MXFP4>(0.25, "mxfp4");
  // The bound is reached: A just under 2^(emax+1) * 2^k.
  const float A = oracle::float_of(0x43FFFFFFu);  // just under 512
  const double y = std::ldexp(static_cast<double>(A), 127 - num::e8m0_floor(oracle::bits_of(A), 8));
  EXPECT_GT((y - 448.0) / y, 0.1249);
}

// ---- MX dequantization (docs/spec.md section 7) ------------------------------------------------------

template <class T>
void check_mx_dequantize(const oracle::FormatDesc& fmt, const char* name) {
  for (uint32_t code = 0; code < (1u << fmt.bits()); ++code) {
    const double q = oracle::decode_value(fmt, code);
    for (int b = 0; b < 256; ++b) {
      const float got = num::dequantize_element<T>(code, static_cast<uint8_t>(b), 1.0f);
      const double want = q * oracle::e8m0_value(static_cast<uint8_t>(b));  // exact, then round
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << name << " code " << code << " b " << b;
      } else {
        ASSERT_EQ(oracle::bits_of(got), oracle::bits_of(static_cast<float>(want)))
            << name << " code " << code << " b " << b;
      }
    }
  }
}

TEST(E8M0, MxDequantizeAllCodesAllScales) {
  check_mx_dequantize<num::MXFP8>(oracle::kE4M3, "mxfp8");
  check_mx_dequantize<num::MXFP8_E5M2>(oracle::kE5M2, "mxfp8_e5m2");
  check_mx_dequantize<num::MXFP4>(oracle::kE2M1, "mxfp4");
  EXPECT_EQ(num::dequantize_element<num::MXFP8>(0x38, 0, 1.0f), 0x1p-127f);  // byte 0 is not zero
}

static_assert(mxq::num::e8m0_rceil_from_bits(0x3F800001u) == 128, "constexpr rceil");
static_assert(mxq::num::e8m0_floor(0x43F00000u, 8) == 127, "constexpr floor of 480");
static_assert(mxq::num::e8m0_reciprocal(126) == 2.0f, "constexpr reciprocal");
