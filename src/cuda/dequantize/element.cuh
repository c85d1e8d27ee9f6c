// The output side of dequantize: fp32 values rounded (RNE, the numerics core's rules) into bf16,
// fp16 or fp32, one at a time (`store`) or eight consecutive ones in whole 16-byte stores
// (`store8`); and the code of element i of a batch's data, for the per-element kernels.
#pragma once
#include <cstdint>

#include <mxq/numerics.hpp>

namespace mxq::cuda::kernels::dequantize {

// What the caller knows of eight values, which lets bf16 skip work:
//   exact:  each is representable in bf16 (its low 16 fp32 bits are 0), so truncation is RNE;
//   finite: no NaN (Inf allowed), so num::float_to_bf16_rne's NaN branch is dead;
//   any:    anything (NaN is the canonical quiet NaN of num::dequantize_element).
enum class Known { exact, finite, any };

// bf16 bits of x in the high half of the result (garbage below), for x as `K` says. The `finite`
// form is num::float_to_bf16_rne without its NaN branch.
template <Known K>
__device__ __forceinline__ uint32_t bf16_in_high_half(float x) {
  const uint32_t u = num::f2u(x);
  if constexpr (K == Known::exact) {
    return u;
  } else if constexpr (K == Known::finite) {
    return u + 0x7FFFu + ((u >> 16) & 1u);
  } else {
    return static_cast<uint32_t>(num::float_to_bf16_rne(x)) << 16;
  }
}

// One 16-byte store to global memory (p 16-byte aligned). Written out because the compiler splits
// a uint4 assignment through a pointer it cannot prove aligned into four 4-byte stores.
__device__ __forceinline__ void store16(void* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// The 16-bit outputs: `pack2` rounds two values into one word (the first in the low half),
// `store8` eight values to elements i..i+7 (16-byte aligned).
template <class Derived>
struct HalfOut {
  static constexpr int kBytes = 2;
  template <Known K>
  static __device__ __forceinline__ void store8(void* out, int64_t i, const float (&v)[8]) {
    store16(static_cast<uint16_t*>(out) + i, Derived::template pack2<K>(v[0], v[1]),
            Derived::template pack2<K>(v[2], v[3]), Derived::template pack2<K>(v[4], v[5]),
            Derived::template pack2<K>(v[6], v[7]));
  }
};

struct Bf16Out : HalfOut<Bf16Out> {
  static __device__ __forceinline__ void store(void* out, int64_t i, float x) {
    static_cast<uint16_t*>(out)[i] = num::float_to_bf16_rne(x);
  }
  template <Known K>
  static __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    // prmt 0x7632: the high halves of the two words, lo's in the low half of the pair.
    return __byte_perm(bf16_in_high_half<K>(lo), bf16_in_high_half<K>(hi), 0x7632);
  }
};

struct Fp16Out : HalfOut<Fp16Out> {
  static __device__ __forceinline__ void store(void* out, int64_t i, float x) {
    static_cast<uint16_t*>(out)[i] = num::float_to_fp16_rne(x);
  }
  template <Known>
  static __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    return num::float_to_fp16_rne(lo) | (static_cast<uint32_t>(num::float_to_fp16_rne(hi)) << 16);
  }
};

struct Fp32Out {
  static constexpr int kBytes = 4;
  static __device__ __forceinline__ void store(void* out, int64_t i, float x) { static_cast<float*>(out)[i] = x; }
  template <Known>
  static __device__ __forceinline__ void store8(void* out, int64_t i, const float (&v)[8]) {
    float* p = static_cast<float*>(out) + i;
    store16(p, num::f2u(v[0]), num::f2u(v[1]), num::f2u(v[2]), num::f2u(v[3]));
    store16(p + 4, num::f2u(v[4]), num::f2u(v[5]), num::f2u(v[6]), num::f2u(v[7]));
  }
};

// Code number i of a batch's data (element 2i of a 4-bit pair in the low nibble).
template <class Fmt>
__device__ __forceinline__ uint32_t code_at(const uint8_t* data, int64_t i) {
  if constexpr (Fmt::elem_bits == 8) {
    return data[i];
  } else {
    return (data[i >> 1] >> ((i & 1) * 4)) & 0xFu;
  }
}

}  // namespace mxq::cuda::kernels::dequantize
