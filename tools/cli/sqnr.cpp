#include "sqnr.hpp"

#include <mxq/numerics/halfprec.hpp>

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
  for (int64_t i = 0; i < n; ++i) add(load_as_float(reference, dtype, i), approximation[i]);
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
