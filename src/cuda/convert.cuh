// fp32 -> fp8 element conversion on the device. On sm_89+ one `cvt.rn.satfinite.{e4m3,e5m2}x2.f32`
// converts two values; tests/cuda/test_convert_exhaustive.cu proves it equal to num::encode on all
// 2^32 fp32 inputs, which is what allows it here. E2M1 uses an integer form proven the same way.
#pragma once
#include <cstdint>

#include <mxq/numerics.hpp>

namespace mxq::cuda {

// The numerics core's codes of (lo, hi) packed into 2 * Elem::bits bits, lo in the low bits.
template <class Elem>
__device__ __forceinline__ uint32_t encode_pair_reference(float lo, float hi) {
  return num::encode<Elem>(lo) | (num::encode<Elem>(hi) << Elem::bits);
}

// The same codes, by the fastest path proven equal to the reference.
template <class Elem>
__device__ __forceinline__ uint32_t encode_pair(float lo, float hi) {
  return encode_pair_reference<Elem>(lo, hi);
}

// fp32 -> E2M1 code in integer arithmetic (no conversion instruction before sm_100). From 1.0 up the
// 1-bit mantissa is rounded to nearest even by adding just under half its ulp plus the kept bit, and
// the exponent carries naturally (Inf and NaN end above 6 and saturate to code 7, the NaN code of
// SPEC.md); below 1.0 (the format's subnormal step 0.5) two thresholds do the same: 0.25 ties down,
// 0.75 up. tests/cuda/test_convert_exhaustive.cu proves it equal to num::encode on all 2^32 inputs.
__device__ __forceinline__ uint32_t encode_e2m1(float x) {
  const uint32_t u = num::f2u(x), a = u & 0x7FFFFFFFu;
  const uint32_t rounded = a + 0x1FFFFFu + ((a >> 22) & 1u);
  const uint32_t from_one = min((rounded >> 22) - 0xFCu, 7u);  // 1.0 = 0x3F800000 -> code 2
  const uint32_t below_one = (a > 0x3E800000u) + (a >= 0x3F400000u);
  const uint32_t sign = a > num::kF32ExpMask ? 0u : (u >> 28) & 8u;  // NaN codes carry no sign
  return (a < 0x3F800000u ? below_one : from_one) | sign;
}
template <>
__device__ __forceinline__ uint32_t encode_pair<num::E2M1>(float lo, float hi) {
  return encode_e2m1(lo) | (encode_e2m1(hi) << 4);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
template <>
__device__ __forceinline__ uint32_t encode_pair<num::E4M3>(float lo, float hi) {
  uint32_t r;
  asm("{ .reg .b16 t; cvt.rn.satfinite.e4m3x2.f32 t, %2, %1; cvt.u32.u16 %0, t; }"
      : "=r"(r) : "f"(lo), "f"(hi));
  return r;
}
template <>
__device__ __forceinline__ uint32_t encode_pair<num::E5M2>(float lo, float hi) {
  uint32_t r;
  asm("{ .reg .b16 t; cvt.rn.satfinite.e5m2x2.f32 t, %2, %1; cvt.u32.u16 %0, t; }"
      : "=r"(r) : "f"(lo), "f"(hi));
  return r;
}
#endif

}  // namespace mxq::cuda
