// The fp32 -> fp8 (hardware) and fp4 (integer form) conversions of the kernels (src/cuda/convert.cuh) equal the
// numerics core's num::encode on every one of the 2^32 fp32 inputs (the fp4 line encoder of
// cuda/e2m1_lines.hpp on every non-NaN one; a sample with MXQ_TEST_QUICK).
#include <gtest/gtest.h>

#include "cuda/convert.cuh"
#include "cuda/e2m1_lines.hpp"
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

// The kernels' eight-at-a-time E2M1 encoder (cuda/e2m1_lines.hpp) on every non-NaN fp32 input:
// eight consecutive patterns per word, each at its own nibble (NaN patterns become zero: NaN only
// occurs in poisoned blocks, which never reach that encoder).
__global__ void compare_e2m1x8_all(uint64_t words, uint64_t stride, Mismatches* out) {
  for (uint64_t w = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; w < words; w += uint64_t(gridDim.x) * blockDim.x) {
    float y[8];
    for (int j = 0; j < 8; ++j) {
      const uint32_t bits = static_cast<uint32_t>((w * 8 + j) * stride);
      y[j] = (bits & 0x7FFFFFFFu) > num::kF32ExpMask ? 0.0f : num::u2f(bits);
    }
    const uint32_t word = cuda::encode_e2m1x8(y, y);
    for (int j = 0; j < 8; ++j) {
      if (((word >> (4 * j)) & 0xFu) != num::encode<num::E2M1>(y[j])) {
        if (atomicAdd(&out->count, 1ull) == 0) out->first_input = num::f2u(y[j]);
      }
    }
  }
}

TEST(CudaConvert, E2M1LinesEqualNumericsOnAllNonNanFp32) {
  DeviceBuffer buf(sizeof(Mismatches));
  buf.fill(0);
  const uint64_t stride = quick_mode() ? 40503 : 1;
  const uint64_t words = (uint64_t{1} << 32) / stride / 8;
  compare_e2m1x8_all<<<1024, 256>>>(words, stride, reinterpret_cast<Mismatches*>(buf.get()));
  MXQ_CUDA_CHECK(cudaGetLastError());
  MXQ_CUDA_CHECK(cudaDeviceSynchronize());
  Mismatches m;
  std::memcpy(&m, buf.download().data(), sizeof m);
  EXPECT_EQ(m.count, 0u) << "first differing fp32 input 0x" << std::hex << m.first_input;
}

TEST(CudaConvert, E4M3HardwareEqualsNumericsOnAllFp32) { check_exhaustive<num::E4M3>(); }
TEST(CudaConvert, E5M2HardwareEqualsNumericsOnAllFp32) { check_exhaustive<num::E5M2>(); }

}  // namespace
}  // namespace mxq::test
