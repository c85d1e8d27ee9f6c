// E8M0 block scales of the MX formats (docs/spec.md section 2): the `rceil` and `floor` rules, the
// poison byte, and the exact reciprocal used to scale elements.
#pragma once
#include "common.hpp"

namespace mxq::num {

constexpr uint8_t kE8M0NaN = 255;

// rceil: round v = A * fl(1/max_elem) up to a power of two, from the bits of v (v >= 0, finite).
MXQ_HD constexpr uint8_t e8m0_rceil_from_bits(uint32_t v) {
  const uint32_t E = v >> 23;
  const uint32_t m = v & 0x7FFFFFu;
  const uint32_t b = E == 0 ? (m > 0x400000u ? 1u : 0u) : E + (m != 0 ? 1u : 0u);
  return static_cast<uint8_t>(b > 254u ? 254u : b);
}

// rceil from the block amax bits (as abs_bits gives them); inv_max = fl(1 / max_elem).
MXQ_HD constexpr uint8_t e8m0_rceil(uint32_t amax_bits, float inv_max) {
  if (is_nonfinite_abs_bits(amax_bits)) return kE8M0NaN;
  return e8m0_rceil_from_bits(f2u(u2f(amax_bits) * inv_max));
}

// floor (the OCP rule): clamp(E(A) - 127 - emax_elem, -127, 127) + 127.
MXQ_HD constexpr uint8_t e8m0_floor(uint32_t amax_bits, int emax_elem) {
  if (is_nonfinite_abs_bits(amax_bits)) return kE8M0NaN;
  int b = static_cast<int>(amax_bits >> 23) - 127 - emax_elem;
  b = b < -127 ? -127 : (b > 127 ? 127 : b);
  return static_cast<uint8_t>(b + 127);
}

// 1 / 2^(b - 127) built exactly; b = 254 gives the fp32 subnormal 2^-127; b = 255 gives NaN.
MXQ_HD constexpr float e8m0_reciprocal(uint8_t b) {
  return b <= 253 ? u2f(static_cast<uint32_t>(254 - b) << 23) : (b == 254 ? u2f(0x00400000u) : u2f(kF32QuietNaN));
}

// The scale value 2^(b - 127); b = 0 is 2^-127 (not zero), b = 255 is NaN.
MXQ_HD constexpr float e8m0_to_float(uint8_t b) {
  return b == kE8M0NaN ? u2f(kF32QuietNaN) : pow2f(static_cast<int>(b) - 127);
}

}  // namespace mxq::num
