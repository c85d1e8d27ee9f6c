// NVFP4 two-level scaling (docs/spec.md section 3) against the oracle: tensor scale (0, NaN, Inf, tiny T,
// sweep), block scale in TransformerEngine's operation order, element multiplier, whole-block
// pipelines, poison, the E2M1 grid's ties, and dequantization (section 7).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "mxq/numerics/formats.hpp"
#include "oracle.hpp"

namespace num = mxq::num;
using mxq::ScaleRule;

namespace {

constexpr float kFltMax = std::numeric_limits<float>::max();
const float kOneSixth = static_cast<float>(1.0 / 6);  // fl(1/6)

struct TensorScale {
  float s_enc, s_dec;
};

TensorScale oracle_tensor_scale(float T) {
  if (T == 0.0f || !std::isfinite(T)) return {1.0f, 1.0f};
  const float s_enc = std::min(oracle::div_f32(2688.0f, T), kFltMax);  // Inf clamps too
  return {s_enc, oracle::div_f32(1.0f, s_enc)};
}

uint8_t oracle_block_scale(const oracle::ValueTable& e4m3, float A, float s_enc) {
  if (!std::isfinite(A)) return 0x7F;
  return static_cast<uint8_t>(oracle::encode_satfinite(e4m3, oracle::mul_f32(A, oracle::mul_f32(s_enc, kOneSixth))));
}

float oracle_element_multiplier(uint8_t sf, float s_dec) {
  const float t = oracle::mul_f32(static_cast<float>(oracle::decode_value(oracle::kE4M3, sf)), s_dec);
  return std::min(oracle::div_f32(1.0f, t), kFltMax);  // 1/0 = Inf clamps to FLT_MAX
}

const oracle::ValueTable& e4m3_table() {
  static const oracle::ValueTable t = oracle::make_table(oracle::kE4M3);
  return t;
}
const oracle::ValueTable& e2m1_table() {
  static const oracle::ValueTable t = oracle::make_table(oracle::kE2M1);
  return t;
}

// Tensor amaxes: powers of two over the whole fp32 range with neighbours, bf16 patterns, random bits.
std::vector<float> tensor_amax_sweep() {
  std::vector<float> v;
  for (int k = -149; k < 128; ++k) {
    const float x = std::ldexp(1.0f, k);
    for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, 1e38f), 3 * x, 2688 * x}) {
      if (std::isfinite(y) && y > 0) v.push_back(y);
    }
  }
  for (uint32_t h = 1; h < 0x7F80u; h += 3) v.push_back(oracle::float_of(h << 16));
  std::mt19937 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const float x = oracle::float_of(rng() & 0x7FFFFFFFu);
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

// One NVFP4 block through the implementation's steps, as a backend runs them.
struct Block {
  uint8_t sf;
  std::vector<uint32_t> codes;
};
Block quantize_block(const std::vector<float>& x, float s_enc, float s_dec) {
  uint32_t amax = 0;
  for (float v : x) amax = std::max(amax, oracle::bits_of(v) & 0x7FFFFFFFu);
  Block b;
  b.sf = num::block_scale<num::NVFP4>(amax, ScaleRule::rceil, s_enc);
  const bool poisoned = b.sf == num::NVFP4::scale_nan;
  const float e = poisoned ? 0.0f : num::element_multiplier<num::NVFP4>(b.sf, s_dec);
  for (float v : x) b.codes.push_back(num::encode_element<num::NVFP4>(v, e, poisoned));
  return b;
}

}  // namespace

TEST(Nvfp4TensorScale, SpecialAmaxes) {
  const float inf = std::numeric_limits<float>::infinity();
  // Negative T (a caller-given amax; max |x| never is) counts as 0: UE4M3 block scales stay >= 0.
  for (float T : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), -1.0f, -2688.0f, -0x1p-149f}) {
    const num::Nvfp4TensorScale s = num::nvfp4_tensor_scale(T);
    EXPECT_EQ(s.s_enc, 1.0f) << T;
    EXPECT_EQ(s.s_dec, 1.0f) << T;
  }
  const num::Nvfp4TensorScale one = num::nvfp4_tensor_scale(2688.0f);
  EXPECT_EQ(one.s_enc, 1.0f);
  EXPECT_EQ(one.s_dec, 1.0f);
  // Tiny T: 2688 / T overflows and clamps to FLT_MAX; s_dec is fl(1 / FLT_MAX), a subnormal.
  for (float T : {0x1p-149f, 0x1p-126f, 0x1p-120f, 7e-36f}) {
    const num::Nvfp4TensorScale s = num::nvfp4_tensor_scale(T);
    EXPECT_EQ(s.s_enc, kFltMax) << T;
    EXPECT_EQ(oracle::bits_of(s.s_dec), oracle::bits_of(oracle::div_f32(1.0f, kFltMax))) << T;
    EXPECT_GT(s.s_dec, 0.0f);
  }
}

TEST(Nvfp4TensorScale, SweepAgainstOracle) {
  long mismatches = 0, not_involutive = 0;
  for (float T : tensor_amax_sweep()) {
    const num::Nvfp4TensorScale got = num::nvfp4_tensor_scale(T);
    const TensorScale want = oracle_tensor_scale(T);
    if ((oracle::bits_of(got.s_enc) != oracle::bits_of(want.s_enc) ||
         oracle::bits_of(got.s_dec) != oracle::bits_of(want.s_dec)) &&
        mismatches++ < 8) {
      ADD_FAILURE() << std::hexfloat << "T=" << T << " s_enc " << got.s_enc << " want " << want.s_enc << " s_dec "
                    << got.s_dec << " want " << want.s_dec;
    }
    if (oracle::div_f32(1.0f, got.s_dec) != got.s_enc) ++not_involutive;
  }
  EXPECT_EQ(mismatches, 0);
  // The sweep holds tensor scales where 1/(1/s) != s: s_dec must come from s_enc, not vice versa.
  EXPECT_GT(not_involutive, 0);
}

TEST(Nvfp4BlockScale, SweepAgainstOracle) {
  std::vector<float> s_encs;
  for (float T : {1.0f, 2688.0f, 0.37f, 1e-30f, 1e-38f, 1e30f, 12345.678f, 0x1p-149f})
    s_encs.push_back(num::nvfp4_tensor_scale(T).s_enc);
  std::mt19937 rng(5);
  for (int i = 0; i < 40; ++i)
    s_encs.push_back(num::nvfp4_tensor_scale(oracle::float_of((rng() & 0x3FFFFFFFu) + 0x10000000u)).s_enc);

  long mismatches = 0, order_matters = 0;
  for (float s_enc : s_encs) {
    auto check = [&](float A) {
      const uint32_t bits = oracle::bits_of(A);
      const uint8_t got = num::nvfp4_block_scale(bits, s_enc);
      const uint8_t want = oracle_block_scale(e4m3_table(), A, s_enc);
      if (got != want && mismatches++ < 8)
        ADD_FAILURE() << std::hexfloat << "A=" << A << " s_enc=" << s_enc << " got " << +got << " want " << +want;
      EXPECT_EQ(num::block_scale<num::NVFP4>(bits, ScaleRule::floor, s_enc), got);
      const uint8_t other_order = static_cast<uint8_t>(
          oracle::encode_satfinite(e4m3_table(), oracle::mul_f32(oracle::mul_f32(A, s_enc), kOneSixth)));
      if (other_order != want) ++order_matters;
    };
    for (uint32_t h = 0; h < 0x7F80u; ++h) check(oracle::float_of(h << 16));  // every bf16 amax
    for (int i = 0; i < 20000; ++i) check(oracle::float_of(rng() & 0x7F7FFFFFu));
  }
  EXPECT_EQ(mismatches, 0);
  // The sweep distinguishes A * (s_enc * fl(1/6)) from (A * s_enc) * fl(1/6).
  EXPECT_GT(order_matters, 0);
}

TEST(Nvfp4BlockScale, PoisonAndSign) {
  for (uint32_t bits : {0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu}) {
    EXPECT_EQ(num::nvfp4_block_scale(bits, 1.0f), 0x7F);
    EXPECT_EQ(num::block_scale<num::NVFP4>(bits, ScaleRule::rceil, 1.0f), 0x7F);
  }
  EXPECT_EQ(num::nvfp4_block_scale(0, 1.0f), 0x00);
  EXPECT_EQ(num::nvfp4_block_scale(0x7F7FFFFFu, kFltMax), 0x7E);         // overflow saturates to 448
  EXPECT_EQ(num::nvfp4_block_scale(oracle::bits_of(6.0f), 1.0f), 0x38);  // fl(6 * fl(1/6)) = 1
}

TEST(Nvfp4ElementMultiplier, AllScalesAgainstOracle) {
  std::vector<float> s_decs = {1.0f, kFltMax, oracle::div_f32(1.0f, kFltMax), 0x1p-149f};
  for (float T : {1.0f, 0.37f, 1e-30f, 1e30f, 12345.678f, 3e38f}) s_decs.push_back(num::nvfp4_tensor_scale(T).s_dec);
  for (float s_dec : s_decs) {
    for (uint32_t sf = 0; sf <= 0x7E; ++sf) {
      const float got = num::nvfp4_element_multiplier(static_cast<uint8_t>(sf), s_dec);
      const float want = oracle_element_multiplier(static_cast<uint8_t>(sf), s_dec);
      ASSERT_EQ(oracle::bits_of(got), oracle::bits_of(want))
          << std::hexfloat << "sf=" << sf << " s_dec=" << s_dec << " got " << got;
      ASSERT_EQ(oracle::bits_of(num::element_multiplier<num::NVFP4>(static_cast<uint8_t>(sf), s_dec)),
                oracle::bits_of(got));
    }
  }
  EXPECT_EQ(num::nvfp4_element_multiplier(0, 1.0f), kFltMax);  // sf = 0: 1/0 clamps
}

// Whole blocks: the implementation's steps against the oracle's, element by element.
TEST(Nvfp4Pipeline, RandomBlocksAgainstOracle) {
  std::mt19937 rng(99);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-140, 120);
  long mismatches = 0;
  for (int it = 0; it < 20000; ++it) {
    const float scale = std::ldexp(1.0f, exp(rng));
    std::vector<float> x(16);
    float amax = 0;
    for (float& v : x) {
      v = normal(rng) * scale;
      amax = std::max(amax, std::fabs(v));
    }
    // Usually the true tensor amax; sometimes a smaller or larger caller-given one.
    const float T = it % 4 == 0 ? amax * 0.25f : (it % 4 == 1 ? amax * 1000.0f : amax);
    const num::Nvfp4TensorScale ts = num::nvfp4_tensor_scale(T);
    const Block got = quantize_block(x, ts.s_enc, ts.s_dec);
    const uint8_t sf = oracle_block_scale(e4m3_table(), amax, ts.s_enc);
    const float e = oracle_element_multiplier(sf, ts.s_dec);
    bool ok = got.sf == sf;
    for (int i = 0; i < 16; ++i)
      ok = ok && got.codes[i] == oracle::encode_satfinite(e2m1_table(), oracle::mul_f32(x[i], e));
    if (!ok && mismatches++ < 8) ADD_FAILURE() << "block " << it << " sf " << +got.sf << " want " << +sf;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Nvfp4Pipeline, PoisonedBlock) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> x(16, 1.0f);
    x[3] = bad;
    const Block b = quantize_block(x, 1.0f, 1.0f);
    EXPECT_EQ(b.sf, 0x7F);
    for (uint32_t c : b.codes) EXPECT_EQ(c, 0x7u);
  }
}

// s_enc = 1 and a block amax of 6 give sf = 1.0 (0x38) and e = 1, so x * e = x lands exactly on
// the E2M1 grid's midpoints: each must round to the even code.
TEST(Nvfp4Pipeline, E2M1GridTies) {
  const std::vector<float> x = {6.0f,   0.25f, 0.75f,  1.25f,  1.75f, 2.5f,  3.5f, 5.0f,
                                -0.25f, -5.0f, -1.75f, -0.75f, -2.5f, -3.5f, 0.0f, -0.0f};
  const std::vector<uint32_t> want = {0x7, 0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6, 0x8, 0xE, 0xC, 0xA, 0xC, 0xE, 0x0, 0x8};
  const Block b = quantize_block(x, 1.0f, 1.0f);
  EXPECT_EQ(b.sf, 0x38);
  EXPECT_EQ(num::nvfp4_element_multiplier(b.sf, 1.0f), 1.0f);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b.codes[i], want[i]) << "element " << i << " x=" << x[i];
}

TEST(Nvfp4Dequantize, AllCodesAllScales) {
  std::vector<float> s_decs = {1.0f, oracle::div_f32(1.0f, kFltMax)};
  for (float T : {0.37f, 1e-30f, 1e30f, 12345.678f}) s_decs.push_back(num::nvfp4_tensor_scale(T).s_dec);
  for (float s_dec : s_decs) {
    for (uint32_t sf = 0; sf < 256; ++sf) {
      for (uint32_t code = 0; code < 16; ++code) {
        const float got = num::dequantize_element<num::NVFP4>(code, static_cast<uint8_t>(sf), s_dec);
        const double sfv = oracle::decode_value(oracle::kE4M3, sf);
        if (std::isnan(sfv)) {
          ASSERT_TRUE(std::isnan(got)) << "sf " << sf;
          continue;
        }
        const float q = static_cast<float>(oracle::decode_value(oracle::kE2M1, code));
        const float want = oracle::mul_f32(oracle::mul_f32(q, static_cast<float>(sfv)), s_dec);
        ASSERT_EQ(oracle::bits_of(got), oracle::bits_of(want))
            << "code " << code << " sf " << sf << std::hexfloat << " s_dec " << s_dec;
      }
    }
  }
  EXPECT_TRUE(std::isnan(num::dequantize_element<num::NVFP4>(0x7, 0x7F, 1.0f)));
}

static_assert(mxq::num::nvfp4_tensor_scale(2688.0f).s_enc == 1.0f, "constexpr tensor scale");
static_assert(mxq::num::nvfp4_block_scale(0x40C00000u, 1.0f) == 0x38, "constexpr block scale of 6");
static_assert(mxq::num::nvfp4_element_multiplier(0x38, 1.0f) == 1.0f, "constexpr multiplier");
