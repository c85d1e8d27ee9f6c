// fp32 -> E2M1 (fp4) codes in few instructions, host and device (host: for the exhaustive proof in
// tests/cpu/test_e2m1_lines.cpp; tests/cuda/test_convert_exhaustive.cu repeats it on the device).
//
// The E2M1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 are three evenly spaced runs: step 0.5 up to 2,
// step 1 up to 4, step 2 up to 6. Rounding |y| to nearest-even on each run is one fused
// multiply-add with the magic addend 2^23 (fp32 spacing 1 on [2^23, 2^24), so the single rounding
// of the FMA is the integer rounding, ties to even), and the code is the smallest of the three
// rounded lines and the maximum code 7: a concave staircase is the minimum of its lines. Infinity
// saturates to 7 like num::encode; NaN is not handled (a block with a NaN is poisoned and never
// reaches these functions), which is the only input where they differ from num::encode<E2M1>.
#pragma once
#include <cmath>
#include <cstdint>

#include <mxq/numerics/common.hpp>

namespace mxq::cuda {

constexpr uint32_t kE2M1LineBase = 0x4B000000u;  // bits of 2^23, the magic addend of every line

// Bits of 2^23 + (code of |y|), for |y| = a >= 0 (or +Inf).
MXQ_HD uint32_t e2m1_magnitude_lines(float a) {
  constexpr float kMagic = 8388608.0f;  // 2^23
  const float run_half = fmaf(a, 2.0f, kMagic);         // codes 0..4 on [0, 2]: rint(2a)
  const float run_one = fmaf(a, 1.0f, kMagic + 2.0f);   // codes 4..6 on [2, 4]: rint(a) + 2
  const float run_two = fmaf(a, 0.5f, kMagic + 4.0f);   // codes 6..7 on [4, 6]: rint(a / 2) + 4
  return num::f2u(fminf(fminf(run_half, run_one), fminf(run_two, kMagic + 7.0f)));
}

// prmt.b32 (default mode): byte n of the result is byte sel[n] & 7 of {b:a}, or that byte's sign
// replicated when sel[n] & 8.
MXQ_HD uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
#else
  const uint64_t bytes = (uint64_t{b} << 32) | a;
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n) {
    const uint32_t s = (sel >> (4 * n)) & 0xFu;
    uint32_t v = static_cast<uint32_t>(bytes >> (8 * (s & 7u))) & 0xFFu;
    if (s & 8u) v = (v & 0x80u) ? 0xFFu : 0u;
    r |= v << (8 * n);
  }
  return r;
#endif
}

// The E2M1 codes of y[0..7], packed low element first (sign bit 3 of each nibble), for finite or
// infinite y (no NaN). The sign of each code is the sign bit of y, which is also the sign of
// `sign_src[j]` (the caller may pass the unscaled inputs: the multiplier is positive).
MXQ_HD uint32_t encode_e2m1x8(const float (&y)[8], const float (&sign_src)[8]) {
  // Magnitudes: sum of (line bits << 4j); the line base shifted out of 32 bits past j = 1 leaves
  // the constant base + (base << 4) to take off once.
  uint32_t word = 0;
  for (int j = 0; j < 8; ++j) word += e2m1_magnitude_lines(fabsf(y[j])) << (4 * j);
  word -= kE2M1LineBase + (kE2M1LineBase << 4);
  // Signs: byte 3 of each fp32 sign-extended into a whole byte (0xFF or 0), the even elements'
  // masks to bit 3 and the odd elements' to bit 7 of byte j / 2.
  uint32_t s[8];
  for (int j = 0; j < 8; ++j) s[j] = num::f2u(sign_src[j]);
  const uint32_t even_lo = byte_perm(s[0], s[2], 0x00FB), even_hi = byte_perm(s[4], s[6], 0x00FB);
  const uint32_t odd_lo = byte_perm(s[1], s[3], 0x00FB), odd_hi = byte_perm(s[5], s[7], 0x00FB);
  const uint32_t even = byte_perm(even_lo, even_hi, 0x5410), odd = byte_perm(odd_lo, odd_hi, 0x5410);
  return word | (even & 0x08080808u) | (odd & 0x80808080u);
}

}  // namespace mxq::cuda
