// FP8 (E4M3, E5M2) and FP4 (E2M1) element codecs against the independent oracle: every bf16 and
// fp16 bit pattern at several power-of-two scales, every midpoint of each format's grid, random
// fp32 patterns, special values, and all codes of the decoders.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include "mxq/numerics/minifloat.hpp"
#include "oracle.hpp"

namespace num = mxq::num;

namespace {

// The scale exponents a block scale can put on an input: from deep fp32 subnormals to overflow.
constexpr int kScaleExps[] = {-140, -20, -8, -1, 0, 1, 8, 20, 100};

// Counts mismatches between the implementation and the oracle; keeps the first few as text.
struct MismatchLog {
  long count = 0;
  std::string first;
  void add(const char* what, float x, uint32_t got, uint32_t want) {
    if (count++ < 8) {
      char line[160];
      std::snprintf(line, sizeof line, "%s: x=%a (0x%08X) got 0x%02X want 0x%02X\n", what, static_cast<double>(x),
                    oracle::bits_of(x), got, want);
      first += line;
    }
  }
};

template <class F>
void check_encode(const oracle::ValueTable& t, float x, const char* what, MismatchLog& log) {
  const uint32_t got = num::encode<F>(x);
  const uint32_t want = oracle::encode_satfinite(t, x);
  if (got != want) log.add(what, x, got, want);
}

// Every 16-bit pattern of `src` (widened by the oracle's own decoder), times 2^k in fp32.
template <class F>
void check_all_16bit_patterns(const oracle::ValueTable& t, const oracle::FormatDesc& src, const char* what) {
  MismatchLog log;
  for (int k : kScaleExps) {
    const float scale = std::ldexp(1.0f, k);
    for (uint32_t h = 0; h < 0x10000u; ++h) {
      const float widened = static_cast<float>(oracle::decode_value(src, h));
      check_encode<F>(t, widened * scale, what, log);
    }
  }
  EXPECT_EQ(log.count, 0) << log.first;
}

template <class F>
void check_midpoints(const oracle::ValueTable& t, const char* what) {
  MismatchLog log;
  for (size_t i = 0; i + 1 < t.mag.size(); ++i) {
    const float mid = static_cast<float>((t.mag[i] + t.mag[i + 1]) / 2);  // exact in fp32
    ASSERT_EQ(static_cast<double>(mid), (t.mag[i] + t.mag[i + 1]) / 2);
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      check_encode<F>(t, x, what, log);
      check_encode<F>(t, -x, what, log);
    }
  }
  // Past the largest value: a would-be midpoint, its neighbours, and far beyond.
  const double max = t.max_value();
  const double step = max - t.mag[t.mag.size() - 2];
  for (double v : {max + step / 2, max + step, 2 * max, 1e30}) {
    const float x = static_cast<float>(v);
    for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, 1e38f)}) {
      check_encode<F>(t, y, what, log);
      check_encode<F>(t, -y, what, log);
    }
  }
  EXPECT_EQ(log.count, 0) << log.first;
}

template <class F>
void check_random_fp32(const oracle::ValueTable& t, const char* what) {
  MismatchLog log;
  std::mt19937 rng(1234);
  for (int i = 0; i < 400000; ++i) check_encode<F>(t, oracle::float_of(rng()), what, log);
  // Exponents near the target range, where rounding matters most.
  std::uniform_int_distribution<int> exp(100, 160);
  for (int i = 0; i < 400000; ++i) {
    const uint32_t u = (rng() & 0x807FFFFFu) | (static_cast<uint32_t>(exp(rng)) << 23);
    check_encode<F>(t, oracle::float_of(u), what, log);
  }
  EXPECT_EQ(log.count, 0) << log.first;
}

template <class F>
void check_specials(const oracle::ValueTable& t, const char* what) {
  MismatchLog log;
  const float inf = std::numeric_limits<float>::infinity();
  const uint32_t special_bits[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu, 0x00800000u,
                                   0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7F800001u, 0xFF800001u,
                                   0x7FC00000u, 0xFFC00000u, 0x7FFFFFFFu, 0xFFFFFFFFu};
  for (uint32_t u : special_bits) check_encode<F>(t, oracle::float_of(u), what, log);
  // Around half the smallest subnormal: at or below it rounds to +-0, above it to the subnormal.
  const float half_min = static_cast<float>(t.mag[1] / 2);
  for (float x : {half_min, std::nextafter(half_min, 0.0f), std::nextafter(half_min, inf)}) {
    check_encode<F>(t, x, what, log);
    check_encode<F>(t, -x, what, log);
  }
  EXPECT_EQ(log.count, 0) << log.first;
}

struct Tables {
  oracle::ValueTable e4m3 = oracle::make_table(oracle::kE4M3);
  oracle::ValueTable e5m2 = oracle::make_table(oracle::kE5M2);
  oracle::ValueTable e2m1 = oracle::make_table(oracle::kE2M1);
};
const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

// The oracle itself, against the formats' published facts.
TEST(OracleTables, MatchPublishedFormats) {
  const Tables& t = tables();
  EXPECT_EQ(t.e4m3.max_code(), 0x7Eu);
  EXPECT_EQ(t.e4m3.max_value(), 448.0);
  EXPECT_EQ(t.e4m3.mag[1], std::ldexp(1.0, -9));
  EXPECT_EQ(t.e5m2.max_code(), 0x7Bu);
  EXPECT_EQ(t.e5m2.max_value(), 57344.0);
  EXPECT_EQ(t.e5m2.mag[1], std::ldexp(1.0, -16));
  const double e2m1[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  ASSERT_EQ(t.e2m1.mag.size(), 8u);
  for (int c = 0; c < 8; ++c) EXPECT_EQ(t.e2m1.mag[c], e2m1[c]) << c;
}

TEST(MinifloatEncode, E4M3AllBf16PatternsAtScales) {
  check_all_16bit_patterns<num::E4M3>(tables().e4m3, oracle::kBF16, "e4m3<-bf16");
}
TEST(MinifloatEncode, E4M3AllFp16PatternsAtScales) {
  check_all_16bit_patterns<num::E4M3>(tables().e4m3, oracle::kFP16, "e4m3<-fp16");
}
TEST(MinifloatEncode, E5M2AllBf16PatternsAtScales) {
  check_all_16bit_patterns<num::E5M2>(tables().e5m2, oracle::kBF16, "e5m2<-bf16");
}
TEST(MinifloatEncode, E5M2AllFp16PatternsAtScales) {
  check_all_16bit_patterns<num::E5M2>(tables().e5m2, oracle::kFP16, "e5m2<-fp16");
}
TEST(MinifloatEncode, E2M1AllBf16PatternsAtScales) {
  check_all_16bit_patterns<num::E2M1>(tables().e2m1, oracle::kBF16, "e2m1<-bf16");
}
TEST(MinifloatEncode, E2M1AllFp16PatternsAtScales) {
  check_all_16bit_patterns<num::E2M1>(tables().e2m1, oracle::kFP16, "e2m1<-fp16");
}

TEST(MinifloatEncode, MidpointsAndSaturation) {
  check_midpoints<num::E4M3>(tables().e4m3, "e4m3");
  check_midpoints<num::E5M2>(tables().e5m2, "e5m2");
  check_midpoints<num::E2M1>(tables().e2m1, "e2m1");
}

TEST(MinifloatEncode, RandomFp32) {
  check_random_fp32<num::E4M3>(tables().e4m3, "e4m3");
  check_random_fp32<num::E5M2>(tables().e5m2, "e5m2");
  check_random_fp32<num::E2M1>(tables().e2m1, "e2m1");
}

TEST(MinifloatEncode, SpecialValues) {
  check_specials<num::E4M3>(tables().e4m3, "e4m3");
  check_specials<num::E5M2>(tables().e5m2, "e5m2");
  check_specials<num::E2M1>(tables().e2m1, "e2m1");
}

// Hand-written cases of docs/spec.md section 2, independent of both oracle and implementation.
TEST(MinifloatEncode, HandCases) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(num::encode<num::E4M3>(448.0f), 0x7Eu);
  EXPECT_EQ(num::encode<num::E4M3>(-448.0f), 0xFEu);
  EXPECT_EQ(num::encode<num::E4M3>(464.0f), 0x7Eu);  // midpoint to a code that is NaN
  EXPECT_EQ(num::encode<num::E4M3>(1e30f), 0x7Eu);
  EXPECT_EQ(num::encode<num::E4M3>(inf), 0x7Eu);
  EXPECT_EQ(num::encode<num::E4M3>(-inf), 0xFEu);
  EXPECT_EQ(num::encode<num::E4M3>(nan), 0x7Fu);
  EXPECT_EQ(num::encode<num::E4M3>(-nan), 0x7Fu);
  EXPECT_EQ(num::encode<num::E4M3>(-0.0f), 0x80u);
  EXPECT_EQ(num::encode<num::E4M3>(0x1p-10f), 0x00u);  // tie between 0 and 2^-9: even is 0
  EXPECT_EQ(num::encode<num::E4M3>(-0x1p-10f), 0x80u);
  EXPECT_EQ(num::encode<num::E4M3>(0x1.000002p-10f), 0x01u);
  EXPECT_EQ(num::encode<num::E4M3>(0x1.8p-9f), 0x02u);  // 1.5 quanta: tie to even code 2
  EXPECT_EQ(num::encode<num::E4M3>(0x1.ep-7f), 0x08u);  // 15/8 * 2^-7 rounds up to 2^-6
  EXPECT_EQ(num::encode<num::E4M3>(240.0f), 0x77u);
  EXPECT_EQ(num::encode<num::E4M3>(2.0f), 0x40u);
  EXPECT_EQ(num::encode<num::E4M3>(0x1p-6f), 0x08u);
  EXPECT_EQ(num::encode<num::E5M2>(57344.0f), 0x7Bu);
  EXPECT_EQ(num::encode<num::E5M2>(61440.0f), 0x7Bu);  // would round to Inf: saturates
  EXPECT_EQ(num::encode<num::E5M2>(inf), 0x7Bu);
  EXPECT_EQ(num::encode<num::E5M2>(-inf), 0xFBu);
  EXPECT_EQ(num::encode<num::E5M2>(nan), 0x7Fu);
  EXPECT_EQ(num::encode<num::E5M2>(0x1p-17f), 0x00u);
  EXPECT_EQ(num::encode<num::E5M2>(-0.0f), 0x80u);
  const float e2m1_in[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.5f, 100.0f};
  const uint32_t e2m1_out[] = {0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6, 0x7, 0x7};
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(num::encode<num::E2M1>(e2m1_in[i]), e2m1_out[i]) << e2m1_in[i];
    EXPECT_EQ(num::encode<num::E2M1>(-e2m1_in[i]), e2m1_out[i] | 0x8u) << -e2m1_in[i];
  }
  EXPECT_EQ(num::encode<num::E2M1>(nan), 0x7u);
  EXPECT_EQ(num::encode<num::E2M1>(-0.0f), 0x8u);
  EXPECT_EQ(num::encode<num::E2M1>(-inf), 0xFu);
}

template <class F>
void check_decoder(const oracle::FormatDesc& fmt) {
  for (uint32_t code = 0; code < (1u << fmt.bits()); ++code) {
    const double want = oracle::decode_value(fmt, code);
    const float got = num::decode<F>(code);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << code;
    } else {
      EXPECT_EQ(oracle::bits_of(got), oracle::bits_of(static_cast<float>(want)))
          << "code " << code << " got " << got << " want " << want;
    }
  }
}

TEST(MinifloatDecode, AllCodes) {
  check_decoder<num::E4M3>(oracle::kE4M3);
  check_decoder<num::E5M2>(oracle::kE5M2);
  check_decoder<num::E2M1>(oracle::kE2M1);
  // The specials named by docs/spec.md.
  EXPECT_TRUE(std::isnan(num::decode<num::E4M3>(0x7F)));
  EXPECT_TRUE(std::isnan(num::decode<num::E4M3>(0xFF)));
  EXPECT_EQ(num::decode<num::E5M2>(0x7C), std::numeric_limits<float>::infinity());
  EXPECT_EQ(num::decode<num::E5M2>(0xFC), -std::numeric_limits<float>::infinity());
  for (uint32_t c : {0x7Du, 0x7Eu, 0x7Fu, 0xFDu, 0xFEu, 0xFFu}) EXPECT_TRUE(std::isnan(num::decode<num::E5M2>(c))) << c;
  EXPECT_EQ(num::decode<num::E2M1>(0x7), 6.0f);
  EXPECT_EQ(num::decode<num::E2M1>(0xF), -6.0f);
}

// Every finite code decodes and re-encodes to itself (-0 included).
TEST(MinifloatDecode, RoundTripFiniteCodes) {
  for (uint32_t c = 0; c < 256; ++c) {
    if (!std::isnan(num::decode<num::E4M3>(c))) {
      EXPECT_EQ(num::encode<num::E4M3>(num::decode<num::E4M3>(c)), c) << c;
    }
    if (std::isfinite(num::decode<num::E5M2>(c))) {
      EXPECT_EQ(num::encode<num::E5M2>(num::decode<num::E5M2>(c)), c) << c;
    }
  }
  for (uint32_t c = 0; c < 16; ++c) EXPECT_EQ(num::encode<num::E2M1>(num::decode<num::E2M1>(c)), c);
}

// The codecs are usable in constant expressions (host and device share one constexpr definition).
static_assert(num::encode<num::E4M3>(448.0f) == 0x7E, "e4m3 max");
static_assert(num::encode<num::E4M3>(-0.0f) == 0x80, "e4m3 -0");
static_assert(num::encode<num::E5M2>(1.0f) == 0x3C, "e5m2 one");
static_assert(num::encode<num::E2M1>(5.0f) == 0x6, "e2m1 tie to even");
static_assert(num::decode<num::E4M3>(0x7E) == 448.0f, "e4m3 decode max");
static_assert(num::decode<num::E2M1>(0xF) == -6.0f, "e2m1 decode -max");
