// CPU quantize through the public API (backend = cpu): byte-for-byte against an independent scalar
// reference (tests/support/reference_quantize), and the structural properties of docs/layouts.md.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <mxq/mxq.hpp>

#include "cpu/parallel.hpp"
#include "support/quantize_runner.hpp"
#include "support/reference_quantize.hpp"
#include "support/test_util.hpp"

namespace mxq::test {
namespace {

const Format kFormats[] = {Format::mxfp8, Format::mxfp8_e5m2, Format::mxfp4, Format::nvfp4};
const DType kDTypes[] = {DType::bf16, DType::fp16, DType::fp32};
const Direction kDirections[] = {Direction::rowwise, Direction::colwise, Direction::both};
const ScaleLayout kLayouts[] = {ScaleLayout::linear, ScaleLayout::blocked};

bool is_fp4(Format f) { return f == Format::mxfp4 || f == Format::nvfp4; }

std::string describe(const HostTensor& x, const QuantizeRequest& r) {
  std::string s = "format " + std::to_string(int(r.params.format)) + " rule " + std::to_string(int(r.params.rule)) +
                  " layout " + std::to_string(int(r.params.layout)) + " dir " +
                  std::to_string(int(r.params.direction)) + " dtype " + std::to_string(int(x.dtype)) + " shape " +
                  std::to_string(x.batch) + "x" + std::to_string(x.rows) + "x" + std::to_string(x.cols) + " strides " +
                  std::to_string(x.row_stride) + "/" + std::to_string(x.batch_stride) + " G " +
                  std::to_string(r.ends.size()) + " pad " + std::to_string(r.pad_rowwise) + "/" +
                  std::to_string(r.pad_colwise) + " ends";
  for (int32_t e : r.ends) s += " " + std::to_string(e);
  return s;
}

// Runs the op and the reference and compares every output byte for byte.
void expect_matches_reference(const HostTensor& x, const QuantizeRequest& req) {
  SCOPED_TRACE(describe(x, req));
  const QuantizeResult got = run_quantize(x, req);
  const QuantizeResult want = reference_quantize(x, req, got.sizes);
  expect_outputs_equal(want, got, Direction::both);
}

QuantizeRequest request(Format f, Direction d, ScaleLayout l, ScaleRule rule = ScaleRule::rceil) {
  QuantizeRequest r;
  r.params.format = f;
  r.params.direction = d;
  r.params.layout = l;
  r.params.rule = rule;
  return r;
}

// ---- independent cross-check: every feature on small tensors ---------------------------------------

TEST(QuantizeCpu, MatchesReferencePlain2D) {
  MXQ_FRESH_RNG(rng);
  const int64_t shapes[][2] = {{1, 32}, {3, 48}, {31, 16}, {33, 96}, {127, 160}, {129, 32}};
  int i = 0;
  for (Format f : kFormats)
    for (Direction d : kDirections)
      for (ScaleLayout l : kLayouts)
        for (const auto& s : shapes) {
          const int64_t M = is_fp4(f) && has_colwise(d) ? (s[0] + 1) / 2 * 2 : s[0];
          const DType t = kDTypes[i % 3];
          const ScaleRule rule = (i++ / 3) % 2 ? ScaleRule::floor : ScaleRule::rceil;
          expect_matches_reference(normal_tensor(rng, t, 1, M, s[1]), request(f, d, l, rule));
        }
}

TEST(QuantizeCpu, MatchesReference3DStrided) {
  MXQ_FRESH_RNG(rng);
  int i = 0;
  for (Format f : kFormats)
    for (Direction d : kDirections)
      for (ScaleLayout l : kLayouts)
        for (int64_t E : {1, 3}) {
          const DType t = kDTypes[i++ % 3];
          const int64_t N = 66, K = 80;
          // rows padded to 96 elements, experts 7000 elements apart (gaps hold NaN)
          expect_matches_reference(normal_tensor(rng, t, E, N, K, 96, 7000), request(f, d, l));
          expect_matches_reference(normal_tensor(rng, t, E, N, K), request(f, d, l, ScaleRule::floor));
        }
}

TEST(QuantizeCpu, MatchesReferenceSpecialValues) {
  MXQ_FRESH_RNG(rng);
  int i = 0;
  for (Format f : kFormats)
    for (Direction d : kDirections)
      for (ScaleRule rule : {ScaleRule::rceil, ScaleRule::floor})
        for (DType t : kDTypes) {
          const ScaleLayout l = kLayouts[i++ % 2];
          // sparse specials poison a few blocks; dense finite specials hit subnormals and maxima
          expect_matches_reference(special_tensor(rng, t, 1, 64, 96, 0.01), request(f, d, l, rule));
          expect_matches_reference(finite_special_tensor(rng, t, 2, 34, 64, 0.3), request(f, d, l, rule));
        }
}

TEST(QuantizeCpu, MatchesReferenceTokenGroups) {
  MXQ_FRESH_RNG(rng);
  int i = 0;
  for (Format f : kFormats)
    for (Direction d : kDirections)
      for (ScaleLayout l : kLayouts)
        for (int scenario = 0; scenario < 5; ++scenario) {
          const DType t = kDTypes[i++ % 3];
          const int64_t M = 2 * rng.uniform(0, 150), K = 48;
          const int64_t G = scenario == 4 ? 256 : rng.uniform(1, 9);
          QuantizeRequest r = request(f, d, l, i % 2 ? ScaleRule::floor : ScaleRule::rceil);
          const int64_t tail = scenario == 1 ? std::min<int64_t>(M, 6) : 0;
          r.ends = random_group_ends(rng, M, G, is_fp4(f) ? 2 : 1, tail);
          if (scenario == 2) r.pad_rowwise = r.pad_colwise = 32;
          if (scenario == 3) (has_rowwise(d) ? r.pad_rowwise : r.pad_colwise) = 128;
          if (scenario == 4) r.pad_colwise = 16;
          expect_matches_reference(normal_tensor(rng, t, 1, M, K), r);
        }
}

TEST(QuantizeCpu, OutOfRangeGroupEndsAreClamped) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats) {
    QuantizeRequest r = request(f, Direction::both, ScaleLayout::blocked);
    r.ends = {40, 20, 100000, -5, 64};  // decreasing, past M, negative: clamped to [prev, M]
    r.pad_rowwise = 32;
    expect_matches_reference(normal_tensor(rng, DType::bf16, 1, 64, 32), r);
  }
}

// ---- shapes: every byte written, reference on the smaller ones --------------------------------------

// A large bf16 (M, K) tensor of standard normal values drawn from a pool (generating millions of
// fresh normals would dominate the test's time).
HostTensor pooled_normal_tensor(Rng& rng, int64_t M, int64_t K) {
  std::vector<float> pool(4099);
  for (float& v : pool) v = rng.normal();
  HostTensor x(DType::bf16, 1, M, K);
  const int64_t shift = rng.uniform(0, 4098);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) x.set(0, m, k, pool[size_t((m * K + k + shift) % 4099)]);
  return x;
}

TEST(QuantizeCpu, ShapeSweep) {
  MXQ_FRESH_RNG(rng);
  const int64_t Ms[] = {0, 1, 3, 31, 33, 127, 129, 1025};
  const int64_t Ks[] = {16, 32, 48, 96, 160, 1568, 7168};
  for (Format f : kFormats)
    for (int64_t M : Ms)
      for (int64_t K : Ks) {
        const bool all_pairs = f == Format::mxfp8;
        if (!all_pairs && K > 160 && M > 33) continue;  // large shapes: mxfp8 only
        if (K % 32 && f != Format::nvfp4 && K != 48 && K != 16) continue;
        Direction d = all_pairs ? Direction::rowwise : (M % 2 || !is_fp4(f) ? Direction::rowwise : Direction::both);
        const HostTensor x =
            M * K <= 40000 ? normal_tensor(rng, DType::bf16, 1, M, K) : pooled_normal_tensor(rng, M, K);
        if (M * K <= 40000) {
          expect_matches_reference(x, request(f, d, ScaleLayout::blocked));
        } else {
          SCOPED_TRACE(describe(x, request(f, d, ScaleLayout::blocked)));
          run_quantize(x, request(f, d, ScaleLayout::blocked));  // checks every byte was written
        }
      }
}

// ---- structure ------------------------------------------------------------------------------------

TEST(QuantizeCpu, BothEqualsSingleDirections) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats)
    for (ScaleLayout l : kLayouts)
      for (int grouped = 0; grouped < 3; ++grouped) {
        const int64_t M = 200, K = 96;
        const HostTensor x = special_tensor(rng, DType::bf16, 1, M, K, 0.002);
        QuantizeRequest r = request(f, Direction::both, l);
        if (grouped) r.ends = random_group_ends(rng, M, 7, 2, grouped == 2 ? 10 : 0);
        if (grouped == 2) r.pad_rowwise = r.pad_colwise = 64;
        SCOPED_TRACE(describe(x, r));
        const QuantizeResult both = run_quantize(x, r);
        r.params.direction = Direction::rowwise;
        const QuantizeResult row = run_quantize(x, r);
        r.params.direction = Direction::colwise;
        const QuantizeResult col = run_quantize(x, r);
        expect_outputs_equal(row, both, Direction::rowwise);
        expect_outputs_equal(col, both, Direction::colwise);
      }
}

// Colwise data is the rowwise data of the transpose: (K, M) with fp4 packed along M, which is the
// transposed row. Scales too: colwise S[k][j] is the rowwise S of the transpose, in both layouts.
TEST(QuantizeCpu, ColwiseEqualsRowwiseOfTranspose) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats)
    for (ScaleLayout l : kLayouts)
      for (DType t : kDTypes) {
        const int64_t E = 2, M = 130, K = 72;
        const HostTensor x = special_tensor(rng, t, E, M, K, 0.001);
        HostTensor xt(t, E, K, M);
        for (int64_t b = 0; b < E; ++b)
          for (int64_t m = 0; m < M; ++m)
            for (int64_t k = 0; k < K; ++k)
              std::memcpy(xt.bytes.data() + xt.index(b, k, m) * dtype_size(t),
                          x.bytes.data() + x.index(b, m, k) * dtype_size(t), size_t(dtype_size(t)));
        const QuantizeResult col = run_quantize(x, request(f, Direction::colwise, l));
        const QuantizeResult row_t = run_quantize(xt, request(f, Direction::rowwise, l));
        SCOPED_TRACE(describe(x, request(f, Direction::colwise, l)));
        EXPECT_TRUE(bytes_equal(row_t.row_data, col.col_data, "data"));
        EXPECT_TRUE(bytes_equal(row_t.row_scales, col.col_scales, "scales"));
        EXPECT_TRUE(bytes_equal(as_bytes(row_t.s_enc), as_bytes(col.s_enc), "s_enc"));
      }
}

// Fused pad + quantize equals padding by hand (docs/layouts.md: group g copied to ps_g, zeros
// elsewhere) followed by quantize with ends = padded_ends.
TEST(QuantizeCpu, FusedPadEqualsPadThenQuantize) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats)
    for (ScaleLayout l : kLayouts)
      for (int32_t A : {16, 32, 128}) {
        const int64_t M = 250, K = 64, G = 9;
        const DType t = kDTypes[rng.uniform(0, 2)];
        const HostTensor x = normal_tensor(rng, t, 1, M, K);
        QuantizeRequest fused = request(f, Direction::both, l);
        fused.ends = random_group_ends(rng, M, G, 1, f == Format::nvfp4 ? 0 : 5);
        fused.pad_rowwise = fused.pad_colwise = A;
        SCOPED_TRACE(describe(x, fused));
        const QuantizeResult got = run_quantize(x, fused);

        const int64_t P = (M + G * A + A - 1) / A * A;
        HostTensor padded(t, 1, P, K);
        for (int64_t r = 0; r < P; ++r)
          for (int64_t k = 0; k < K; ++k) padded.set(0, r, k, 0.0f);
        std::vector<int32_t> starts, ends;
        int64_t prev = 0, at = 0;
        for (int32_t e : fused.ends) {
          const int64_t n = e - prev;
          for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < K; ++k) padded.set(0, at + i, k, x.get(0, prev + i, k));
          starts.push_back(int32_t(at));
          at += (n + A - 1) / A * A;
          ends.push_back(int32_t(at));
          prev = e;
        }
        EXPECT_EQ(got.padded_starts, starts);
        EXPECT_EQ(got.padded_ends, ends);
        QuantizeRequest plain = request(f, Direction::both, l);
        plain.ends = ends;
        const QuantizeResult want = run_quantize(padded, plain);
        EXPECT_TRUE(bytes_equal(want.row_data, got.row_data, "row_data"));
        EXPECT_TRUE(bytes_equal(want.row_scales, got.row_scales, "row_scales"));
        EXPECT_TRUE(bytes_equal(want.col_data, got.col_data, "col_data"));
        // colwise scales: the padded tensor has P rows and the fused call P (padded) columns: same size
        EXPECT_TRUE(bytes_equal(want.col_scales, got.col_scales, "col_scales"));
      }
}

// Same result through the public pad op, when it is available on the CPU.
TEST(QuantizeCpu, FusedPadEqualsPublicPadThenQuantize) {
  MXQ_FRESH_RNG(rng);
  const int64_t M = 300, K = 32, G = 6;
  const int32_t A = 32;
  const HostTensor x = normal_tensor(rng, DType::bf16, 1, M, K);
  QuantizeRequest fused = request(Format::mxfp8, Direction::both, ScaleLayout::blocked);
  fused.ends = random_group_ends(rng, M, G, 1, 7);
  fused.pad_rowwise = fused.pad_colwise = A;
  const QuantizeResult got = run_quantize(x, fused);

  PadArgs p;
  p.input = x.view();
  p.groups = {fused.ends.data(), G};
  p.alignment = A;
  p.backend = Backend::cpu;
  int64_t rows = 0;
  ASSERT_TRUE(pad_rows(p, &rows).ok());
  HostTensor padded(DType::bf16, 1, rows, K);
  std::vector<int32_t> starts(G), ends(G);
  p.out = padded.bytes.data();
  p.padded_starts = starts.data();
  p.padded_ends = ends.data();
  const Status st = pad(p);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(got.padded_starts, starts);
  EXPECT_EQ(got.padded_ends, ends);
  QuantizeRequest plain = request(Format::mxfp8, Direction::both, ScaleLayout::blocked);
  plain.ends = ends;
  const QuantizeResult want = run_quantize(padded, plain);
  EXPECT_TRUE(bytes_equal(want.row_data, got.row_data, "row_data"));
  EXPECT_TRUE(bytes_equal(want.row_scales, got.row_scales, "row_scales"));
  EXPECT_TRUE(bytes_equal(want.col_data, got.col_data, "col_data"));
  EXPECT_TRUE(bytes_equal(want.col_scales, got.col_scales, "col_scales"));
}

// ---- docs/spec.md section 2 golden table, through the whole op ------------------------------------------

struct GoldenRow {
  const char* name;
  DType dtype;
  std::vector<uint32_t> bits;  // one 32-element block (shorter lists repeat)
  int floor_scale, rceil_scale;
  std::vector<int> floor_data, rceil_data;  // first codes of the block; empty: not checked
};

TEST(QuantizeCpu, SpecGoldenTable) {
  const uint32_t inf = 0x7F80, nan = 0x7FC0, one = 0x3F80;
  const std::vector<GoldenRow> rows = {
      {"all 0", DType::bf16, {0x0000}, 0, 0, {0x00}, {0x00}},
      {"all 2^-126", DType::bf16, {0x0080}, 0, 0, {0x40}, {0x40}},
      {"+-448", DType::bf16, {0x43E0, 0xC3E0}, 127, 127, {0x7E, 0xFE}, {0x7E, 0xFE}},
      {"+-480", DType::bf16, {0x43F0, 0xC3F0}, 127, 128, {0x7E, 0xFE}, {0x77, 0xF7}},
      {"bf16 2^-133", DType::bf16, {0x0001}, 0, 0, {0x08}, {0x08}},
      {"1.0 and +Inf", DType::bf16, {inf, one}, 255, 255, {0x7F, 0x7F}, {0x7F, 0x7F}},
      {"NaN", DType::bf16, {one, one, nan}, 255, 255, {0x7F, 0x7F, 0x7F}, {0x7F, 0x7F, 0x7F}},
      {"3.5 + ulp", DType::fp32, {0x40600001}, 120, 121, {}, {0x76}},
      {"just under 512", DType::fp32, {0x43FFFFFF}, 127, 128, {0x7E}, {}},
  };
  for (const GoldenRow& g : rows) {
    SCOPED_TRACE(g.name);
    HostTensor x(g.dtype, 1, 1, 32);
    for (int64_t k = 0; k < 32; ++k) x.set_bits(0, 0, k, g.bits[size_t(k) % g.bits.size()]);
    for (ScaleRule rule : {ScaleRule::floor, ScaleRule::rceil}) {
      const QuantizeResult q = run_quantize(x, request(Format::mxfp8, Direction::rowwise, ScaleLayout::linear, rule));
      const bool fl = rule == ScaleRule::floor;
      ASSERT_EQ(q.row_scales.size(), 1u);
      EXPECT_EQ(int(q.row_scales[0]), fl ? g.floor_scale : g.rceil_scale) << (fl ? "floor" : "rceil");
      const std::vector<int>& data = fl ? g.floor_data : g.rceil_data;
      for (size_t k = 0; k < 32 && !data.empty(); ++k)
        EXPECT_EQ(int(q.row_data[k]), data[k % data.size()]) << (fl ? "floor" : "rceil") << " element " << k;
    }
  }
}

// ---- ties and NVFP4 --------------------------------------------------------------------------------

// A block holding the element maximum has scale 1 (both rules); the others sit exactly on RNE ties.
TEST(QuantizeCpu, RoundingTiesMatchReference) {
  MXQ_FRESH_RNG(rng);
  for (Format f : {Format::mxfp8, Format::mxfp8_e5m2, Format::mxfp4})
    for (ScaleRule rule : {ScaleRule::rceil, ScaleRule::floor}) {
      const std::vector<float> ties = element_rounding_ties(f);
      HostTensor x(DType::fp32, 1, 8, 64);
      for (int64_t r = 0; r < 8; ++r)
        for (int64_t k = 0; k < 64; ++k) {
          const float v = k % 32 == 0 ? element_max(f) : ties[size_t(rng.uniform(0, int64_t(ties.size()) - 1))];
          x.set(0, r, k, rng.uniform(0, 1) ? -v : v);
        }
      const QuantizeRequest r = request(f, Direction::both, ScaleLayout::linear, rule);
      expect_matches_reference(x, r);
      const QuantizeResult q = run_quantize(x, r);
      for (uint8_t s : q.row_scales) EXPECT_EQ(s, 127);
    }
  // Hand-computed e4m3 ties at scale 1: 1.0625 -> 1.0 (0x38), 17 -> 16 (0x58), 19 -> 20 (0x5A).
  HostTensor x(DType::fp32, 1, 1, 32);
  const float v[] = {448.0f, 1.0625f, 17.0f, 19.0f, -1.0625f};
  const int want[] = {0x7E, 0x38, 0x58, 0x5A, 0xB8};
  for (int64_t k = 0; k < 32; ++k) x.set(0, 0, k, k < 5 ? v[k] : 0.0f);
  const QuantizeResult q = run_quantize(x, request(Format::mxfp8, Direction::rowwise, ScaleLayout::linear));
  for (int k = 0; k < 5; ++k) EXPECT_EQ(int(q.row_data[size_t(k)]), want[k]) << "element " << k;
}

TEST(QuantizeCpu, Nvfp4CallerAmaxAndTies) {
  // Caller amax 2688 = 448 * 6: s_enc = 1, a block with amax 6 gets sf = 1.0 (0x38) and each
  // element sits on an E2M1 tie: 0.25 -> 0, 0.75 -> 1.0, 1.25 -> 1.0, 1.75 -> 2, 2.5 -> 2,
  // 3.5 -> 4, 5 -> 4 (ties to the even code).
  HostTensor x(DType::fp32, 1, 1, 16);
  const float v[] = {6.0f,  0.25f,  0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f,
                     -5.0f, -0.25f, 0.0f,  -0.0f, 0.0f,  0.0f, 0.0f, 0.0f};
  const uint32_t want[] = {7, 0, 2, 2, 4, 4, 6, 6, 0xE, 0x8, 0, 0x8, 0, 0, 0, 0};
  for (int64_t k = 0; k < 16; ++k) x.set(0, 0, k, v[k]);
  QuantizeRequest r = request(Format::nvfp4, Direction::rowwise, ScaleLayout::linear);
  r.tensor_amax = {2688.0f};
  const QuantizeResult q = run_quantize(x, r);
  EXPECT_EQ(q.s_enc[0], 1.0f);
  EXPECT_EQ(q.s_dec[0], 1.0f);
  EXPECT_EQ(q.row_scales[0], 0x38);
  for (int k = 0; k < 16; ++k) EXPECT_EQ((q.row_data[size_t(k / 2)] >> (4 * (k % 2))) & 0xF, want[k]) << k;
  expect_matches_reference(x, r);
}

TEST(QuantizeCpu, Nvfp4TensorAmax) {
  MXQ_FRESH_RNG(rng);
  // All zeros: T = 0 gives s_enc = s_dec = 1 and zero scales and codes.
  HostTensor zeros(DType::bf16, 2, 4, 32);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t m = 0; m < 4; ++m)
      for (int64_t k = 0; k < 32; ++k) zeros.set(b, m, k, 0.0f);
  const QuantizeResult z = run_quantize(zeros, request(Format::nvfp4, Direction::both, ScaleLayout::linear));
  EXPECT_EQ(z.s_enc, (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(z.s_dec, (std::vector<float>{1.0f, 1.0f}));
  for (uint8_t b : z.row_data) EXPECT_EQ(b, 0);
  for (uint8_t b : z.row_scales) EXPECT_EQ(b, 0);

  // Per-expert amax; the computed amax equals the public tensor_amax; caller-given amax matches.
  const HostTensor x = normal_tensor(rng, DType::bf16, 3, 40, 64, 70, 4000);
  HostTensor y = x;
  y.set(1, 7, 9, 1000.0f);  // expert 1 has a large amax
  float amax[3];
  ASSERT_TRUE(tensor_amax(y.view(), amax, Backend::cpu).ok());
  EXPECT_EQ(amax[1], 1000.0f);
  QuantizeRequest r = request(Format::nvfp4, Direction::both, ScaleLayout::blocked);
  const QuantizeResult computed = run_quantize(y, r);
  for (int b = 0; b < 3; ++b) {
    EXPECT_EQ(computed.s_enc[size_t(b)], 2688.0f / amax[b]);
    EXPECT_EQ(computed.s_dec[size_t(b)], 1.0f / (2688.0f / amax[b]));
  }
  r.tensor_amax = {amax[0], amax[1], amax[2]};
  const QuantizeResult given = run_quantize(y, r);
  EXPECT_TRUE(bytes_equal(computed.row_data, given.row_data, "row_data"));
  EXPECT_TRUE(bytes_equal(computed.col_scales, given.col_scales, "col_scales"));
  r.tensor_amax = {3.0f, 0.0f, INFINITY};  // arbitrary caller values, including 0 and Inf
  expect_matches_reference(y, r);
  const QuantizeResult odd = run_quantize(y, r);
  EXPECT_EQ(odd.s_enc[1], 1.0f);
  EXPECT_EQ(odd.s_enc[2], 1.0f);

  // NaN wins the amax.
  y.set_bits(2, 3, 3, 0x7FC0);
  ASSERT_TRUE(tensor_amax(y.view(), amax, Backend::cpu).ok());
  EXPECT_TRUE(std::isnan(amax[2]));
  EXPECT_FALSE(std::isnan(amax[0]));
}

// QuantizeOutputs::amax is tensor_amax of the input (every format, with and without a caller
// amax, NaN payloads kept), and the other outputs are those of the call without it.
TEST(QuantizeCpu, AmaxOutputIsTheTensorAmax) {
  MXQ_FRESH_RNG(rng);
  HostTensor x = normal_tensor(rng, DType::fp16, 2, 34, 64);
  x.set_bits(1, 5, 6, 0xFE01);  // a NaN with a payload
  float want[2];
  ASSERT_TRUE(tensor_amax(x.view(), want, Backend::cpu).ok());
  for (Format f : {Format::mxfp8, Format::mxfp4, Format::nvfp4}) {
    for (bool given : {false, true}) {
      if (given && f != Format::nvfp4) continue;
      QuantizeArgs q;
      q.input = x.view();
      q.params = {f, ScaleRule::rceil, ScaleLayout::blocked, Direction::both};
      q.backend = Backend::cpu;
      const float caller[2] = {2.0f, 5.0f};
      if (given) q.tensor_amax = caller;
      QuantizeSizes s;
      ASSERT_TRUE(quantize_sizes(q, &s).ok());
      std::vector<uint8_t> row(size_t(s.row_data_bytes)), rs(size_t(s.row_scale_bytes)), col(size_t(s.col_data_bytes)),
          cs(size_t(s.col_scale_bytes));
      std::vector<float> enc(size_t(s.tensor_scale_count)), dec(enc.size());
      q.out.row_data = row.data();
      q.out.row_scales = rs.data();
      q.out.col_data = col.data();
      q.out.col_scales = cs.data();
      if (f == Format::nvfp4) {
        q.out.s_enc = enc.data();
        q.out.s_dec = dec.data();
      }
      float got[2] = {-1.0f, -1.0f};
      q.out.amax = got;
      ASSERT_TRUE(quantize(q).ok());
      EXPECT_EQ(std::memcmp(got, want, sizeof got), 0) << to_string(f) << (given ? " amax given" : "");
      QuantizeRequest r = request(f, Direction::both, ScaleLayout::blocked);
      if (given) r.tensor_amax = {caller[0], caller[1]};
      const QuantizeResult without = run_quantize(x, r);
      EXPECT_TRUE(bytes_equal(without.row_data, row, "row_data"));
      EXPECT_TRUE(bytes_equal(without.col_scales, cs, "col_scales"));
    }
  }
}

// ---- SQNR of the round trip on standard normal data ------------------------------------------------

TEST(QuantizeCpu, RoundTripSqnr) {
  MXQ_FRESH_RNG(rng);
  const struct {
    Format f;
    double min_db;
    const char* name;
  } cases[] = {{Format::mxfp8, 28.0, "mxfp8"},
               {Format::mxfp8_e5m2, 22.0, "mxfp8_e5m2"},
               {Format::mxfp4, 13.0, "mxfp4"},
               {Format::nvfp4, 16.0, "nvfp4"}};
  const int64_t M = 256, K = 1024;
  const HostTensor x = normal_tensor(rng, DType::bf16, 1, M, K);
  std::vector<float> ref(size_t(M * K));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) ref[size_t(m * K + k)] = x.get(0, m, k);
  for (const auto& c : cases)
    for (ScaleRule rule : {ScaleRule::rceil, ScaleRule::floor}) {
      if (c.f == Format::nvfp4 && rule == ScaleRule::floor) continue;
      const QuantizeRequest r = request(c.f, Direction::both, ScaleLayout::blocked, rule);
      const QuantizeResult q = run_quantize(x, r);
      for (Direction d : {Direction::rowwise, Direction::colwise}) {
        const double db = sqnr_db(ref, run_dequantize(r, d, 1, M, K, q));
        const std::string key = std::string("sqnr_") + c.name + (rule == ScaleRule::floor ? "_floor_" : "_rceil_") +
                                (d == Direction::rowwise ? "rowwise" : "colwise");
        std::cout << "[ SQNR     ] " << key << " = " << db << " dB (min " << c.min_db << ")\n";
        ::testing::Test::RecordProperty(key, std::to_string(db));
        EXPECT_GE(db, c.min_db) << key;
      }
    }
}

// ---- parallel_for -------------------------------------------------------------------------------------

TEST(ParallelFor, CoversEveryIndexOnce) {
  for (int64_t n : {0, 1, 7, 1000, 100000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    cpu::parallel_for(0, n, 64, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) hits[size_t(i)]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "n " << n << " i " << i;
  }
}

}  // namespace
}  // namespace mxq::test

namespace mxq::test {
namespace {

// tensor_amax may be out.s_enc or out.s_dec itself: the same bytes as with a separate buffer.
TEST(QuantizeCpu, GivenAmaxInATensorScaleOutput) {
  MXQ_FRESH_RNG(rng);
  const HostTensor h = normal_tensor(rng, DType::bf16, 3, 64, 96);
  QuantizeRequest req = request(Format::nvfp4, Direction::both, ScaleLayout::blocked);
  req.tensor_amax = {2.0f, 0.5f, 7.0f};
  const QuantizeResult want = run_quantize(h, req);
  for (bool in_s_dec : {false, true}) {
    SCOPED_TRACE(in_s_dec ? "amax in s_dec" : "amax in s_enc");
    QuantizeArgs a;
    a.input = h.view();
    a.params = req.params;
    a.backend = Backend::cpu;
    QuantizeResult got;
    ASSERT_TRUE(quantize_sizes(a, &got.sizes).ok());
    got.row_data.resize(size_t(got.sizes.row_data_bytes));
    got.row_scales.resize(size_t(got.sizes.row_scale_bytes));
    got.col_data.resize(size_t(got.sizes.col_data_bytes));
    got.col_scales.resize(size_t(got.sizes.col_scale_bytes));
    got.s_enc = got.s_dec = {};
    got.s_enc.resize(3);
    got.s_dec.resize(3);
    (in_s_dec ? got.s_dec : got.s_enc) = req.tensor_amax;
    a.out = {got.row_data.data(),   got.row_scales.data(), got.col_data.data(),
             got.col_scales.data(), got.s_enc.data(),      got.s_dec.data()};
    a.tensor_amax = in_s_dec ? got.s_dec.data() : got.s_enc.data();
    const Status st = quantize(a);
    ASSERT_TRUE(st.ok()) << st.message();
    expect_outputs_equal(want, got, Direction::both);
  }
}

}  // namespace
}  // namespace mxq::test
