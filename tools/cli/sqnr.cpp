#include "sqnr.hpp"

#include <mxq/numerics/halfprec.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

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
  // The reference is widened a piece at a time, so that the sums run over two plain fp32 arrays.
  constexpr int64_t kPiece = 1024;
  float widened[kPiece];
  const auto* bytes = static_cast<const unsigned char*>(reference);
  for (int64_t at = 0; at < n; at += kPiece) {
    const int64_t m = std::min(kPiece, n - at);
    const float* ref = widened;
    if (dtype == DType::fp32) {
      std::memcpy(widened, bytes + at * 4, static_cast<size_t>(m) * 4);
    } else {
      for (int64_t i = 0; i < m; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + (at + i) * 2, 2);
        widened[i] = dtype == DType::bf16 ? num::bf16_to_float(h) : num::fp16_to_float(h);
      }
    }
    add_finite(ref, approximation + at, m);
  }
}

void Sqnr::add_finite(const float* reference, const float* approximation, int64_t n) {
  // Four independent partial sums per quantity keep the adds from waiting on one another.
  double signal[4] = {}, noise[4] = {};
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool finite = num::abs_bits(reference[i]) < num::kF32ExpMask;
    const double r = finite ? static_cast<double>(reference[i]) : 0.0;
    const double d = finite ? r - static_cast<double>(approximation[i]) : 0.0;
    signal[i % 4] += r * r;
    noise[i % 4] += d * d;
    count += finite;
  }
  signal_ += (signal[0] + signal[1]) + (signal[2] + signal[3]);
  noise_ += (noise[0] + noise[1]) + (noise[2] + noise[3]);
  count_ += count;
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
