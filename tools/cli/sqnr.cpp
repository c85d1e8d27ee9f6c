#include "sqnr.hpp"

#include <mxq/numerics/halfprec.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#ifdef __SSE2__
#include <immintrin.h>
#endif

namespace mxq::cli {

float load_as_float(const void* data, DType dtype, int64_t i) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (dtype == DType::fp32) {
    float f;
    std::memcpy(&f, bytes + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes + i * 2, 2);
  return dtype == DType::bf16 ? num::bf16_to_float(h) : num::fp16_to_float(h);
}

void Sqnr::add(float reference, float approximation) {
  if (!std::isfinite(reference)) return;
  const double r = reference, d = r - static_cast<double>(approximation);
  signal_ += r * r;
  noise_ += d * d;
  ++count_;
}

void Sqnr::add(const void* reference, DType dtype, const float* approximation, int64_t n) {
  const auto* bytes = static_cast<const unsigned char*>(reference);
  for (int64_t at = 0; at < n; at += kPiece)
    add(piece_sums(bytes + at * dtype_size(dtype), dtype, approximation + at, std::min(kPiece, n - at)));
}

namespace {

// Element i goes to partial sum i % 4 and the four are added pairwise, the order every caller's
// totals depend on; four independent sums also keep the adds from waiting on one another.
struct Lanes {
  double signal[4] = {}, noise[4] = {};
  int64_t count = 0;

  void add(int lane, float x, float approximation) {
    const bool finite = num::abs_bits(x) < num::kF32ExpMask;
    const double r = finite ? static_cast<double>(x) : 0.0;
    const double d = finite ? r - static_cast<double>(approximation) : 0.0;
    signal[lane] += r * r;
    noise[lane] += d * d;
    count += finite;
  }
  SqnrSums sums() const {
    return {(signal[0] + signal[1]) + (signal[2] + signal[3]), (noise[0] + noise[1]) + (noise[2] + noise[3]), count};
  }
};

#ifdef __SSE2__
// Four elements from i on as fp32.
__m128 load4(const unsigned char* bytes, DType dtype, int64_t i) {
  if (dtype == DType::bf16) {  // bf16 is the top half of an fp32
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + i * 2));
    return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
  }
  if (dtype == DType::fp32) return _mm_loadu_ps(reinterpret_cast<const float*>(bytes + i * 4));
  return _mm_setr_ps(load_as_float(bytes, dtype, i), load_as_float(bytes, dtype, i + 1),
                     load_as_float(bytes, dtype, i + 2), load_as_float(bytes, dtype, i + 3));
}
#endif

// Lanes 0-3 of the SIMD loops below hold partial sums 0-3, so each lane adds exactly what
// Lanes::add would, in the same order. A non-finite reference lane has both its value and its
// approximation zeroed, so it adds 0 to both sums, as Lanes::add does. Returns the index where the
// loop stopped (a multiple of 4); the caller adds the rest with Lanes::add.
#ifdef __SSE2__
int64_t sums_sse2(const unsigned char* bytes, DType dtype, const float* approximation, int64_t n, Lanes& lanes) {
  __m128d s01 = _mm_setzero_pd(), s23 = _mm_setzero_pd(), n01 = _mm_setzero_pd(), n23 = _mm_setzero_pd();
  __m128i count = _mm_setzero_si128();
  const __m128i abs_mask = _mm_set1_epi32(0x7FFFFFFF), exp_mask = _mm_set1_epi32(static_cast<int>(num::kF32ExpMask));
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 x = load4(bytes, dtype, i);
    const __m128i abs = _mm_and_si128(_mm_castps_si128(x), abs_mask);
    const __m128i finite = _mm_cmplt_epi32(abs, exp_mask);  // abs < 2^31: the signed compare is right
    const __m128 keep = _mm_castsi128_ps(finite);
    const __m128 xr = _mm_and_ps(x, keep), xa = _mm_and_ps(_mm_loadu_ps(approximation + i), keep);
    const __m128d r01 = _mm_cvtps_pd(xr), r23 = _mm_cvtps_pd(_mm_movehl_ps(xr, xr));
    const __m128d d01 = _mm_sub_pd(r01, _mm_cvtps_pd(xa)), d23 = _mm_sub_pd(r23, _mm_cvtps_pd(_mm_movehl_ps(xa, xa)));
    s01 = _mm_add_pd(s01, _mm_mul_pd(r01, r01));
    s23 = _mm_add_pd(s23, _mm_mul_pd(r23, r23));
    n01 = _mm_add_pd(n01, _mm_mul_pd(d01, d01));
    n23 = _mm_add_pd(n23, _mm_mul_pd(d23, d23));
    count = _mm_sub_epi32(count, finite);  // a finite lane is -1
  }
  _mm_storeu_pd(lanes.signal, s01);
  _mm_storeu_pd(lanes.signal + 2, s23);
  _mm_storeu_pd(lanes.noise, n01);
  _mm_storeu_pd(lanes.noise + 2, n23);
  int32_t c[4];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(c), count);
  lanes.count = int64_t{c[0]} + c[1] + c[2] + c[3];
  return i;
}

// The same with four doubles a register. AVX without FMA: a multiply and an add stay two roundings.
__attribute__((target("avx"))) int64_t sums_avx(const unsigned char* bytes, DType dtype,
                                                 const float* approximation, int64_t n, Lanes& lanes) {
  __m256d signal = _mm256_setzero_pd(), noise = _mm256_setzero_pd();
  __m128i count = _mm_setzero_si128();
  const __m128i abs_mask = _mm_set1_epi32(0x7FFFFFFF), exp_mask = _mm_set1_epi32(static_cast<int>(num::kF32ExpMask));
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 x = load4(bytes, dtype, i);
    const __m128i finite = _mm_cmplt_epi32(_mm_and_si128(_mm_castps_si128(x), abs_mask), exp_mask);
    const __m128 keep = _mm_castsi128_ps(finite);
    const __m256d r = _mm256_cvtps_pd(_mm_and_ps(x, keep));
    const __m256d d = _mm256_sub_pd(r, _mm256_cvtps_pd(_mm_and_ps(_mm_loadu_ps(approximation + i), keep)));
    signal = _mm256_add_pd(signal, _mm256_mul_pd(r, r));
    noise = _mm256_add_pd(noise, _mm256_mul_pd(d, d));
    count = _mm_sub_epi32(count, finite);
  }
  _mm256_storeu_pd(lanes.signal, signal);
  _mm256_storeu_pd(lanes.noise, noise);
  int32_t c[4];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(c), count);
  lanes.count = int64_t{c[0]} + c[1] + c[2] + c[3];
  return i;
}
#endif

SqnrSums sums_of(const unsigned char* bytes, DType dtype, const float* approximation, int64_t n) {
  Lanes lanes;
  int64_t i = 0;
#ifdef __SSE2__
  static const bool avx = __builtin_cpu_supports("avx");
  i = avx ? sums_avx(bytes, dtype, approximation, n, lanes) : sums_sse2(bytes, dtype, approximation, n, lanes);
#endif
  for (int lane = 0; i < n; ++i, ++lane) lanes.add(lane, load_as_float(bytes, dtype, i), approximation[i]);
  return lanes.sums();
}

}  // namespace

SqnrSums Sqnr::piece_sums(const void* reference, DType dtype, const float* approximation, int64_t n) {
  return sums_of(static_cast<const unsigned char*>(reference), dtype, approximation, n);
}

void Sqnr::add(const SqnrSums& piece) {
  signal_ += piece.signal;
  noise_ += piece.noise;
  count_ += piece.count;
}

void Sqnr::merge(const Sqnr& other) {
  signal_ += other.signal_;
  noise_ += other.noise_;
  count_ += other.count_;
}

double Sqnr::db() const {
  if (count_ == 0 || signal_ == 0) return std::numeric_limits<double>::quiet_NaN();
  if (noise_ == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal_ / noise_);
}

std::string format_db(double db) {
  if (std::isnan(db)) return "n/a";
  if (std::isinf(db)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", db);
  return buf;
}

}  // namespace mxq::cli
