// The cuda MXFP4 / NVFP4 quantize, tensor amax and dequantize equal the cpu reference byte for
// byte (tensor scales included) on every shape class, dtype, rule, layout and direction, with
// special values, rounding ties, caller-given and computed amax, strides, 3-D experts and CUDA graph
// replays; every output byte is written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

constexpr DType kDTypes[] = {DType::bf16, DType::fp16, DType::fp32};
constexpr Format kFormats[] = {Format::mxfp4, Format::nvfp4};
constexpr ScaleRule kRules[] = {ScaleRule::rceil, ScaleRule::floor};
constexpr ScaleLayout kLayouts[] = {ScaleLayout::linear, ScaleLayout::blocked};

QuantizeParams params(Format f, ScaleRule r, ScaleLayout l, Direction d = Direction::both) {
  QuantizeParams p;
  p.format = f;
  p.rule = r;
  p.layout = l;
  p.direction = d;
  return p;
}

// The cpu reference (both directions; rowwise only when M is odd, which fp4 colwise rejects) against
// the cuda backend in each direction it allows. Returns the cpu result.
QuantizeResult expect_cuda_matches_cpu_fp4(const HostTensor& h, QuantizeParams p, const std::vector<float>& amax = {},
                                           size_t offset = 0) {
  SCOPED_TRACE(describe(h, p, offset) + (amax.empty() ? " amax computed" : " amax given"));
  const bool col_ok = h.rows % 2 == 0;
  QuantizeRequest req;
  req.params = p;
  req.params.direction = col_ok ? Direction::both : Direction::rowwise;
  req.tensor_amax = amax;
  req.backend = Backend::cpu;
  const QuantizeResult cpu = run_quantize(h, req);
  for (Direction d : {Direction::rowwise, Direction::colwise, Direction::both}) {
    if (!col_ok && d != Direction::rowwise) continue;
    p.direction = d;
    SCOPED_TRACE(::testing::Message() << "cuda direction " << int(d));
    expect_outputs_equal(cpu, run_cuda_quantize(h, p, offset, amax), d);
  }
  return cpu;
}

TEST(CudaFp4Quantize, ShapeGridEveryFormatDtypeAndLayout) {
  MXQ_FRESH_RNG(rng);
  const int64_t Ms[] = {0, 1, 2, 3, 30, 31, 34, 126, 130, 1026};
  const int64_t Ks[] = {2, 16, 18, 32, 48, 96, 160, 1568, 7168};
  for (int64_t M : Ms) {
    for (int64_t K : Ks) {
      if (quick_mode() && M * K > 50000) continue;
      for (Format f : kFormats) {
        for (DType t : kDTypes) {
          for (ScaleLayout l : kLayouts) {
            const ScaleRule r = kRules[rng.uniform(0, 1)];
            const HostTensor h =
                rng.uniform(0, 1) ? normal_tensor(rng, t, 1, M, K) : special_tensor(rng, t, 1, M, K, 0.002);
            expect_cuda_matches_cpu_fp4(h, params(f, r, l));
          }
        }
      }
    }
  }
}

TEST(CudaFp4Quantize, SpecialValuesEveryFormatRuleAndAmaxSource) {
  MXQ_FRESH_RNG(rng);
  for (DType t : kDTypes) {
    for (Format f : kFormats) {
      for (ScaleRule r : kRules) {
        if (f == Format::nvfp4 && r == ScaleRule::floor) continue;  // nvfp4 has no rule
        for (ScaleLayout l : kLayouts) {
          // Sparse specials (finite blocks with extremes), dense ones (poisoned blocks; a NaN or Inf
          // tensor amax gives s_enc = 1), finite specials only.
          expect_cuda_matches_cpu_fp4(special_tensor(rng, t, 1, 258, 320, 0.01), params(f, r, l));
          expect_cuda_matches_cpu_fp4(special_tensor(rng, t, 1, 130, 96, 0.5), params(f, r, l));
          expect_cuda_matches_cpu_fp4(finite_special_tensor(rng, t, 1, 256, 256, 0.3), params(f, r, l));
          if (f == Format::nvfp4) {  // caller-given amax: plausible, tiny, zero, NaN
            const HostTensor h = special_tensor(rng, t, 1, 130, 160, 0.01);
            for (float amax : {4.5f, 1e-30f, 0.0f, std::nanf("")})
              expect_cuda_matches_cpu_fp4(h, params(f, r, l), {amax});
          }
        }
      }
    }
  }
}

// Every element is a rounding tie of E2M1 (0.25 .. 5 times the block's scale, both signs) or the
// block maximum; each 1x`block` and `block`x1 block holds one maximum (on its diagonal), so that the
// scale is the same power of two 2^e in both directions: mxfp4 max 5 * 2^e (rceil and floor give
// 2^e), nvfp4 max 6 * 2^e with the given amax 2688 * 2^e (s_enc = 2^-e, sf = 1.0).
HostTensor tie_tensor(Rng& rng, DType t, Format f, int64_t M, int64_t K, int e) {
  const int block = f == Format::nvfp4 ? 16 : 32;
  const float maximum = f == Format::nvfp4 ? 6.0f : 5.0f;
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  HostTensor h(t, 1, M, K);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      const float v = m % block == k % block ? maximum : ties[rng.uniform(0, 6)];
      h.set(0, m, k, std::ldexp(rng.uniform(0, 1) ? -v : v, e));
    }
  }
  return h;
}

uint32_t code_of(const std::vector<uint8_t>& data, int64_t i) { return (data[size_t(i / 2)] >> (4 * (i % 2))) & 0xF; }

TEST(CudaFp4Quantize, RoundingTiesGoToEven) {
  MXQ_FRESH_RNG(rng);
  // E2M1 codes by magnitude: ties 0.25 -> 0, 0.75 -> 2 (1.0), 1.25 -> 2, 1.75 -> 4 (2.0),
  // 2.5 -> 4, 3.5 -> 6 (4.0), 5 -> 6; maxima 5 -> 6, 6 -> 7.
  auto expected_code = [](float ratio) -> uint32_t {
    const float a = std::fabs(ratio);
    const uint32_t mag = a == 0.25f                 ? 0
                         : a == 0.75f || a == 1.25f ? 2
                         : a == 1.75f || a == 2.5f  ? 4
                         : a == 6.0f                ? 7
                                                    : 6;
    return mag | (ratio < 0 ? 8u : 0u);
  };
  for (DType t : kDTypes) {
    for (Format f : kFormats) {
      for (ScaleRule r : kRules) {
        if (f == Format::nvfp4 && r == ScaleRule::floor) continue;
        const int e = int(rng.uniform(-8, 8));
        const HostTensor h = tie_tensor(rng, t, f, 64, 96, e);
        const std::vector<float> amax =
            f == Format::nvfp4 ? std::vector<float>{std::ldexp(2688.0f, e)} : std::vector<float>{};
        const QuantizeResult cpu = expect_cuda_matches_cpu_fp4(h, params(f, r, ScaleLayout::linear), amax);
        // An independent look at the codes: rowwise element (m, k) and colwise element (m, k).
        for (int64_t m = 0; m < h.rows; ++m) {
          for (int64_t k = 0; k < h.cols; ++k) {
            const uint32_t want = expected_code(std::ldexp(h.get(0, m, k), -e));
            ASSERT_EQ(code_of(cpu.row_data, m * h.cols + k), want) << "rowwise m " << m << " k " << k;
            ASSERT_EQ(code_of(cpu.col_data, k * h.rows + m), want) << "colwise m " << m << " k " << k;
          }
        }
      }
    }
  }
}

TEST(CudaFp4Quantize, NonFiniteBlocksZeroBlocksAndZeroAmax) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats) {
    // One NaN poisons its rowwise block: scale NaN (E8M0 0xFF, UE4M3 0x7F) and every code 0x7.
    HostTensor h = normal_tensor(rng, DType::bf16, 1, 32, 64);
    h.set_bits(0, 3, 5, 0x7FC0);
    h.set_bits(0, 7, 40, 0xFF80);  // -Inf
    const std::vector<float> amax = f == Format::nvfp4 ? std::vector<float>{3.0f} : std::vector<float>{};
    const QuantizeResult cpu = expect_cuda_matches_cpu_fp4(h, params(f, ScaleRule::rceil, ScaleLayout::linear), amax);
    const int block = f == Format::nvfp4 ? 16 : 32;
    const uint8_t nan_scale = f == Format::nvfp4 ? 0x7F : 0xFF;
    const int64_t scale_cols = 64 / block;
    EXPECT_EQ(cpu.row_scales[size_t(3 * scale_cols + 5 / block)], nan_scale);
    EXPECT_EQ(cpu.row_scales[size_t(7 * scale_cols + 40 / block)], nan_scale);
    for (int64_t k = 0; k < block; ++k) EXPECT_EQ(code_of(cpu.row_data, 3 * 64 + k), 0x7u);
    // All-zero input: zero blocks (scale 0 or UE4M3 0), codes 0; nvfp4 amax 0 gives s_enc = s_dec = 1.
    HostTensor zeros(DType::fp16, 2, 64, 96);  // starts as NaN
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t m = 0; m < 64; ++m)
        for (int64_t k = 0; k < 96; ++k) zeros.set(b, m, k, 0.0f);
    const QuantizeResult z = expect_cuda_matches_cpu_fp4(zeros, params(f, ScaleRule::floor, ScaleLayout::blocked));
    for (uint8_t c : z.row_data) EXPECT_EQ(c, 0);
    if (f == Format::nvfp4) {
      EXPECT_EQ(z.s_enc, (std::vector<float>{1.0f, 1.0f}));
      EXPECT_EQ(z.s_dec, (std::vector<float>{1.0f, 1.0f}));
      expect_cuda_matches_cpu_fp4(normal_tensor(rng, DType::bf16, 2, 64, 96),
                                  params(f, ScaleRule::rceil, ScaleLayout::blocked), {0.0f, 0.0f});
    }
  }
}

// fp16 -> mxfp4 encodes its words without widening while the block's multiplier is at most
// 2^15 (encode_codes_mxfp4_pairs) and through fp32 widenings above it (block amax below about
// 2^-13): every 32 x 32 region gets its own magnitude, from fp16 subnormals and zero blocks to
// 2^13, so that both paths meet in every direction, rule and layout.
TEST(CudaFp4Quantize, Fp16BlocksOfEveryMagnitude) {
  MXQ_FRESH_RNG(rng);
  HostTensor h = normal_tensor(rng, DType::fp16, 1, 256, 320);
  for (int64_t m = 0; m < h.rows; ++m) {
    for (int64_t k = 0; k < h.cols; ++k) {
      const int e = -27 + int(((m / 32) * 10 + k / 32) % 41);  // 2^-27 .. 2^13 times N(0, 1)
      h.set(0, m, k, std::ldexp(h.get(0, m, k), e));
    }
  }
  for (ScaleRule r : kRules) {
    for (ScaleLayout l : kLayouts) expect_cuda_matches_cpu_fp4(h, params(Format::mxfp4, r, l));
  }
}

TEST(CudaFp4Quantize, StridedAndUnalignedInputs) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats) {
    for (DType t : kDTypes) {
      for (ScaleLayout l : kLayouts) {
        const QuantizeParams p = params(f, kRules[rng.uniform(0, 1)], l);
        expect_cuda_matches_cpu_fp4(normal_tensor(rng, t, 1, 256, 256, 264), p, {}, 0);
        expect_cuda_matches_cpu_fp4(normal_tensor(rng, t, 1, 256, 256, 261), p, {}, 0);
        expect_cuda_matches_cpu_fp4(normal_tensor(rng, t, 1, 256, 384), p, {}, 2);
        expect_cuda_matches_cpu_fp4(normal_tensor(rng, t, 1, 130, 200, 213), p, {}, 2);
        expect_cuda_matches_cpu_fp4(normal_tensor(rng, t, 3, 130, 200, 213, 130 * 213 + 7), p, {}, 2);
        expect_cuda_matches_cpu_fp4(normal_tensor(rng, t, 2, 256, 128, 136, 256 * 136 + 8), p, {}, 0);
      }
    }
  }
}

TEST(CudaFp4Quantize, ExpertWeights3DWithPerExpertTensorScales) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats) {
    for (ScaleLayout l : kLayouts) {
      // Experts of different magnitudes, so that their nvfp4 tensor scales differ.
      HostTensor h = normal_tensor(rng, DType::bf16, 4, 160, 96);
      for (int64_t b = 0; b < h.batch; ++b)
        for (int64_t m = 0; m < h.rows; ++m)
          for (int64_t k = 0; k < h.cols; ++k) h.set(b, m, k, std::ldexp(h.get(b, m, k), int(3 * b) - 4));
      const QuantizeResult cpu = expect_cuda_matches_cpu_fp4(h, params(f, ScaleRule::rceil, l));
      if (f == Format::nvfp4) {
        ASSERT_EQ(cpu.s_enc.size(), 4u);
        EXPECT_NE(cpu.s_enc[0], cpu.s_enc[3]);
        expect_cuda_matches_cpu_fp4(h, params(f, ScaleRule::rceil, l), {1.0f, 2.0f, 0.0f, 1e6f});
      }
      expect_cuda_matches_cpu_fp4(normal_tensor(rng, DType::fp32, 3, 130, 258), params(f, ScaleRule::floor, l));
    }
  }
  if (quick_mode()) return;
  expect_cuda_matches_cpu_fp4(normal_tensor(rng, DType::bf16, 8, 2048, 1536),
                              params(Format::nvfp4, ScaleRule::rceil, ScaleLayout::blocked));
  expect_cuda_matches_cpu_fp4(normal_tensor(rng, DType::bf16, 1, 8192, 7168),
                              params(Format::mxfp4, ScaleRule::rceil, ScaleLayout::blocked));
}

// nvfp4 with the amax computed by mxq on tensors of many tiles and experts (the reduction runs
// over each batch from its end, the tile kernel from its start): each expert's largest magnitude in
// its first or its last tile row, and a NaN near the start of the first expert.
TEST(CudaFp4Quantize, ComputedAmaxOfLargeTensorsAndExperts) {
  MXQ_FRESH_RNG(rng);
  struct Case {
    DType t;
    int64_t batch, rows, cols;
  };
  if (quick_mode()) GTEST_SKIP() << "MXQ_TEST_QUICK (up to 25 M elements)";
  const Case cases[] = {{DType::bf16, 1, 1408, 8192},
                        {DType::bf16, 3, 2048, 4096},
                        {DType::fp16, 2, 2050, 2896},
                        {DType::fp32, 1, 1536, 3072}};
  for (const Case& k : cases) {
    HostTensor h = normal_tensor(rng, k.t, k.batch, k.rows, k.cols);
    for (int64_t b = 0; b < k.batch; ++b) {
      const int64_t m = b % 2 == 0 ? rng.uniform(0, 127) : k.rows - 1 - rng.uniform(0, 100);
      h.set(b, m, rng.uniform(0, std::min<int64_t>(k.cols, 128) - 1), 300.0f * float(b + 1));
    }
    expect_cuda_matches_cpu_fp4(h, params(Format::nvfp4, ScaleRule::rceil, ScaleLayout::blocked));
    if (k.batch > 1) {
      h.set(0, 5, 7, std::nanf(""));
      expect_cuda_matches_cpu_fp4(h, params(Format::nvfp4, ScaleRule::rceil, ScaleLayout::linear));
    }
  }
}

// With a caller-given amax, tensors of up to 6144 tiles (128 x 128; the launcher's
// kDeriveTensorScalesTiles) derive the tensor scales in the tile kernel, larger ones in a separate
// kernel first: both sides of that limit, on tall narrow tensors (one column tile, few elements),
// every direction.
TEST(CudaFp4Quantize, GivenAmaxOnBothSidesOfTheInKernelTileLimit) {
  if (quick_mode()) GTEST_SKIP() << "MXQ_TEST_QUICK (12.6 M elements)";
  MXQ_FRESH_RNG(rng);
  for (int64_t row_tiles : {6144, 6145}) {
    const HostTensor h = normal_tensor(rng, DType::bf16, 1, row_tiles * 128, 16);
    expect_cuda_matches_cpu_fp4(h, params(Format::nvfp4, ScaleRule::rceil, ScaleLayout::blocked), {3.0f});
  }
}

// A caller-given amax kept in an s_enc or s_dec output itself (delayed scaling in place): the
// tensor scales still come from the amax as it was before the call.
TEST(CudaFp4Quantize, GivenAmaxInATensorScaleOutput) {
  MXQ_FRESH_RNG(rng);
  const HostTensor h = normal_tensor(rng, DType::bf16, 3, 256, 320);
  const std::vector<float> amax = {2.0f, 0.5f, 7.0f};
  QuantizeRequest req;
  req.params = params(Format::nvfp4, ScaleRule::rceil, ScaleLayout::blocked);
  req.tensor_amax = amax;
  req.backend = Backend::cpu;
  const QuantizeResult cpu = run_quantize(h, req);
  for (bool in_s_dec : {false, true}) {
    SCOPED_TRACE(in_s_dec ? "amax in s_dec" : "amax in s_enc");
    DeviceTensor in(h, 0);
    QuantizeArgs a;
    a.input = in.view;
    a.params = req.params;
    a.backend = Backend::cuda;
    QuantizeSizes s;
    ASSERT_TRUE(quantize_sizes(a, &s).ok());
    DeviceOutputs out(s);
    a.out = out.outputs(a.params.direction);
    out.fill(kPoisonA);
    (in_s_dec ? out.s_dec : out.s_enc).upload(amax.data(), amax.size() * sizeof(float));
    a.tensor_amax = in_s_dec ? a.out.s_dec : a.out.s_enc;
    const Status st = quantize(a);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_outputs_equal(cpu, out.download(s), Direction::both);
  }
}

std::vector<float> amax_on(const HostTensor& h, Backend b, size_t offset) {
  std::vector<float> out(size_t(h.batch), -1.0f);
  if (b == Backend::cpu) {
    const Status st = tensor_amax(h.view(), out.data(), Backend::cpu);
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }
  DeviceTensor in(h, offset);
  DeviceBuffer dev(out.size() * 4);
  dev.fill(kPoisonA);
  const Status st = tensor_amax(in.view, reinterpret_cast<float*>(dev.get()), Backend::cuda);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::memcpy(out.data(), dev.download().data(), out.size() * 4);
  return out;
}

TEST(CudaTensorAmax, MatchesCpuBitsNaNWins) {
  MXQ_FRESH_RNG(rng);
  for (DType t : kDTypes) {
    const HostTensor cases[] = {normal_tensor(rng, t, 1, 1, 1),
                                normal_tensor(rng, t, 1, 333, 77),
                                normal_tensor(rng, t, 3, 130, 200, 213, 130 * 213 + 7),
                                normal_tensor(rng, t, 2, 1024, 2048),
                                special_tensor(rng, t, 2, 300, 64, 0.001),
                                finite_special_tensor(rng, t, 1, 64, 64, 0.2),
                                HostTensor(t, 2, 17, 32) /* all NaN */};
    for (const HostTensor& h : cases) {
      for (size_t offset : {size_t{0}, size_t{2}}) {
        SCOPED_TRACE(describe(h, QuantizeParams{}, offset));
        EXPECT_TRUE(
            bytes_equal(as_bytes(amax_on(h, Backend::cpu, 0)), as_bytes(amax_on(h, Backend::cuda, offset)), "amax"));
      }
    }
  }
  // A NaN anywhere wins over Inf and every finite value.
  HostTensor h = normal_tensor(rng, DType::fp32, 1, 64, 64);
  h.set_bits(0, 10, 3, 0x7F800000u);
  h.set_bits(0, 60, 63, 0xFFC00001u);
  EXPECT_TRUE(std::isnan(amax_on(h, Backend::cuda, 0)[0]));
}

// QuantizeOutputs::amax equals tensor_amax of the input byte for byte (NaN payloads included) on
// every path: found by the nvfp4 tile kernels with a caller-given amax (below and above the
// in-kernel tensor-scale limit), copied from the computed nvfp4 amax, reduced for the MX formats
// and for token groups. The output is poisoned first; every direction.
TEST(CudaQuantizeAmaxOutput, EqualsTensorAmaxOnEveryPath) {
  MXQ_FRESH_RNG(rng);
  struct Case {
    Format f;
    DType t;
    int64_t batch, rows, cols;
    bool given, grouped;
  };
  std::vector<Case> cases = {
      {Format::nvfp4, DType::bf16, 1, 130, 160, true, false},  {Format::nvfp4, DType::fp16, 3, 66, 96, true, false},
      {Format::nvfp4, DType::fp32, 2, 34, 48, true, false},    {Format::nvfp4, DType::bf16, 2, 130, 96, false, false},
      {Format::mxfp8, DType::bf16, 1, 130, 160, false, false}, {Format::mxfp4, DType::fp16, 2, 66, 64, false, false},
      {Format::nvfp4, DType::bf16, 1, 520, 96, true, true},    {Format::mxfp8, DType::fp32, 1, 300, 64, false, true}};
  if (!quick_mode()) cases.push_back({Format::nvfp4, DType::bf16, 1, 6400 * 128, 128, true, false});  // > 6144 tiles
  for (const Case& k : cases) {
    for (int special = 0; special < 3; ++special) {
      HostTensor h = normal_tensor(rng, k.t, k.batch, k.rows, k.cols);
      const int64_t b = k.batch - 1, m = rng.uniform(0, k.rows - 1), c = rng.uniform(0, k.cols - 1);
      if (special == 1) h.set(b, m, c, std::ldexp(1.0f, 12));  // one large magnitude in the last batch
      if (special == 2) h.set_bits(b, m, c, k.t == DType::fp32 ? 0xFFC12345u : 0xFF91u);  // a NaN with a payload
      std::vector<float> want(size_t(k.batch));
      ASSERT_TRUE(tensor_amax(h.view(), want.data(), Backend::cpu).ok());
      for (Direction d : {Direction::rowwise, Direction::colwise, Direction::both}) {
        SCOPED_TRACE(describe(h, QuantizeParams{k.f, ScaleRule::rceil, ScaleLayout::blocked, d}, 0) +
                     (k.given ? " amax given" : "") + (k.grouped ? " groups" : "") + " special " +
                     std::to_string(special));
        DeviceTensor in(h);
        QuantizeArgs q;
        q.input = in.view;
        q.params = {k.f, ScaleRule::rceil, ScaleLayout::blocked, d};
        q.backend = Backend::cuda;
        const std::vector<int32_t> ends = k.grouped ? random_group_ends(rng, k.rows, 4, 1, 40) : std::vector<int32_t>{};
        DeviceBuffer ends_dev = device_copy(ends);
        if (k.grouped) q.groups.groups = {reinterpret_cast<const int32_t*>(ends_dev.get()), int64_t(ends.size())};
        const std::vector<float> given(size_t(k.batch), 3.0f);
        DeviceBuffer given_dev = device_copy(given);
        if (k.given) q.tensor_amax = reinterpret_cast<const float*>(given_dev.get());
        QuantizeSizes s;
        ASSERT_TRUE(quantize_sizes(q, &s).ok());
        DeviceOutputs out(s);
        q.out = out.outputs(d);
        DeviceBuffer amax(size_t(k.batch) * 4);
        amax.fill(kPoisonA);
        q.out.amax = reinterpret_cast<float*>(amax.get());
        const Status st = quantize(q);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_TRUE(bytes_equal(as_bytes(want), amax.download(), "out.amax"));
        if (k.f == Format::nvfp4 && !k.grouped) {  // the codes are the same as without the amax output
          QuantizeRequest req;
          req.params = q.params;
          req.tensor_amax = k.given ? given : std::vector<float>{};
          expect_outputs_equal(run_quantize(h, req), out.download(s), d);
        }
      }
    }
  }
}

// An nvfp4 quantize captured in a CUDA graph, replayed with fresh inputs (a new amax each time):
// with the amax computed, or `delayed`: the caller's amax in one buffer (a fresh one per replay)
// and the input's amax written into another (out.amax).
void expect_nvfp4_graph_replays(bool delayed) {
  MXQ_FRESH_RNG(rng);
  constexpr int64_t B = 2, M = 258, K = 384;
  CapturedGraph graph;
  HostTensor h = normal_tensor(rng, DType::bf16, B, M, K);
  DeviceTensor in(h);
  DeviceBuffer given(B * 4), found(B * 4);
  QuantizeArgs q;
  q.input = in.view;
  q.params = params(Format::nvfp4, ScaleRule::rceil, ScaleLayout::blocked);
  if (delayed) q.tensor_amax = reinterpret_cast<const float*>(given.get());
  q.backend = Backend::cuda;
  q.stream = graph.stream();
  QuantizeSizes s;
  ASSERT_TRUE(quantize_sizes(q, &s).ok());
  DeviceOutputs out(s);
  q.out = out.outputs(Direction::both);
  if (delayed) q.out.amax = reinterpret_cast<float*>(found.get());

  MXQ_CUDA_CHECK(graph.begin_capture(cudaStreamCaptureModeGlobal));
  const Status qs = quantize(q);
  MXQ_CUDA_CHECK(graph.end_capture());
  ASSERT_TRUE(qs.ok()) << qs.message();
  for (int replay = 0; replay < 3; ++replay) {
    SCOPED_TRACE(::testing::Message() << "replay " << replay);
    h = normal_tensor(rng, DType::bf16, B, M, K);
    for (int64_t m = 0; m < M; ++m) h.set(1, m, 5, h.get(1, m, 5) * float(4 << replay));  // new amax each time
    in.buf.upload(h.bytes.data(), h.bytes.size());
    out.fill(uint8_t(kPoisonA + replay));
    found.fill(uint8_t(kPoisonA + replay));
    QuantizeRequest req;
    req.params = q.params;
    if (delayed) {
      req.tensor_amax = {2.0f + replay, 3.0f};
      given.upload(req.tensor_amax.data(), req.tensor_amax.size() * 4);
    }
    MXQ_CUDA_CHECK(graph.replay());
    expect_outputs_equal(run_quantize(h, req), out.download(s), Direction::both);
    if (delayed) {
      std::vector<float> want(B);
      ASSERT_TRUE(tensor_amax(h.view(), want.data(), Backend::cpu).ok());
      EXPECT_TRUE(bytes_equal(as_bytes(want), found.download(), "out.amax"));
    }
  }
}

TEST(CudaFp4Graph, ComputedAmaxQuantizeReplaysWithFreshInputs) { expect_nvfp4_graph_replays(false); }
TEST(CudaFp4Graph, DelayedAmaxQuantizeReplaysWithFreshInputs) { expect_nvfp4_graph_replays(true); }

TEST(CudaFp4Dequantize, MatchesCpuEveryFormatLayoutDirectionAndDtype) {
  MXQ_FRESH_RNG(rng);
  const int64_t shapes[][3] = {{1, 34, 160}, {1, 130, 96}, {2, 66, 64}, {1, 256, 256}, {3, 2, 48}, {2, 2, 18}};
  for (const auto& sh : shapes) {
    for (Format f : kFormats) {
      for (ScaleLayout l : kLayouts) {
        QuantizeRequest req;
        req.params = params(f, rng.uniform(0, 1) ? ScaleRule::rceil : ScaleRule::floor, l);
        const QuantizeResult q = run_quantize(special_tensor(rng, DType::bf16, sh[0], sh[1], sh[2], 0.01), req);
        const DeviceBuffer s_dec = device_copy(q.s_dec);
        for (Direction d : {Direction::rowwise, Direction::colwise}) {
          for (DType t : kDTypes) {
            SCOPED_TRACE(::testing::Message()
                         << "shape " << sh[0] << "x" << sh[1] << "x" << sh[2] << " format " << int(f) << " layout "
                         << int(l) << " direction " << int(d) << " out " << int(t));
            const bool row = d == Direction::rowwise;
            const std::vector<uint8_t>& data = row ? q.row_data : q.col_data;
            const std::vector<uint8_t>& scales = row ? q.row_scales : q.col_scales;
            DequantizeArgs a;
            a.params = req.params;
            a.params.direction = d;
            a.batch = sh[0];
            a.rows = sh[1];
            a.cols = sh[2];
            a.out_dtype = t;
            int64_t n = 0;
            ASSERT_TRUE(dequantize_size(a, &n).ok());
            // cpu
            std::vector<uint8_t> want(size_t(n * dtype_size(t)), kPoisonA);
            a.data = data.data();
            a.scales = scales.data();
            a.s_dec = q.s_dec.empty() ? nullptr : q.s_dec.data();
            a.out = want.data();
            a.backend = Backend::cpu;
            ASSERT_TRUE(dequantize(a).ok());
            // cuda, two poison patterns
            const DeviceBuffer dd = device_copy(data), ds = device_copy(scales), out(want.size());
            a.data = dd.get();
            a.scales = ds.get();
            a.s_dec = q.s_dec.empty() ? nullptr : reinterpret_cast<const float*>(s_dec.get());
            a.out = out.get();
            a.backend = Backend::cuda;
            EXPECT_TRUE(bytes_equal(want, dequantize_poisoned_twice(a, out), "dequantized"));  // NaN bits too
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace mxq::test
