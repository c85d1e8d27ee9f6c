// fp32 -> fp8 element conversion on the device. On sm_89+ one `cvt.rn.satfinite.{e4m3,e5m2}x2.f32`
// converts two values; tests/cuda/convert_test.cu proves it equal to num::encode on all
// 2^32 fp32 inputs, which is what allows it here. FP4 codes come eight at a time from e2m1_lines.hpp.
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

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
template <>
__device__ __forceinline__ uint32_t encode_pair<num::E4M3>(float lo, float hi) {
  uint32_t r;
  asm("{ .reg .b16 t; cvt.rn.satfinite.e4m3x2.f32 t, %2, %1; cvt.u32.u16 %0, t; }" : "=r"(r) : "f"(lo), "f"(hi));
  return r;
}
template <>
__device__ __forceinline__ uint32_t encode_pair<num::E5M2>(float lo, float hi) {
  uint32_t r;
  asm("{ .reg .b16 t; cvt.rn.satfinite.e5m2x2.f32 t, %2, %1; cvt.u32.u16 %0, t; }" : "=r"(r) : "f"(lo), "f"(hi));
  return r;
}
#endif

}  // namespace mxq::cuda
