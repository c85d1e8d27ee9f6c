// Eight codes that share one scale (an "octet": 8 bytes of fp8 or 4 bytes of fp4, loaded at once)
// decoded to fp32 and scaled, without a table in memory:
//
// - codes to f16 pairs: e4m3 by the hardware `cvt.rn.f16x2.e4m3x2` (exact: every e4m3 value is an
//   f16), e5m2 by placing the byte above eight zero bits (e5m2 is the top byte of an f16), e2m1 by
//   a byte permutation that looks up the f16 high byte of the magnitude (low bytes are all 0) and
//   ORs in the sign. f16 to fp32 is exact. So each value equals num::decode of its code.
// - scaling: MX blocks multiply by 2^(b - 127) built from the byte; NVFP4 blocks compute
//   (decode(q) * sf) * s_dec in that order (the first product is exact, in f16 pairs): the
//   operations of num::dequantize_element, in fp32.
//
// That is num::dequantize_element exactly as long as no NaN can appear (its canonical NaN is not
// what the hardware makes) and, for the bf16 shortcut, no result lands below the smallest normal.
// `fast_scale` and `special_codes` say when an octet is such a block; other octets take
// `reference_values` (num::dequantize_element itself).
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

#include <mxq/numerics.hpp>

#include "cuda/e2m1_lines.hpp"  // byte_perm

namespace mxq::cuda::kernels::dequantize {

template <class Fmt>
struct Octet {
  static constexpr int kWords = Fmt::elem_bits == 8 ? 2 : 1;
  static constexpr int kBytes = 4 * kWords;
  uint32_t w[kWords];  // fp8: code i in byte i % 4 of w[i / 4]; fp4: code i in nibble i of w[0]
};

template <class Fmt>
MXQ_HD uint32_t octet_code(const Octet<Fmt>& o, int i) {
  if constexpr (Fmt::elem_bits == 8) {
    return (o.w[i / 4] >> (8 * (i % 4))) & 0xFFu;
  } else {
    return (o.w[0] >> (4 * i)) & 0xFu;
  }
}

MXQ_HD float f16_bits_to_float(uint32_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
#else
  return num::fp16_to_float(static_cast<uint16_t>(h));
#endif
}

// f16 bits of the e4m3 codes in bits 0..7 (low half) and 8..15 (high half) of x.
MXQ_HD uint32_t e4m3x2_to_f16x2(uint32_t x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint32_t r;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(static_cast<unsigned short>(x)));
  return r;
#else
  return num::float_to_fp16_rne(num::decode<num::E4M3>(x & 0xFFu)) |
         (static_cast<uint32_t>(num::float_to_fp16_rne(num::decode<num::E4M3>((x >> 8) & 0xFFu))) << 16);
#endif
}

// f16 high bytes of the E2M1 magnitudes 0, 0.5, 1, 1.5 | 2, 3, 4, 6 (their low bytes are 0).
constexpr uint32_t kE2M1HalfHighBytesLo = 0x3E3C3800u;
constexpr uint32_t kE2M1HalfHighBytesHi = 0x46444240u;

// h[q] = f16 bits of codes 2q (low half) and 2q + 1 (high half); non-NaN codes give their exact
// value (fp8 NaN codes give some NaN).
template <class Elem, int W>
MXQ_HD void octet_to_f16x2(const uint32_t (&w)[W], uint32_t (&h)[4]) {
  if constexpr (Elem::bits == 4) {
    const uint32_t magnitude = w[0] & 0x77777777u;
    // prmt looks up byte (selector & 7) of the table: nibbles 0..3, then 4..7, to bytes 0..3.
    const uint32_t mag_lo = byte_perm(kE2M1HalfHighBytesLo, kE2M1HalfHighBytesHi, magnitude);
    const uint32_t mag_hi = byte_perm(kE2M1HalfHighBytesLo, kE2M1HalfHighBytesHi, magnitude >> 16);
    // Signs: nibble 2j's sign is the top bit of byte j of w << 4, nibble 2j + 1's that of byte j of
    // w; prmt's sign-replicating selectors (8 | byte) spread them over bytes in nibble order.
    const uint32_t shifted = w[0] << 4;
    const uint32_t sign_lo = byte_perm(shifted, w[0], 0xD9C8u), sign_hi = byte_perm(shifted, w[0], 0xFBEAu);
    const uint32_t high_lo = mag_lo | (sign_lo & 0x80808080u), high_hi = mag_hi | (sign_hi & 0x80808080u);
    // Bytes j, j + 1 to the high bytes of the two halves, zero low bytes (bytes 4..7 are 0).
    h[0] = byte_perm(high_lo, 0u, 0x1404u);
    h[1] = byte_perm(high_lo, 0u, 0x3424u);
    h[2] = byte_perm(high_hi, 0u, 0x1404u);
    h[3] = byte_perm(high_hi, 0u, 0x3424u);
  } else {
    for (int q = 0; q < 4; ++q) {
      const uint32_t word = w[q / 2];
      if constexpr (Elem::mbits == 2) {  // e5m2: the byte is the f16's high byte
        h[q] = byte_perm(word, 0u, q % 2 ? 0x3424u : 0x1404u);
      } else {
        h[q] = e4m3x2_to_f16x2(q % 2 ? word >> 16 : word);
      }
    }
  }
}

// The smallest scale byte whose products with every nonzero code are fp32 normals:
// 2^(emin - mbits) * 2^(b - 127) >= 2^-126.
template <class Elem>
constexpr uint32_t kMinNormalScaleByte = static_cast<uint32_t>(1 + Elem::mbits - Elem::emin);

// Whether the block's scale byte lets the fast path give num::dequantize_element's values:
// MX bytes whose power of two is a normal fp32 with normal products (b = 255 is NaN); NVFP4 bytes
// that are not the UE4M3 NaN (s_dec is checked once per thread).
template <class Fmt>
MXQ_HD bool fast_scale(uint32_t sb) {
  if constexpr (Fmt::nv) {
    return (sb & 0x7Fu) != 0x7Fu;
  } else {
    constexpr uint32_t lo = kMinNormalScaleByte<typename Fmt::Elem>;
    return sb - lo <= 254u - lo;
  }
}

// Nonzero when an fp8 code of the octet is NaN or Inf (magnitude above max_code): adding
// 0x7F - max_code to each magnitude byte sets its top bit exactly then. E2M1 has neither.
template <class Fmt>
MXQ_HD uint32_t special_codes(const Octet<Fmt>& o) {
  if constexpr (Fmt::elem_bits == 8) {
    constexpr uint32_t add = (0x7Fu - Fmt::Elem::max_code) * 0x01010101u;
    return (((o.w[0] & 0x7F7F7F7Fu) + add) | ((o.w[1] & 0x7F7F7F7Fu) + add)) & 0x80808080u;
  } else {
    return 0;
  }
}

// f16 pairs multiplied by f16 pairs, for products that are exact in f16.
MXQ_HD uint32_t f16x2_mul(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  const auto half = [](uint32_t x, uint32_t y) {
    return static_cast<uint32_t>(
        num::float_to_fp16_rne(f16_bits_to_float(x & 0xFFFFu) * f16_bits_to_float(y & 0xFFFFu)));
  };
  return half(a, b) | (half(a >> 16, b >> 16) << 16);
#endif
}

// The block factor of fast octets, as bits: MX the fp32 2^(b - 127) (= num::e8m0_to_float(b) for
// b in 1..254); NVFP4 the f16 value of sf in both halves (e4m3 values are f16 normals).
template <class Fmt>
MXQ_HD uint32_t fast_factor(uint32_t sb) {
  if constexpr (Fmt::nv) {
    return e4m3x2_to_f16x2(sb * 0x0101u);
  } else {
    return sb << 23;
  }
}

// Values of an octet whose block passed fast_scale and special_codes. NVFP4: decode(q) * sf is
// exact in f16 (at most 2 + 4 significant bits, magnitudes 2^-10 .. 2688), so one f16 pair
// multiply gives num's exact fp32 product, which then takes s_dec in fp32.
template <class Fmt>
MXQ_HD void fast_values(const Octet<Fmt>& o, uint32_t factor, float s_dec, float (&v)[8]) {
  uint32_t h[4];
  octet_to_f16x2<typename Fmt::Elem>(o.w, h);
  for (int q = 0; q < 4; ++q) {
    if constexpr (Fmt::nv) {
      const uint32_t p = f16x2_mul(h[q], factor);
      v[2 * q] = f16_bits_to_float(p & 0xFFFFu) * s_dec;
      v[2 * q + 1] = f16_bits_to_float(p >> 16) * s_dec;
    } else {
      v[2 * q] = f16_bits_to_float(h[q] & 0xFFFFu) * num::u2f(factor);
      v[2 * q + 1] = f16_bits_to_float(h[q] >> 16) * num::u2f(factor);
    }
  }
}

// Any octet, one element at a time through the numerics core.
template <class Fmt>
MXQ_HD void reference_values(const Octet<Fmt>& o, uint32_t sb, float s_dec, float (&v)[8]) {
  for (int i = 0; i < 8; ++i) {
    v[i] = num::dequantize_element<Fmt>(octet_code(o, i), static_cast<uint8_t>(sb), s_dec);
  }
}

}  // namespace mxq::cuda::kernels::dequantize
