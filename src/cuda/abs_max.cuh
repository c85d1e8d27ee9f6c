// Tensor amax pieces shared by the reductions that fold it (tensor_amax, pad / unpad with amax):
// max |x| as fp32 bits, the unsigned max of num::abs_bits, so that NaN wins and every order of
// reduction gives the same bits as the CPU reference.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "cuda/common.cuh"

namespace mxq::cuda {

// max abs_bits over the elements of In packed in one access of type V (whole elements only).
// 16-bit inputs in 32-bit words: abs_bits of the widened value grows with the element's 15
// magnitude bits (bf16 and fp16, NaN payloads included: num::fp16_special_to_float keeps them in
// order above Inf), so the largest magnitude is found on the packed halves and widened once,
// which saves a widening per element.
template <class In, class V>
__device__ __forceinline__ uint32_t abs_max_bits(const V& v) {
  using Raw = typename In::Raw;
  static_assert(sizeof(V) % sizeof(Raw) == 0, "an access holds whole elements");
  if constexpr (sizeof(Raw) == 2 && sizeof(V) % 4 == 0) {
    constexpr int kWords = sizeof(V) / 4;
    uint32_t w[kWords];
    memcpy(w, &v, sizeof w);
    uint32_t m = 0;
#pragma unroll
    for (int j = 0; j < kWords; ++j) m = __vmaxu2(m, w[j] & 0x7FFF7FFFu);
    return num::abs_bits(In::to_float(static_cast<Raw>(max(m & 0xFFFFu, m >> 16))));
  } else {
    constexpr int kElems = sizeof(V) / sizeof(Raw);
    Raw r[kElems];
    memcpy(r, &v, sizeof r);
    uint32_t m = 0;
#pragma unroll
    for (int j = 0; j < kElems; ++j) m = max(m, num::abs_bits(In::to_float(r[j])));
    return m;
  }
}

// The CTA's maximum of every thread's m, then one atomicMax into *slot (cleared to 0 before the
// kernel). Every thread of the CTA must call it (it has a barrier).
template <int Threads>
__device__ __forceinline__ void cta_commit_max(uint32_t m, uint32_t* slot) {
  __shared__ uint32_t warp_max[Threads / 32];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < Threads / 32; ++w) m = max(m, warp_max[w]);
    if (m != 0) atomicMax(slot, m);
  }
}

}  // namespace mxq::cuda
