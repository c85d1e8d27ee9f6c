// Bit-level helpers used by every numerics header. Host and device, constexpr where the
// language allows (__builtin_bit_cast is constexpr in g++ >= 11, clang and nvcc).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define MXQ_HD __host__ __device__ __forceinline__
#else
#define MXQ_HD inline
#endif

namespace mxq::num {

MXQ_HD constexpr uint32_t f2u(float f) { return __builtin_bit_cast(uint32_t, f); }
MXQ_HD constexpr float u2f(uint32_t u) { return __builtin_bit_cast(float, u); }

constexpr uint32_t kF32ExpMask = 0x7F800000u;  // |x| bits >= this: Inf or NaN
constexpr uint32_t kF32QuietNaN = 0x7FC00000u;
constexpr float kFltMax = 3.40282346638528859812e+38f;

// |x| as fp32 bits. Non-negative floats order like their bit patterns as unsigned integers, and
// NaN patterns sort above Inf, so a max over these bits is an amax in which NaN wins.
MXQ_HD constexpr uint32_t abs_bits(float x) { return f2u(x) & 0x7FFFFFFFu; }
MXQ_HD constexpr bool is_nonfinite_abs_bits(uint32_t a) { return a >= kF32ExpMask; }

// 2^k as an exact fp32 for k in [-149, 127] (subnormal below -126).
MXQ_HD constexpr float pow2f(int k) {
  return k >= -126 ? u2f(static_cast<uint32_t>(k + 127) << 23) : u2f(1u << (k + 149));
}

// 1 / p rounded to nearest for p in [2^-126, 2^126) (exponent field 1..252). The device takes the
// in-range path of the compiler's IEEE reciprocal (an approximate reciprocal and one fma
// correction) without its range test and call to the general routine;
// tests/cuda/convert_test.cu proves it equal to 1.0f / p on every such p.
MXQ_HD float rcp_rn_in_range(float p) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(p));
  return __fmaf_rn(r, __fmaf_rn(-p, r, 1.0f), r);
#else
  return 1.0f / p;
#endif
}
constexpr float kRcpInRangeMin = 0x1p-126f;  // rcp_rn_in_range: p >= this and p < kRcpInRangeEnd
constexpr float kRcpInRangeEnd = 0x1p126f;

MXQ_HD constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
MXQ_HD constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace mxq::num
