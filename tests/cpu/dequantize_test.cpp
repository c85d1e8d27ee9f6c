// CPU dequantize through the public API (backend = cpu): values against the definition of docs/spec.md
// section 7 evaluated with the independent oracle, layouts and groups against each other, hand-made
// scale bytes, and output rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <mxq/mxq.hpp>

#include "numerics/oracle.hpp"
#include "support/quantize_runner.hpp"
#include "support/test_util.hpp"

namespace mxq::test {
namespace {

const Format kFormats[] = {Format::mxfp8, Format::mxfp8_e5m2, Format::mxfp4, Format::nvfp4};

QuantizeRequest request(Format f, Direction d, ScaleLayout l) {
  QuantizeRequest r;
  r.params.format = f;
  r.params.direction = d;
  r.params.layout = l;
  return r;
}

int block_of(Format f) { return f == Format::nvfp4 ? 16 : 32; }
bool fp4(Format f) { return f == Format::mxfp4 || f == Format::nvfp4; }

// x = decode(q) * 2^(b-127) (MX) or decode(q) * sf * s_dec (NVFP4) in fp32; NaN scale gives NaN.
float expected_value(Format f, uint32_t code, uint8_t sb, float s_dec) {
  static const oracle::ValueTable e4m3 = oracle::make_table(oracle::kE4M3);
  const oracle::FormatDesc elem = f == Format::mxfp8        ? oracle::kE4M3
                                  : f == Format::mxfp8_e5m2 ? oracle::kE5M2
                                                            : oracle::kE2M1;
  const float q = static_cast<float>(oracle::decode_value(elem, code));
  if (f == Format::nvfp4) {
    if (sb == 0x7F) return NAN;
    return oracle::mul_f32(oracle::mul_f32(q, static_cast<float>(e4m3.mag[sb])), s_dec);
  }
  if (sb == 255) return NAN;
  return static_cast<float>(static_cast<double>(q) * std::ldexp(1.0, sb - 127));
}

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0; }

// Linear scales, no groups: read codes and scales by their logical position and compare.
TEST(DequantizeCpu, MatchesDefinitionLinear) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats)
    for (Direction d : {Direction::rowwise, Direction::colwise})
      for (DType t : {DType::bf16, DType::fp32}) {
        const int64_t E = 2, M = 66, K = 80, bs = block_of(f), bits = fp4(f) ? 4 : 8;
        const HostTensor x = special_tensor(rng, t, E, M, K, 0.003);
        const QuantizeRequest r = request(f, d, ScaleLayout::linear);
        const QuantizeResult q = run_quantize(x, r);
        const std::vector<float> got = run_dequantize(r, d, E, M, K, q);
        ASSERT_EQ(got.size(), size_t(E * M * K));
        int bad = 0;
        for (int64_t b = 0; b < E; ++b)
          for (int64_t m = 0; m < M; ++m)
            for (int64_t k = 0; k < K; ++k) {
              const bool row = d == Direction::rowwise;
              const int64_t pos = row ? (b * M + m) * K + k : (b * K + k) * M + m;  // code index
              const std::vector<uint8_t>& data = row ? q.row_data : q.col_data;
              const uint32_t code = bits == 8 ? data[size_t(pos)] : (data[size_t(pos / 2)] >> (4 * (pos % 2))) & 0xF;
              const int64_t nk = (K + bs - 1) / bs, nm = (M + bs - 1) / bs;
              const uint8_t sb = row ? q.row_scales[size_t((b * M + m) * nk + k / bs)]
                                     : q.col_scales[size_t((b * K + k) * nm + m / bs)];
              const float want = expected_value(f, code, sb, f == Format::nvfp4 ? q.s_dec[size_t(b)] : 1.0f);
              const float have = got[size_t((b * M + m) * K + k)];
              if (!same_value(want, have) && bad++ < 5)
                ADD_FAILURE() << "format " << int(f) << " dir " << int(d) << " at (" << b << "," << m << "," << k
                              << "): want " << want << " got " << have;
            }
      }
}

// The scale layout changes where scales live, never the values.
TEST(DequantizeCpu, BlockedEqualsLinear) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats)
    for (Direction d : {Direction::rowwise, Direction::colwise})
      for (int grouped = 0; grouped < 3; ++grouped) {
        const int64_t M = 300, K = 48;
        const HostTensor x = normal_tensor(rng, DType::bf16, 1, M, K);
        QuantizeRequest lin = request(f, d, ScaleLayout::linear);
        if (grouped) lin.ends = random_group_ends(rng, M, 8, 2, 3);
        if (grouped == 2) lin.pad_rowwise = lin.pad_colwise = 32;
        QuantizeRequest blk = lin;
        blk.params.layout = ScaleLayout::blocked;
        const std::vector<float> a = run_dequantize(lin, d, 1, M, K, run_quantize(x, lin));
        const std::vector<float> b = run_dequantize(blk, d, 1, M, K, run_quantize(x, blk));
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
            << "format " << int(f) << " dir " << int(d) << " grouped " << grouped;
      }
}

// Groups whose boundaries fall on block boundaries have the blocks of the ungrouped tensor, so the
// values agree; rows past the last end come out as 0. Padded groups hold their rows at ps_g and
// zeros in the padding.
TEST(DequantizeCpu, GroupsAgreeWithUngrouped) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats)
    for (Direction d : {Direction::rowwise, Direction::colwise})
      for (int32_t pad : {0, 32}) {
        const int64_t M = 320, K = 64, G = 7, bs = block_of(f);
        const HostTensor x = normal_tensor(rng, DType::fp16, 1, M, K);
        QuantizeRequest plain = request(f, d, ScaleLayout::blocked);
        const std::vector<float> ref = run_dequantize(plain, d, 1, M, K, run_quantize(x, plain));
        QuantizeRequest grouped = plain;
        grouped.ends = random_group_ends(rng, M, G, bs, 32);
        grouped.tensor_amax.clear();
        if (pad) (d == Direction::rowwise ? grouped.pad_rowwise : grouped.pad_colwise) = pad;
        // nvfp4: the tensor amax covers rows past the last end too, so both calls share it.
        const std::vector<float> got = run_dequantize(grouped, d, 1, M, K, run_quantize(x, grouped));
        const int64_t rows = int64_t(got.size()) / K;
        std::vector<float> want(got.size(), 0.0f);
        int64_t prev = 0, at = 0;
        for (int32_t e : grouped.ends) {
          const int64_t dst = pad ? at : prev;
          for (int64_t i = 0; i < e - prev; ++i)
            for (int64_t k = 0; k < K; ++k) want[size_t((dst + i) * K + k)] = ref[size_t((prev + i) * K + k)];
          at += (e - prev + pad - 1) / std::max(pad, 1) * pad;
          prev = e;
        }
        EXPECT_EQ(rows, pad ? (M + G * pad + pad - 1) / pad * pad : M);
        EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
            << "format " << int(f) << " dir " << int(d) << " pad " << pad;
      }
}

// bf16 / fp16 outputs are the fp32 results rounded to nearest even (oracle's IEEE narrowing).
TEST(DequantizeCpu, HalfOutputsRoundTheFp32Result) {
  MXQ_FRESH_RNG(rng);
  const oracle::IeeeNarrow to_bf16(oracle::kBF16), to_fp16(oracle::kFP16);
  for (Format f : kFormats) {
    const HostTensor x = special_tensor(rng, DType::fp32, 1, 64, 64, 0.01);
    const QuantizeRequest r = request(f, Direction::rowwise, ScaleLayout::blocked);
    const QuantizeResult q = run_quantize(x, r);
    const std::vector<float> f32 = run_dequantize(r, Direction::rowwise, 1, 64, 64, q, DType::fp32);
    const std::vector<float> b16 = run_dequantize(r, Direction::rowwise, 1, 64, 64, q, DType::bf16);
    const std::vector<float> h16 = run_dequantize(r, Direction::rowwise, 1, 64, 64, q, DType::fp16);
    for (size_t i = 0; i < f32.size(); ++i) {
      if (std::isnan(f32[i])) {
        EXPECT_TRUE(std::isnan(b16[i]) && std::isnan(h16[i])) << i;
        continue;
      }
      const float wb = oracle::float_of(uint32_t(to_bf16(f32[i])) << 16);
      const float wh = static_cast<float>(oracle::decode_value(oracle::kFP16, to_fp16(f32[i])));
      ASSERT_TRUE(same_value(wb, b16[i])) << "bf16 element " << i << " of " << f32[i];
      ASSERT_TRUE(same_value(wh, h16[i])) << "fp16 element " << i << " of " << f32[i];
    }
  }
}

// Hand-made scale bytes: E8M0 0 is 2^-127 (not 0), 254 is 2^127, 255 is NaN; UE4M3 0x7F is NaN.
TEST(DequantizeCpu, ScaleByteEdges) {
  QuantizeRequest r = request(Format::mxfp8, Direction::rowwise, ScaleLayout::linear);
  QuantizeResult q;
  q.row_data.assign(4 * 32, 0x38);  // e4m3 1.0 everywhere
  q.row_data[3 * 32 + 1] = 0x7E;    // 448 in the 2^127 block: overflows fp32 to Inf
  q.row_scales = {0, 127, 255, 254};
  const std::vector<float> v = run_dequantize(r, Direction::rowwise, 1, 4, 32, q);
  EXPECT_EQ(oracle::bits_of(v[0]), 0x00400000u);  // 2^-127, an fp32 subnormal
  EXPECT_EQ(v[32], 1.0f);
  EXPECT_TRUE(std::isnan(v[64]));
  EXPECT_EQ(v[96], std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isinf(v[97]));

  QuantizeRequest nv = request(Format::nvfp4, Direction::rowwise, ScaleLayout::linear);
  QuantizeResult n;
  n.row_data.assign(2 * 8, 0x22);  // fp4 code 2 (1.0) in both nibbles
  n.row_scales = {0x7F, 0x38};     // NaN, 1.0
  n.s_dec = {0.5f};
  const std::vector<float> w = run_dequantize(nv, Direction::rowwise, 1, 2, 16, n);
  EXPECT_TRUE(std::isnan(w[0]));
  EXPECT_EQ(w[16], 0.5f);
}

}  // namespace
}  // namespace mxq::test
