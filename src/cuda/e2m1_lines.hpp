// fp32 -> E2M1 (fp4) codes in few instructions, two elements per bf16x2 instruction, host and
// device (host: for the proofs in tests/cpu/e2m1_lines_test.cpp, with the bf16 arithmetic emulated
// exactly; tests/cuda/convert_test.cu repeats them on the device's instructions).
//
// The E2M1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 are three evenly spaced runs: step 0.5 up to 2,
// step 1 up to 4, step 2 up to 6. Rounding |y| to nearest-even on each run is one fused
// multiply-add whose single rounding is the integer rounding, ties to even: bf16 has spacing 1/2
// on [64, 128), so fma(|y|, 1, 64) = 64 + rint(2|y|) / 2, fma(|y|, 1/2, 65) = 64 + (rint(|y|) + 2) / 2
// and fma(|y|, 1/4, 66) = 64 + (rint(|y| / 2) + 4) / 2 (the addends' mantissas are even, so the
// tie-breaking parity is the code's). The code is the smallest of the three lines and the maximum
// code 7 (a concave staircase is the minimum of its lines); bf16 64 + n / 2 has the bits
// 0x4280 + n, so the code is the low byte less 0x80.
//
// The input reaches the lines as bf16 rounded to odd (truncated, the last bit set when anything
// was cut off): 8 significant bits, at least two more than any E2M1 rounding boundary has
// (0.25, 0.75, ..., 5 have at most three), so rounding to odd never moves a value across or onto
// a boundary and the lines round it like the fp32 value itself. For bf16 inputs nothing is cut off.
//
// Two entry points:
// - encode_e2m1_pow2: x times a power of two 2^k (the MX formats' E8M0 reciprocals 2^-127..2^127).
//   The lines take x itself, the multiplier folded into their slopes (2^k, 2^(k-1), 2^(k-2), bf16
//   values): their fma rounds x * 2^k once, like num::encode of the fp32 product, which is exact
//   except where it is below 2^-126 (code 0 either way) or overflows (code 7 either way); rounding
//   x to odd commutes with the exact scaling down to bf16's subnormals, whose spacing 2^-133 is
//   still 16 times finer than the boundaries of any product that can reach code 1.
// - encode_e2m1: y already scaled (nvfp4, where the fp32 product must round first).
// encode_e2m1_pow2_pairs takes the pairs themselves: bf16 words as they are (bf16x2_exact_pair),
// fp16 words scaled by 2^-112 (fp16x2_scaled_odd_pair), with no widening to fp32.
// Infinity saturates to 7 like num::encode; NaN is not handled (a block with a NaN is poisoned and
// never reaches these functions), which is the only input where they differ from num::encode<E2M1>.
#pragma once
#include <cmath>
#include <cstdint>

#include <mxq/numerics/common.hpp>

namespace mxq::cuda {

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

// Bitwise (c ? b & ~a : a): where the mask c is set, b's bit if a's is clear, else 0; a's bit
// elsewhere. One lop3.b32 (LUT 0x58).
MXQ_HD uint32_t select_bits_where_clear(uint32_t a, uint32_t b, uint32_t c) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0x58;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
#else
  return (c & b & ~a) | (~c & a);
#endif
}

// Unsigned minimum of each 16-bit half.
MXQ_HD uint32_t u16x2_min(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __vminu2(a, b);
#else
  const uint32_t lo = (a & 0xFFFFu) < (b & 0xFFFFu) ? (a & 0xFFFFu) : (b & 0xFFFFu);
  const uint32_t hi = (a >> 16) < (b >> 16) ? (a >> 16) : (b >> 16);
  return lo | (hi << 16);
#endif
}

#if !defined(__CUDA_ARCH__)
namespace host_bf16 {

inline double to_double(uint32_t h) { return static_cast<double>(num::u2f((h & 0xFFFFu) << 16)); }

// The bf16 bits of round-to-nearest-even(v + err), where v + err is an exact sum and v is its
// rounding to double (err breaks ties of v exactly between two bf16 values); subnormals kept,
// overflow to infinity. Not for NaN.
inline uint32_t round_sum(double v, double err) {
  const uint32_t sign = std::signbit(v) ? 0x8000u : 0u;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7F80u;
  if (a == 0.0) return sign;
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const double quantum = std::ldexp(1.0, (e - 1 - 7) < -133 ? -133 : (e - 1 - 7));
  const double scaled = a / quantum;  // exact: a power-of-two scaling
  double n = std::floor(scaled);
  const double frac = scaled - n;
  const bool err_up = err != 0.0 && (err > 0.0) == (v > 0.0);  // the exact sum is larger in magnitude
  if (frac > 0.5 || (frac == 0.5 && (err_up || (err == 0.0 && std::fmod(n, 2.0) != 0.0)))) n += 1.0;
  const double r = n * quantum;
  if (r >= 0x1p128) return sign | 0x7F80u;
  return sign | (num::f2u(static_cast<float>(r)) >> 16);  // r is a bf16 value: exact in fp32
}

// One half of fma.rn.bf16x2 for non-NaN operands.
inline uint32_t fma_half(uint32_t a, uint32_t b, uint32_t c) {
  const double p = to_double(a) * to_double(b);  // exact: 8 x 8 significant bits
  const double z = to_double(c);
  if (std::isinf(p) || std::isinf(z)) return round_sum(p + z, 0.0);
  const double s = p + z;
  const double bp = s - z, err = (p - bp) + (z - (s - bp));  // TwoSum: s + err == p + z exactly
  return round_sum(s, err);
}

}  // namespace host_bf16
#endif

// fma.rn.bf16x2 on two packed bf16 pairs (the product and sum rounded once, subnormals kept).
MXQ_HD uint32_t bf16x2_fma(uint32_t a, uint32_t b, uint32_t c) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
#else
  return host_bf16::fma_half(a, b, c) | (host_bf16::fma_half(a >> 16, b >> 16, c >> 16) << 16);
#endif
}

// add.rn.bf16x2 (one rounding, subnormals kept) for non-NaN operands.
MXQ_HD uint32_t bf16x2_add(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  return bf16x2_fma(a, 0x3F803F80u, b);  // a * 1 + b
#endif
}

// min.bf16x2 for non-NaN operands.
MXQ_HD uint32_t bf16x2_min(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("min.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  uint32_t r = 0;
  for (int h = 0; h < 32; h += 16) {
    const uint32_t x = (a >> h) & 0xFFFFu, y = (b >> h) & 0xFFFFu;
    r |= (host_bf16::to_double(y) < host_bf16::to_double(x) ? y : x) << h;
  }
  return r;
#endif
}

// mul.rn.bf16x2 (one rounding, subnormals kept) for non-NaN operands.
MXQ_HD uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  return bf16x2_fma(a, b, 0x80008000u);  // a * b + (-0)
#endif
}

// The low (kHigh false) or high half of a bf16x2 in both halves. On the device two moves that
// ptxas folds into the consumer's operand (a .H0_H0 or .H1_H1 swizzle).
template <bool kHigh>
MXQ_HD uint32_t bf16x2_broadcast(uint32_t v) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  if constexpr (kHigh) {
    asm("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %1; mov.b32 %0, {hi, hi}; }" : "=r"(r) : "r"(v));
  } else {
    asm("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %1; mov.b32 %0, {lo, lo}; }" : "=r"(r) : "r"(v));
  }
  return r;
#else
  return byte_perm(v, 0, kHigh ? 0x3232 : 0x1010);
#endif
}

// Two fp32 values as one bf16x2 pair, the first low: `truncated` keeps their top 16 bits (signs
// included), `magnitudes` the magnitudes rounded to odd (the sticky bit: the low 16 bits not all
// zero). kVisible: in plain integer operations that the compiler sees through, so that for bf16
// values (low 16 bits zero, as it knows when they were widened from bf16) the pair is the word
// they came from and no sticky bit is computed; else by byte permutes (one instruction each).
struct Bf16x2Odd {
  uint32_t truncated, magnitudes;
};
template <bool kVisible>
MXQ_HD Bf16x2Odd round_to_odd_bf16x2(float v0, float v1) {
  const uint32_t u0 = num::f2u(v0), u1 = num::f2u(v1);
  uint32_t truncated, sticky;
  if constexpr (kVisible) {
    truncated = (u0 >> 16) | (u1 & 0xFFFF0000u);
    const uint32_t cut = (u0 & 0xFFFFu) | (u1 << 16);
    sticky = cut == 0 ? 0u : u16x2_min(cut, 0x00010001u);
  } else {
    truncated = byte_perm(u0, u1, 0x7632);
    sticky = u16x2_min(byte_perm(u0, u1, 0x5410), 0x00010001u);
  }
  return {truncated, (truncated & 0x7FFF7FFFu) | sticky};
}

constexpr uint32_t kLineBase = 0x42804280u;     // 64: codes 0..4 on [0, 2]
constexpr uint32_t kLineBaseOne = 0x42824282u;  // 65: codes 4..6 on [2, 4]
constexpr uint32_t kLineBaseTwo = 0x42844284u;  // 66: codes 6..7 on [4, 6]
constexpr uint32_t kLineMaxCode = 0x42874287u;  // 67.5: code 7

// The smallest of the three lines and code 7, in each half: bf16 64 + code / 2.
MXQ_HD uint32_t e2m1_min_lines(uint32_t run_half, uint32_t run_one, uint32_t run_two) {
  return bf16x2_min(bf16x2_min(run_half, run_one), bf16x2_min(run_two, kLineMaxCode));
}

// Codes packed low element first (sign bit 3 of each nibble) from the lines of P = 2 or 4 pairs
// (element 2k in the low half of lines[k], 2k + 1 in the high half) and the signs of the same
// pairs (bit 15 and bit 31 of signs[k]).
template <int P>
MXQ_HD uint32_t pack_e2m1(const uint32_t (&lines)[P], const uint32_t (&signs)[P]) {
  static_assert(P == 2 || P == 4, "four or eight codes");
  // Line bytes 0x80 + code of elements 0..3 (and 4..7), one per byte, and the signs as whole bytes
  // (0xFF or 0, by the sign-replicating byte permute). Bit 3 of a line byte is 0 and bit 7 is 1:
  // under the mask 0x88 each byte takes the sign for bit 3 and clears bit 7 (one LOP3). Then
  // bytes 0 and 2 of x + (x >> 4) hold the nibble pairs of elements (0, 1) and (2, 3).
  constexpr uint32_t kSignAndTop = 0x88888888u;
  uint32_t nibbles[P / 2];
  for (int w = 0; w < P / 2; ++w) {
    const uint32_t x = select_bits_where_clear(byte_perm(lines[2 * w], lines[2 * w + 1], 0x6420),
                                               byte_perm(signs[2 * w], signs[2 * w + 1], 0xFDB9), kSignAndTop);
    nibbles[w] = x + (x >> 4);
  }
  if constexpr (P == 4) {
    return byte_perm(nibbles[0], nibbles[1], 0x6420);
  } else {
    return byte_perm(nibbles[0], 0, 0x4420);
  }
}

// E2M1 codes of the elements of P = 2 or 4 pairs (as round_to_odd_bf16x2 gives them) times pow2
// (a power of two in [2^-127, 2^127]), packed low element first.
template <int P>
MXQ_HD uint32_t encode_e2m1_pow2_pairs(const Bf16x2Odd (&pairs)[P], float pow2) {
  // Slopes pow2 (the high half of its fp32 bits, whose low half is zero), then pow2 / 2 and
  // pow2 / 4 from one bf16x2 multiply: exact, bf16 keeps powers of two down to 2^-133.
  const uint32_t slope_one = bf16x2_broadcast<true>(num::f2u(pow2));
  const uint32_t slopes = bf16x2_mul(slope_one, 0x3E803F00u);  // (pow2 / 2, pow2 / 4)
  const uint32_t slope_half = bf16x2_broadcast<false>(slopes);
  const uint32_t slope_quarter = bf16x2_broadcast<true>(slopes);
  uint32_t lines[P], signs[P];
  for (int k = 0; k < P; ++k) {
    signs[k] = pairs[k].truncated;
    lines[k] = e2m1_min_lines(bf16x2_fma(pairs[k].magnitudes, slope_one, kLineBase),
                              bf16x2_fma(pairs[k].magnitudes, slope_half, kLineBaseOne),
                              bf16x2_fma(pairs[k].magnitudes, slope_quarter, kLineBaseTwo));
  }
  return pack_e2m1<P>(lines, signs);
}

// A packed pair of bf16 values as round_to_odd_bf16x2 gives it for their fp32 widenings (nothing
// is cut off, so no sticky bit): for bf16 words that are not already pairs of consecutive elements
// (a column's elements from two staged rows), one byte permute per pair instead of widening both.
MXQ_HD Bf16x2Odd bf16x2_exact_pair(uint32_t bf16x2) { return {bf16x2, bf16x2 & 0x7FFF7FFFu}; }

// An fp16x2 word as the pair round_to_odd_bf16x2 gives for its elements times 2^-112: fp16's
// exponent and top 7 mantissa bits read as a bf16 (exponent bias 15 against 127), the 3 bits cut
// off as the sticky bit, fp16 subnormals as bf16 subnormals (multiples of 2^-133 rounded to odd).
// So encode_e2m1_pow2_pairs(pairs, pow2 * 2^112) gives the codes of x * pow2 without widening x,
// as long as pow2 * 2^112 is a finite bf16 power of two (pow2 <= kFp16PairsMaxPow2): an E2M1
// boundary of x * pow2 (an odd multiple of 1/4) is then an even multiple of the odd rounding's
// spacing even on the subnormals (2^-133 * pow2 * 2^112 <= 2^-6), so rounding to odd keeps every
// value on its side. Proven on every fp16 and scale by tests/cpu/e2m1_lines_test.cpp.
constexpr float kFp16PairsScale = 0x1p112f;
constexpr float kFp16PairsMaxPow2 = 0x1p15f;
MXQ_HD Bf16x2Odd fp16x2_scaled_odd_pair(uint32_t fp16x2) {
  const uint32_t magnitudes = fp16x2 & 0x7FFF7FFFu;
  const uint32_t sticky = u16x2_min(magnitudes & 0x00070007u, 0x00010001u);
  return {fp16x2, ((magnitudes >> 3) & 0x0FFF0FFFu) | sticky};  // the signs stay in bits 15 and 31
}

// E2M1 codes of x[j] * pow2 (x: N = 4 or 8 fp32 values, no NaN; pow2: a power of two in
// [2^-127, 2^127]), packed low element first.
template <int N>
MXQ_HD uint32_t encode_e2m1_pow2(const float (&x)[N], float pow2) {
  Bf16x2Odd pairs[N / 2];
  for (int k = 0; k < N / 2; ++k) pairs[k] = round_to_odd_bf16x2<true>(x[2 * k], x[2 * k + 1]);
  return encode_e2m1_pow2_pairs<N / 2>(pairs, pow2);
}

// E2M1 codes of y (N = 4 or 8 fp32 values, finite or infinite, no NaN), packed low element first.
template <int N>
MXQ_HD uint32_t encode_e2m1(const float (&y)[N]) {
  constexpr uint32_t kHalf = 0x3F003F00u, kQuarter = 0x3E803E80u;
  uint32_t lines[N / 2], signs[N / 2];
  for (int k = 0; k < N / 2; ++k) {
    const Bf16x2Odd pair = round_to_odd_bf16x2<false>(y[2 * k], y[2 * k + 1]);
    signs[k] = pair.truncated;
    lines[k] = e2m1_min_lines(bf16x2_add(pair.magnitudes, kLineBase), bf16x2_fma(pair.magnitudes, kHalf, kLineBaseOne),
                              bf16x2_fma(pair.magnitudes, kQuarter, kLineBaseTwo));
  }
  return pack_e2m1<N / 2>(lines, signs);
}

}  // namespace mxq::cuda
