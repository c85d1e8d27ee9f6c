// The fp32 -> fp8 (hardware) and fp4 (integer form) conversions of the kernels (src/cuda/convert.cuh) equal the
// numerics core's num::encode on every one of the 2^32 fp32 inputs (the fp4 line encoder of
// cuda/e2m1_lines.hpp, on the device's bf16x2 instructions, on every non-NaN one; a sample with
// MXQ_TEST_QUICK). Its power-of-two form equals num::encode(x * r) for every E8M0 reciprocal r
// on every bf16 x and on the fp32 x whose product lands near the E2M1 grid (all of them for the
// extreme and middle scales, a stride for the others); its fp16-pairs form equals it on every
// finite fp16 for the scales it takes. The in-range reciprocal equals the IEEE
// 1.0f / p on all of its range, and the nvfp4 multipliers built on it equal the numerics core's
// for every finite scale byte at the edges of the fast s_dec range and at samples inside it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cuda/convert.cuh"
#include "cuda/e2m1_lines.hpp"
#include "cuda/quantize/traits.cuh"
#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

struct Mismatches {
  unsigned long long count;
  uint32_t first_input;
};

// Pairs (i, i ^ 0x80000000) so both signs of each magnitude go through one conversion.
template <class Elem>
__global__ void compare_all(uint64_t n, uint64_t stride, Mismatches* out) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t bits = static_cast<uint32_t>(i * stride);
    const float lo = num::u2f(bits), hi = num::u2f(bits ^ 0x80000000u);
    if (cuda::encode_pair<Elem>(lo, hi) != cuda::encode_pair_reference<Elem>(lo, hi)) {
      if (atomicAdd(&out->count, 1ull) == 0) out->first_input = bits;
    }
  }
}

template <class Elem>
void check_exhaustive() {
  DeviceBuffer buf(sizeof(Mismatches));
  buf.fill(0);
  // All 2^31 magnitudes with both signs; a coprime stride samples them under the sanitizer.
  const uint64_t stride = quick_mode() ? 40503 : 1;
  const uint64_t n = (uint64_t{1} << 31) / stride;
  compare_all<Elem><<<1024, 256>>>(n, stride, reinterpret_cast<Mismatches*>(buf.get()));
  MXQ_CUDA_CHECK(cudaGetLastError());
  MXQ_CUDA_CHECK(cudaDeviceSynchronize());
  Mismatches m;
  std::memcpy(&m, buf.download().data(), sizeof m);
  EXPECT_EQ(m.count, 0u) << "first differing fp32 input 0x" << std::hex << m.first_input;
}

// The kernels' E2M1 encoders (cuda/e2m1_lines.hpp), eight consecutive patterns base + i * stride
// per word (NaN patterns become zero: NaN only occurs in poisoned blocks, which never reach them):
// encode_e2m1 of the inputs when scale_byte < 0, else encode_e2m1_pow2 with that E8M0 byte's
// reciprocal (first_input of a mismatch is the fp32 input; the caller reports the byte).
__global__ void compare_e2m1_words(uint32_t base, uint64_t words, uint32_t stride, int scale_byte, Mismatches* out) {
  const float pow2 = scale_byte < 0 ? 1.0f : num::e8m0_reciprocal(static_cast<uint8_t>(scale_byte));
  for (uint64_t w = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; w < words; w += uint64_t(gridDim.x) * blockDim.x) {
    float x[8];
    for (int j = 0; j < 8; ++j) {
      const uint32_t bits = base + static_cast<uint32_t>((w * 8 + j) * stride);
      x[j] = (bits & 0x7FFFFFFFu) > num::kF32ExpMask ? 0.0f : num::u2f(bits);
    }
    const uint32_t word = scale_byte < 0 ? cuda::encode_e2m1(x) : cuda::encode_e2m1_pow2(x, pow2);
    for (int j = 0; j < 8; ++j) {
      if (((word >> (4 * j)) & 0xFu) != num::encode<num::E2M1>(x[j] * pow2)) {
        if (atomicAdd(&out->count, 1ull) == 0) out->first_input = num::f2u(x[j]);
      }
    }
  }
}

Mismatches compare_e2m1(uint32_t base, uint64_t count, uint32_t stride, int scale_byte) {
  DeviceBuffer buf(sizeof(Mismatches));
  buf.fill(0);
  compare_e2m1_words<<<1024, 256>>>(base, (count + 7) / 8, stride, scale_byte,
                                    reinterpret_cast<Mismatches*>(buf.get()));
  Mismatches m{};
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::memcpy(&m, buf.download().data(), sizeof m);
  return m;
}

TEST(CudaConvert, E2M1LinesEqualNumericsOnAllNonNanFp32) {
  const uint32_t stride = quick_mode() ? 40503 : 1;
  const Mismatches m = compare_e2m1(0, (uint64_t{1} << 32) / stride, stride, -1);
  EXPECT_EQ(m.count, 0u) << "first differing fp32 input 0x" << std::hex << m.first_input;
}

TEST(CudaConvert, E2M1Pow2EqualsNumericsOnEveryBf16AndScale) {
  for (int b = 0; b <= 254; ++b) {
    const Mismatches m = compare_e2m1(0, 0x10000u, 0x10000u, b);  // bf16 h is fp32 h << 16
    ASSERT_EQ(m.count, 0u) << "E8M0 byte " << b << ", first differing input 0x" << std::hex << m.first_input;
  }
}

TEST(CudaConvert, E2M1Pow2EqualsNumericsNearEachScalesGrid) {
  // fp32 x with x * 2^(127 - b) in [2^-3, 2^4) (fp32 subnormals included, clamped to the finite
  // range), both signs: every pattern for the extreme and middle scales, a stride for the others.
  for (int b = 0; b <= 254; ++b) {
    const bool all = !quick_mode() && (b <= 2 || (b >= 126 && b <= 128) || b >= 252);
    const uint32_t stride = all ? 1 : (quick_mode() ? 40503 : 61);
    const uint32_t lo = num::f2u(std::ldexp(1.0f, b - 130));
    const uint32_t hi = b - 123 >= 128 ? 0x7F7FFFFFu : num::f2u(std::ldexp(1.0f, b - 123));
    for (uint32_t sign : {0u, 0x80000000u}) {
      const Mismatches m = compare_e2m1(sign | lo, (hi - lo) / stride, stride, b);
      ASSERT_EQ(m.count, 0u) << "E8M0 byte " << b << ", first differing input 0x" << std::hex << m.first_input;
    }
  }
}

// fp16 words through fp16x2_scaled_odd_pair and the lines with the multiplier times 2^112 (the
// fp16 -> mxfp4 kernels' path) against num::encode(x * r): every finite fp16 x in each nibble of
// a word (the others: a stride of values), for every E8M0 reciprocal r <= kFp16PairsMaxPow2.
__global__ void compare_fp16_pairs(int scale_byte, Mismatches* out) {
  const float pow2 = num::e8m0_reciprocal(static_cast<uint8_t>(scale_byte));
  for (uint32_t h = blockIdx.x * blockDim.x + threadIdx.x; h < 0x10000u; h += gridDim.x * blockDim.x) {
    if ((h & 0x7C00u) == 0x7C00u) continue;
    uint32_t in[8];
    for (int j = 0; j < 8; ++j) {
      in[j] = (h + 0x1F3Du * j) & 0xFFFFu;
      if ((in[j] & 0x7C00u) == 0x7C00u) in[j] &= 0x83FFu;
    }
    cuda::Bf16x2Odd pairs[4];
    for (int k = 0; k < 4; ++k) pairs[k] = cuda::fp16x2_scaled_odd_pair(in[2 * k] | (in[2 * k + 1] << 16));
    const uint32_t word = cuda::encode_e2m1_pow2_pairs<4>(pairs, pow2 * cuda::kFp16PairsScale);
    for (int j = 0; j < 8; ++j) {
      if (((word >> (4 * j)) & 0xFu) !=
          num::encode<num::E2M1>(num::fp16_to_float(static_cast<uint16_t>(in[j])) * pow2)) {
        if (atomicAdd(&out->count, 1ull) == 0) out->first_input = in[j];
      }
    }
  }
}

TEST(CudaConvert, E2M1Fp16PairsEqualNumericsOnEveryFp16AndScale) {
  for (int b = 112; b <= 254; ++b) {
    ASSERT_LE(num::e8m0_reciprocal(static_cast<uint8_t>(b)), cuda::kFp16PairsMaxPow2);
    DeviceBuffer buf(sizeof(Mismatches));
    buf.fill(0);
    compare_fp16_pairs<<<64, 256>>>(b, reinterpret_cast<Mismatches*>(buf.get()));
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Mismatches m;
    std::memcpy(&m, buf.download().data(), sizeof m);
    ASSERT_EQ(m.count, 0u) << "E8M0 byte " << b << ", first differing fp16 input 0x" << std::hex << m.first_input;
  }
}

// rcp_rn_in_range(p) against the compiler's IEEE reciprocal on p = first + i * stride, i < n.
__global__ void compare_rcp(uint32_t first, uint64_t n, uint32_t stride, Mismatches* out) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t bits = first + static_cast<uint32_t>(i * stride);
    const float p = num::u2f(bits);
    if (num::f2u(num::rcp_rn_in_range(p)) != num::f2u(1.0f / p)) {
      if (atomicAdd(&out->count, 1ull) == 0) out->first_input = bits;
    }
  }
}

TEST(CudaConvert, RcpInRangeEqualsIeeeReciprocalOnItsWholeRange) {
  const uint32_t first = num::f2u(num::kRcpInRangeMin), end = num::f2u(num::kRcpInRangeEnd);
  const uint32_t stride = quick_mode() ? 40503 : 1;
  DeviceBuffer buf(sizeof(Mismatches));
  buf.fill(0);
  compare_rcp<<<1024, 256>>>(first, (end - first) / stride, stride, reinterpret_cast<Mismatches*>(buf.get()));
  MXQ_CUDA_CHECK(cudaGetLastError());
  MXQ_CUDA_CHECK(cudaDeviceSynchronize());
  Mismatches m;
  std::memcpy(&m, buf.download().data(), sizeof m);
  EXPECT_EQ(m.count, 0u) << "first differing p 0x" << std::hex << m.first_input;
}

// The kernels' nvfp4 multiplier of every finite scale byte (0..0x7E) for each s_dec, against
// num::nvfp4_element_multiplier; first_input: the index of the first differing s_dec.
__global__ void compare_nvfp4_multipliers(const float* s_dec, int n, Mismatches* out) {
  for (int i = blockIdx.x; i < n; i += gridDim.x) {
    cuda::kernels::quantize::BlockScaler<num::NVFP4> scaler{ScaleRule::rceil, 1.0f, 1.0f};
    scaler.set_tensor_scales(1.0f / s_dec[i], s_dec[i]);
    for (uint32_t sb = threadIdx.x; sb <= 0x7E; sb += blockDim.x) {
      if (num::f2u(scaler.multiplier(sb, false)) !=
          num::f2u(num::nvfp4_element_multiplier(static_cast<uint8_t>(sb), s_dec[i]))) {
        if (atomicAdd(&out->count, 1ull) == 0) out->first_input = static_cast<uint32_t>(i);
      }
    }
  }
}

TEST(CudaConvert, Nvfp4MultipliersEqualNumerics) {
  // Both sides of the fast range's ends, the ends of the fp32 range and random values across it.
  std::vector<float> s_dec;
  for (float edge : {cuda::kernels::quantize::kNvfp4FastSdecMin, cuda::kernels::quantize::kNvfp4FastSdecEnd, 0x1p-149f,
                     num::kFltMax, 1.0f}) {
    const uint32_t b = num::f2u(edge);
    for (uint32_t d = 0; d < 64; ++d) {
      if (b >= d) s_dec.push_back(num::u2f(b - d));
      if (b + d <= num::f2u(num::kFltMax)) s_dec.push_back(num::u2f(b + d));
    }
  }
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<uint32_t> bits(1, num::f2u(num::kFltMax));
  for (int i = 0; i < (quick_mode() ? 1000 : 200000); ++i) s_dec.push_back(num::u2f(bits(rng)));
  DeviceBuffer values(s_dec.size() * sizeof(float)), buf(sizeof(Mismatches));
  values.upload(s_dec.data(), s_dec.size() * sizeof(float));
  buf.fill(0);
  compare_nvfp4_multipliers<<<1024, 128>>>(reinterpret_cast<const float*>(values.get()), static_cast<int>(s_dec.size()),
                                           reinterpret_cast<Mismatches*>(buf.get()));
  MXQ_CUDA_CHECK(cudaGetLastError());
  MXQ_CUDA_CHECK(cudaDeviceSynchronize());
  Mismatches m;
  std::memcpy(&m, buf.download().data(), sizeof m);
  EXPECT_EQ(m.count, 0u) << "first differing s_dec 0x" << std::hex << (m.count ? num::f2u(s_dec[m.first_input]) : 0u);
}

TEST(CudaConvert, E4M3HardwareEqualsNumericsOnAllFp32) { check_exhaustive<num::E4M3>(); }
TEST(CudaConvert, E5M2HardwareEqualsNumericsOnAllFp32) { check_exhaustive<num::E5M2>(); }

}  // namespace
}  // namespace mxq::test
