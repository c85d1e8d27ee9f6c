// Proofs for the vector dequantize kernels (src/cuda/dequantize/octet.cuh, element.cuh):
// 1. the fast octet path equals num::dequantize_element (+ num's bf16 rounding) for every MX scale
//    byte x every code, and for NVFP4 every sf byte x every code x a set of s_dec values;
// 2. the bf16 `finite` rounding equals num::float_to_bf16_rne on every non-NaN fp32;
// 3. cuda == cpu byte for byte on shapes with partial tiles, scale bytes over the whole range
//    (subnormal and overflowing outputs, slow-path blocks), unaligned pointers, custom s_dec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cuda/cuda_test_util.hpp"
#include "cuda/dequantize/element.cuh"
#include "cuda/dequantize/octet.cuh"

namespace mxq::test {
namespace {

using namespace cuda::kernels::dequantize;

struct Mismatches {
  unsigned long long count;
  unsigned long long fast_checked;
  uint32_t code, sb, got, want;
};

__device__ void report(Mismatches* m, uint32_t code, uint32_t sb, uint32_t got, uint32_t want) {
  if (atomicAdd(&m->count, 1ull) == 0) {
    m->code = code;
    m->sb = sb;
    m->got = got;
    m->want = want;
  }
}

// blockIdx.x: scale byte; threadIdx.x: octet number t, code i = (t + 32 i) & 0xFF (fp8) or
// (t + i) & 0xF (fp4), so every code appears in every position.
template <class Fmt>
__global__ void fast_path_exhaustive(const float* s_decs, Mismatches* m) {
  const uint32_t sb = blockIdx.x, t = threadIdx.x;
  const float s_dec = Fmt::nv ? s_decs[blockIdx.y] : 1.0f;
  Octet<Fmt> o;
  uint32_t codes[8];
  for (int i = 0; i < 8; ++i) codes[i] = Fmt::elem_bits == 8 ? (t + 32 * i) & 0xFFu : (t + i) & 0xFu;
  if constexpr (Fmt::elem_bits == 8) {
    o.w[0] = codes[0] | codes[1] << 8 | codes[2] << 16 | codes[3] << 24;
    o.w[1] = codes[4] | codes[5] << 8 | codes[6] << 16 | codes[7] << 24;
  } else {
    o.w[0] = 0;
    for (int i = 0; i < 8; ++i) o.w[0] |= codes[i] << (4 * i);
  }
  for (int i = 0; i < 8; ++i) {
    if (octet_code(o, i) != codes[i]) report(m, codes[i], sb, octet_code(o, i), codes[i]);
  }
  const bool fast = fast_scale<Fmt>(sb) && special_codes(o) == 0 && (!Fmt::nv || isfinite(s_dec));
  if (!fast) return;
  atomicAdd(&m->fast_checked, 1ull);
  float v[8];
  fast_values(o, fast_factor<Fmt>(sb), s_dec, v);
  constexpr Known K = Fmt::nv ? Known::finite : Known::exact;
  for (int i = 0; i < 8; ++i) {
    const float want = num::dequantize_element<Fmt>(codes[i], static_cast<uint8_t>(sb), s_dec);
    if (num::f2u(v[i]) != num::f2u(want)) report(m, codes[i], sb, num::f2u(v[i]), num::f2u(want));
    const uint32_t bf = bf16_in_high_half<K>(v[i]) >> 16;
    if (bf != num::float_to_bf16_rne(want)) report(m, codes[i] | 0x100u, sb, bf, num::float_to_bf16_rne(want));
  }
}

Mismatches run_exhaustive(Format f, const std::vector<float>& s_decs) {
  DeviceBuffer buf(sizeof(Mismatches));
  buf.fill(0);
  const DeviceBuffer sd = device_copy(s_decs);
  auto* m = reinterpret_cast<Mismatches*>(buf.get());
  const auto* s = reinterpret_cast<const float*>(sd.get());
  const dim3 grid(256, static_cast<unsigned>(s_decs.size()));
  num::dispatch_format(f, [&](auto fmt) { fast_path_exhaustive<decltype(fmt)><<<grid, 256>>>(s, m); });
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Mismatches r;
  std::memcpy(&r, buf.download().data(), sizeof r);
  return r;
}

TEST(CudaDequantizeFastPath, FastPathEqualsNumericsEveryScaleAndCode) {
  const std::vector<float> one = {1.0f};
  const std::vector<float> s_decs = {1.0f,     1.0f / 2688.0f, 3.7e-3f,   1e-30f, 2.5e-39f, 1.4e-45f,        0.0f,
                                     -0.0f,    -1.5f,          6.1e4f,    1e30f,  3.4e38f,  1.17549435e-38f, 7.0f,
                                     123.456f, -2.2e-40f,      5.877e-39f};
  for (Format f : {Format::mxfp8, Format::mxfp8_e5m2, Format::mxfp4, Format::nvfp4}) {
    const Mismatches m = run_exhaustive(f, f == Format::nvfp4 ? s_decs : one);
    EXPECT_EQ(m.count, 0u) << "format " << int(f) << " first: code 0x" << std::hex << m.code << " sb 0x" << m.sb
                           << " got 0x" << m.got << " want 0x" << m.want;
    EXPECT_GT(m.fast_checked, 1000u) << "format " << int(f);
    std::printf("format %d: %llu fast octets checked\n", int(f), m.fast_checked);
  }
}

__global__ void bf16_finite_all(uint64_t stride, Mismatches* m) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < (uint64_t{1} << 32) / stride;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t u = static_cast<uint32_t>(i * stride);
    if ((u & 0x7FFFFFFFu) > num::kF32ExpMask) continue;
    const float x = num::u2f(u);
    const uint32_t got = bf16_in_high_half<Known::finite>(x) >> 16;
    if (got != num::float_to_bf16_rne(x)) report(m, u, 0, got, num::float_to_bf16_rne(x));
  }
}

TEST(CudaDequantizeFastPath, Bf16FiniteRoundingEqualsNumericsOnAllNonNanFp32) {
  DeviceBuffer buf(sizeof(Mismatches));
  buf.fill(0);
  bf16_finite_all<<<2048, 256>>>(quick_mode() ? 40503 : 1, reinterpret_cast<Mismatches*>(buf.get()));
  MXQ_CUDA_CHECK(cudaDeviceSynchronize());
  Mismatches r;
  std::memcpy(&r, buf.download().data(), sizeof r);
  EXPECT_EQ(r.count, 0u) << "first input 0x" << std::hex << r.code;
}

// ---- cuda vs cpu -------------------------------------------------------------------------------

// fp32 values whose blocks of 32 along both directions span every binade: 8x8 patches of one
// random exponent in [-149, 127], normal mantissas, some NaN / Inf sprinkled.
HostTensor wide_range_tensor(Rng& rng, int64_t batch, int64_t rows, int64_t cols) {
  HostTensor x(DType::fp32, batch, rows, cols);
  std::vector<int> exps(size_t((rows / 8 + 1) * (cols / 8 + 1) * batch));
  for (int& e : exps) e = int(rng.uniform(-149, 127));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int e = exps[size_t((b * (rows / 8 + 1) + r / 8) * (cols / 8 + 1) + c / 8)];
        float v = std::ldexp(1.0f + float(rng.uniform(0, 1 << 20)) / float(1 << 20), e);
        if (rng.uniform(0, 1)) v = -v;
        if (rng.uniform(0, 2000) == 0) v = rng.uniform(0, 1) ? NAN : INFINITY;
        x.set(b, r, c, v);
      }
  return x;
}

struct Case {
  int64_t batch, rows, cols;
};

// Dequantizes q's direction d on both backends; `data_offset` / `out_offset` bytes shift the
// device pointers (unaligned ones take the per-element kernel); s_dec_override replaces s_dec.
void expect_same(const QuantizeParams& params, Direction d, const Case& c, const QuantizeResult& q, DType t,
                 size_t data_offset, size_t out_offset, float s_dec_override = NAN) {
  SCOPED_TRACE(::testing::Message() << "shape " << c.batch << "x" << c.rows << "x" << c.cols << " format "
                                    << int(params.format) << " layout " << int(params.layout) << " dir " << int(d)
                                    << " out " << int(t) << " offsets " << data_offset << "/" << out_offset);
  const bool row = d == Direction::rowwise;
  const std::vector<uint8_t>& data = row ? q.row_data : q.col_data;
  const std::vector<uint8_t>& scales = row ? q.row_scales : q.col_scales;
  std::vector<float> s_dec = q.s_dec;
  if (!std::isnan(s_dec_override)) std::fill(s_dec.begin(), s_dec.end(), s_dec_override);
  DequantizeArgs a;
  a.params = params;
  a.params.direction = d;
  a.batch = c.batch;
  a.rows = c.rows;
  a.cols = c.cols;
  a.out_dtype = t;
  int64_t n = 0;
  ASSERT_TRUE(dequantize_size(a, &n).ok());
  const size_t bytes = size_t(n * dtype_size(t));
  std::vector<uint8_t> want(bytes, kPoisonA);
  a.data = data.data();
  a.scales = scales.data();
  a.s_dec = s_dec.empty() ? nullptr : s_dec.data();
  a.out = want.data();
  a.backend = Backend::cpu;
  ASSERT_TRUE(dequantize(a).ok());
  DeviceBuffer dd(data.size() + data_offset), ds = device_copy(scales), dsd = device_copy(s_dec);
  dd.upload(data.data(), data.size(), data_offset);
  DeviceBuffer out(bytes + out_offset);
  a.data = dd.get() + data_offset;
  a.scales = ds.get();
  a.s_dec = s_dec.empty() ? nullptr : reinterpret_cast<const float*>(dsd.get());
  a.out = out.get() + out_offset;
  a.backend = Backend::cuda;
  std::vector<uint8_t> got[2];
  for (int i = 0; i < 2; ++i) {
    out.fill(i ? kPoisonB : kPoisonA);
    const Status st = dequantize(a);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    got[i] = out.download(out_offset, bytes);
  }
  EXPECT_TRUE(every_byte_written(got[0], got[1], "out"));
  EXPECT_TRUE(bytes_equal(want, got[0], "dequantized"));
}

TEST(CudaDequantizeFastPath, MatchesCpuPartialTilesWideRangesUnalignedPointers) {
  MXQ_FRESH_RNG(rng);
  const Case cases[] = {{1, 200, 264}, {2, 136, 392}, {1, 72, 1032}, {3, 64, 256}, {1, 8, 8},    {1, 2, 8},
                        {1, 1000, 40}, {1, 130, 520}, {1, 202, 264}, {2, 14, 16},  {1, 66, 1096}};
  for (const Case& c : cases) {
    for (Format f : {Format::mxfp8, Format::mxfp8_e5m2, Format::mxfp4, Format::nvfp4}) {
      for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
        for (int input = 0; input < 2; ++input) {
          QuantizeRequest req;
          req.params.format = f;
          req.params.layout = l;
          req.params.rule = rng.uniform(0, 1) ? ScaleRule::rceil : ScaleRule::floor;
          req.params.direction = Direction::both;
          const HostTensor h = input ? wide_range_tensor(rng, c.batch, c.rows, c.cols)
                                     : special_tensor(rng, DType::bf16, c.batch, c.rows, c.cols, 0.01);
          const QuantizeResult q = run_quantize(h, req);
          for (Direction d : {Direction::rowwise, Direction::colwise}) {
            for (DType t : {DType::bf16, DType::fp16, DType::fp32}) {
              expect_same(req.params, d, c, q, t, 0, 0);
            }
            expect_same(req.params, d, c, q, DType::bf16, 1, 0);  // unaligned codes
            expect_same(req.params, d, c, q, DType::fp32, 0, 4);  // unaligned output
            if (f == Format::nvfp4) {
              for (float s : {1e-40f, 3e38f, -2.0f, INFINITY, 0.0f})
                expect_same(req.params, d, c, q, DType::bf16, 0, 0, s);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace mxq::test
