// An independent oracle for the numerics core, written from docs/spec.md and the IEEE/OCP format
// definitions only. It shares no code or bit tricks with include/mxq/numerics: every format is a
// table of values decoded in double from its definition, rounding is "pick the nearest table entry,
// ties to the even code", and fp32 operations are modelled as an exact double operation followed by
// one rounding to float (exact for products of two floats; for a quotient, double rounding 53 -> 24
// bits is innocuous because 53 >= 2*24 + 2).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace oracle {

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// A binary floating-point format described by its fields. `specials` says how the all-ones
// exponent is used: none (E2M1), only the all-ones code is NaN (E4M3 "fn"), IEEE (E5M2, bf16, fp16).
enum class Specials { none, fn_nan_only, ieee };

struct FormatDesc {
  int ebits, mbits, bias;
  Specials specials;
  int bits() const { return 1 + ebits + mbits; }
  uint32_t sign_bit() const { return 1u << (ebits + mbits); }
};

constexpr FormatDesc kE4M3{4, 3, 7, Specials::fn_nan_only};
constexpr FormatDesc kE5M2{5, 2, 15, Specials::ieee};
constexpr FormatDesc kE2M1{2, 1, 1, Specials::none};
constexpr FormatDesc kBF16{8, 7, 127, Specials::ieee};
constexpr FormatDesc kFP16{5, 10, 15, Specials::ieee};

// Value of a code from the textbook definition: (-1)^s * 2^(1-bias) * (0.m) for exponent field 0,
// (-1)^s * 2^(e-bias) * (1.m) otherwise; NaN/Inf per `specials`.
inline double decode_value(const FormatDesc& f, uint32_t code) {
  const bool neg = (code & f.sign_bit()) != 0;
  const uint32_t mag = code & (f.sign_bit() - 1u);
  const uint32_t e = mag >> f.mbits;
  const uint32_t m = mag & ((1u << f.mbits) - 1u);
  const uint32_t e_all_ones = (1u << f.ebits) - 1u;
  double v;
  if (f.specials == Specials::ieee && e == e_all_ones) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (f.specials == Specials::fn_nan_only && mag == (1u << (f.ebits + f.mbits)) - 1u) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m) / (1u << f.mbits), 1 - f.bias);
  } else {
    v = std::ldexp(1.0 + static_cast<double>(m) / (1u << f.mbits), static_cast<int>(e) - f.bias);
  }
  return neg ? -v : v;
}

// All non-negative finite values of a format, indexed by code (codes 0..max_code are exactly the
// finite non-negative ones and they increase with the code).
struct ValueTable {
  FormatDesc fmt;
  std::vector<double> mag;  // mag[c] = value of positive code c, c = 0..max_code
  uint32_t max_code() const { return static_cast<uint32_t>(mag.size() - 1); }
  double max_value() const { return mag.back(); }
};

inline ValueTable make_table(const FormatDesc& f) {
  ValueTable t{f, {}};
  for (uint32_t c = 0; c < f.sign_bit(); ++c) {
    const double v = decode_value(f, c);
    if (!std::isfinite(v)) break;
    t.mag.push_back(v);
  }
  return t;
}

// Index of the table entry nearest to a >= 0, ties to the even index, among mag[0..n).
// Differences are exact in double: both operands are short binary fractions of similar size.
inline uint32_t nearest_even(const std::vector<double>& mag, size_t n, double a) {
  const auto it = std::upper_bound(mag.begin(), mag.begin() + n, a);
  if (it == mag.begin()) return 0;
  const uint32_t hi = static_cast<uint32_t>(it - mag.begin());
  const uint32_t lo = hi - 1;
  if (hi == n) return lo;
  const double d_lo = a - mag[lo], d_hi = mag[hi] - a;
  if (d_lo < d_hi) return lo;
  if (d_hi < d_lo) return hi;
  return (lo & 1u) == 0 ? lo : hi;
}

// Element encode (docs/spec.md section 2): nearest, ties to even, satfinite; NaN -> unsigned code
// 0x7F (fp8) / 0x7 (fp4); the sign of the input is kept, including for results of magnitude 0.
inline uint32_t encode_satfinite(const ValueTable& t, float x) {
  if (std::isnan(x)) return t.fmt.bits() == 8 ? 0x7Fu : 0x7u;
  const uint32_t sign = std::signbit(x) ? t.fmt.sign_bit() : 0u;
  const double a = std::fabs(static_cast<double>(x));
  const uint32_t code = a >= t.max_value() ? t.max_code() : nearest_even(t.mag, t.mag.size(), a);
  return sign | code;
}

// IEEE narrowing (RNE, overflow to Inf) of a non-NaN float to bf16 / fp16. Inf acts as the next
// value after max (2^(emax+1), an even code), so "nearest, ties to even" also gives the overflow
// threshold max + half ulp.
struct IeeeNarrow {
  ValueTable t;
  std::vector<double> with_inf;  // t.mag followed by 2^(emax+1)
  explicit IeeeNarrow(const FormatDesc& f) : t(make_table(f)), with_inf(t.mag) {
    with_inf.push_back(std::ldexp(1.0, (1 << f.ebits) - 2 - f.bias + 1));
  }
  uint16_t operator()(float x) const {
    const uint32_t sign = std::signbit(x) ? t.fmt.sign_bit() : 0u;
    const double a = std::fabs(static_cast<double>(x));
    if (std::isinf(a)) return static_cast<uint16_t>(sign | (t.max_code() + 1));
    return static_cast<uint16_t>(sign | nearest_even(with_inf, with_inf.size(), a));
  }
};

// ---- E8M0 -------------------------------------------------------------------------------------

// 2^(b-127) as a double; NaN for 255.
inline double e8m0_value(uint8_t b) {
  return b == 255 ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, b - 127);
}

// rceil from a finite v >= 0: the smallest b in [0, 254] with 2^(b-127) >= v.
inline uint8_t rceil_of_value(double v) {
  if (v <= std::ldexp(1.0, -127)) return 0;
  int e;
  const double frac = std::frexp(v, &e);  // v = frac * 2^e, frac in [0.5, 1)
  const int k = frac == 0.5 ? e - 1 : e;  // smallest k with 2^k >= v
  return static_cast<uint8_t>(std::min(k + 127, 254));
}

// fp32 product a*b: exact in double, then one rounding.
inline float mul_f32(float a, float b) { return static_cast<float>(static_cast<double>(a) * static_cast<double>(b)); }
inline float div_f32(float a, float b) { return static_cast<float>(static_cast<double>(a) / static_cast<double>(b)); }

// Scale byte of a block with amax A under rceil / floor (docs/spec.md section 2).
inline uint8_t rceil_scale(float A, double max_elem) {
  if (!std::isfinite(A)) return 255;
  const float inv_max = static_cast<float>(1.0 / max_elem);
  return rceil_of_value(mul_f32(A, inv_max));
}
inline uint8_t floor_scale(float A, int emax_elem) {
  if (!std::isfinite(A)) return 255;
  int unbiased = -127;  // E(A) - 127, with E(A) = 0 for zero and subnormal A
  if (std::fabs(A) >= std::ldexp(1.0, -126)) {
    int e;
    std::frexp(std::fabs(A), &e);  // |A| = f * 2^e, f in [0.5, 1)
    unbiased = e - 1;
  }
  return static_cast<uint8_t>(std::clamp(unbiased - emax_elem, -127, 127) + 127);
}

}  // namespace oracle
