// bf16 / fp16 <-> fp32 conversions. Widening is exact; narrowing rounds to nearest, ties to even,
// overflows to Inf and keeps NaN quiet, like the hardware `cvt.rn` (no flush to zero).
#pragma once
#include "common.hpp"

namespace mxq::num {

MXQ_HD constexpr float bf16_to_float(uint16_t h) { return u2f(static_cast<uint32_t>(h) << 16); }

// fp16 Inf / NaN (exponent field 31) in fp32, the NaN payload kept (shifted into fp32's).
MXQ_HD constexpr float fp16_special_to_float(uint16_t h) {
  return u2f((static_cast<uint32_t>(h & 0x8000u) << 16) | 0x7F800000u | (static_cast<uint32_t>(h & 0x3FFu) << 13));
}

MXQ_HD constexpr float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) return fp16_special_to_float(h);
  if (exp != 0) return u2f(sign | ((exp + 112u) << 23) | (man << 13));
  // zero or subnormal: man * 2^-24, exact in fp32
  const float mag = static_cast<float>(man) * pow2f(-24);
  return u2f(sign | f2u(mag));
}

MXQ_HD constexpr uint16_t float_to_bf16_rne(float f) {
  const uint32_t u = f2u(f);
  if ((u & 0x7FFFFFFFu) > kF32ExpMask) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  const uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7FFFu + lsb) >> 16);
}

MXQ_HD constexpr uint16_t float_to_fp16_rne(float f) {
  const uint32_t u = f2u(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > kF32ExpMask) return sign | 0x7E00u;   // NaN
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to Inf (and Inf itself)
  const int e = static_cast<int>(a >> 23) - 127;
  if (e >= -14) {  // normal fp16: drop 13 mantissa bits with RNE
    const uint32_t m = a & 0x7FFFFFu;
    uint32_t h = (static_cast<uint32_t>(e + 15) << 10) | (m >> 13);
    const uint32_t rem = m & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry walks into the exponent
    return sign | static_cast<uint16_t>(h);
  }
  // subnormal fp16 (quantum 2^-24) or zero: significand S * 2^(E-150), shift to quantum 2^-24
  const uint32_t E = a >> 23;
  const uint32_t S = E ? ((a & 0x7FFFFFu) | 0x800000u) : (a & 0x7FFFFFu);
  const int shift = 126 - static_cast<int>(E ? E : 1);  // = -24 - (E - 150)
  if (shift > 25) return sign;
  uint32_t n = S >> shift;
  const uint32_t rem = S & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (n & 1u))) ++n;
  return sign | static_cast<uint16_t>(n);
}

}  // namespace mxq::num
