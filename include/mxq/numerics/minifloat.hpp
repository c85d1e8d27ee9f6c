// FP8 (E4M3, E5M2) and FP4 (E2M1) element codecs: encode rounds to nearest, ties to even, and
// saturates to +-max (`cvt.rn.satfinite`); -0 stays -0; NaN encodes as the format's NaN code
// (fp8: 0x7F, fp4: 0x7, which is what satfinite conversion gives for NaN).
#pragma once
#include "common.hpp"

namespace mxq::num {

// A small IEEE-like float: 1 sign bit, EBITS exponent bits (bias BIAS), MBITS mantissa bits.
template <int EBITS, int MBITS, int BIAS, uint32_t MAX_CODE, uint32_t NAN_CODE, bool HAS_INF>
struct Minifloat {
  static constexpr int ebits = EBITS;
  static constexpr int mbits = MBITS;
  static constexpr int bias = BIAS;
  static constexpr int bits = 1 + EBITS + MBITS;
  static constexpr int emin = 1 - BIAS;           // exponent of the smallest normal
  static constexpr uint32_t max_code = MAX_CODE;  // largest finite magnitude code
  static constexpr uint32_t nan_code = NAN_CODE;  // code produced for NaN (no sign)
  static constexpr uint32_t sign_bit = 1u << (bits - 1);
  static constexpr int emax = static_cast<int>(MAX_CODE >> MBITS) - BIAS;  // exponent of max
};

using E4M3 = Minifloat<4, 3, 7, 0x7E, 0x7F, false>;  // float8_e4m3fn, max 448
using E5M2 = Minifloat<5, 2, 15, 0x7B, 0x7F, true>;  // float8_e5m2, max 57344
using E2M1 = Minifloat<2, 1, 1, 0x7, 0x7, false>;    // fp4, max 6

static_assert(E4M3::emax == 8 && E5M2::emax == 15 && E2M1::emax == 2, "emax_elem of docs/spec.md");

// Encode an fp32 value. Works on the bits so that host and device give identical codes.
template <class F>
MXQ_HD constexpr uint32_t encode(float x) {
  const uint32_t u = f2u(x);
  const uint32_t sign = (u >> 31) ? F::sign_bit : 0u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > kF32ExpMask) return F::nan_code;
  if (a == kF32ExpMask) return sign | F::max_code;  // Inf saturates
  // |x| = S * 2^(E' - 150) with S the 24-bit significand (E' = 1 for fp32 subnormals).
  const int E = static_cast<int>(a >> 23);
  const uint32_t S = E ? ((a & 0x7FFFFFu) | 0x800000u) : a;
  const int e = E ? E - 127 : -126;                         // unbiased exponent of x (normal view)
  const int eq = e > F::emin ? e : F::emin;                 // binade used by the target (subnormals share emin)
  const int shift = (eq - F::mbits) - ((E ? E : 1) - 150);  // quanta of 2^(eq - mbits); >= 20
  uint32_t n = 0;
  if (shift <= 25) {
    n = S >> shift;
    const uint32_t rem = S & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (n & 1u))) ++n;
  }
  // n quanta of the binade eq; a carry to 2^(mbits+1) walks into the exponent field naturally.
  uint32_t code = (static_cast<uint32_t>(eq - F::emin) << F::mbits) + n;
  if (code > F::max_code) code = F::max_code;
  return sign | code;
}

// encode<F> without branches on the value, so that a loop over a block vectorizes: the normal
// range rounds the fp32 bits to F's mantissa with an integer add (a carry walks into the exponent),
// the subnormal range lets one fp32 addition of 2^(emin - mbits + 23) round |x| to F's quantum.
// Equal to encode<F> for every fp32 input (tests/numerics, exhaustively) in the default rounding
// mode without flush-to-zero, which the CPU backend runs in.
template <class F>
MXQ_HD constexpr uint32_t encode_branchless(float x) {
  constexpr int kDrop = 23 - F::mbits;  // fp32 mantissa bits below F's
  constexpr uint32_t kMinNormal = static_cast<uint32_t>(F::emin + 127) << 23;
  constexpr float kSubnormalMagic = pow2f(F::emin - F::mbits + 23);  // its ulp is F's quantum
  const uint32_t u = f2u(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  const uint32_t rounded = (a + ((1u << (kDrop - 1)) - 1u) + ((a >> kDrop) & 1u)) >> kDrop;
  const uint32_t normal = rounded - (static_cast<uint32_t>(127 - F::bias) << F::mbits);
  const uint32_t subnormal = f2u(u2f(a) + kSubnormalMagic) - f2u(kSubnormalMagic);
  // The choices are masks, not branches: control flow would keep the loop from vectorizing.
  const uint32_t normal_mask = 0u - static_cast<uint32_t>(a >= kMinNormal);
  uint32_t code = (normal & normal_mask) | (subnormal & ~normal_mask);
  code = code > F::max_code ? F::max_code : code;  // saturate, Inf included
  code |= (u >> 31) << (F::bits - 1);
  const uint32_t nan_mask = 0u - static_cast<uint32_t>(a > kF32ExpMask);
  return (F::nan_code & nan_mask) | (code & ~nan_mask);
}

// Decode a code to fp32 (exact). NaN codes give a quiet NaN, E5M2 Inf codes give Inf.
template <class F>
MXQ_HD constexpr float decode(uint32_t code) {
  const bool neg = (code & F::sign_bit) != 0;
  const uint32_t mag = code & (F::sign_bit - 1u);
  const uint32_t ef = mag >> F::mbits;
  const uint32_t m = mag & ((1u << F::mbits) - 1u);
  float v = 0.0f;
  if (mag > F::max_code) {
    const bool inf = (F::max_code == 0x7B) && m == 0;  // E5M2 exponent all ones, mantissa 0
    v = inf ? u2f(kF32ExpMask) : u2f(kF32QuietNaN);
  } else if (ef == 0) {
    v = static_cast<float>(m) * pow2f(F::emin - F::mbits);
  } else {
    v = static_cast<float>((1u << F::mbits) | m) * pow2f(static_cast<int>(ef) - F::bias - F::mbits);
  }
  return neg ? -v : v;
}

}  // namespace mxq::num
