#include "support/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include <mxq/numerics.hpp>

namespace mxq::test {

Rng Rng::fresh() {
  if (const char* s = std::getenv("MXQ_TEST_SEED")) return Rng(std::strtoull(s, nullptr, 10));
  std::random_device rd;
  return Rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
}

float Rng::normal() { return std::normal_distribution<float>(0.0f, 1.0f)(gen_); }

int64_t Rng::uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen_); }

uint32_t Rng::bits32() { return static_cast<uint32_t>(gen_()); }

HostTensor::HostTensor(DType t, int64_t b, int64_t r, int64_t c, int64_t rs, int64_t bs)
    : dtype(t), batch(b), rows(r), cols(c), row_stride(rs), batch_stride(bs) {
  const int64_t elements = batch * bstride() + rstride();
  bytes.resize(static_cast<size_t>(elements * dtype_size(t)));
  // NaN everywhere, so that a read of a gap between rows or batches poisons a block.
  const uint32_t nan = t == DType::fp32 ? 0x7FC00000u : (t == DType::bf16 ? 0x7FC0u : 0x7E00u);
  for (int64_t i = 0; i < elements; ++i) {
    std::memcpy(bytes.data() + i * dtype_size(t), &nan, static_cast<size_t>(dtype_size(t)));
  }
}

float HostTensor::get(int64_t b, int64_t r, int64_t c) const {
  const uint8_t* p = bytes.data() + index(b, r, c) * dtype_size(dtype);
  if (dtype == DType::fp32) {
    float x;
    std::memcpy(&x, p, sizeof x);
    return x;
  }
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return dtype == DType::bf16 ? num::bf16_to_float(h) : num::fp16_to_float(h);
}

void HostTensor::set(int64_t b, int64_t r, int64_t c, float x) {
  if (dtype == DType::fp32) return set_bits(b, r, c, num::f2u(x));
  set_bits(b, r, c, dtype == DType::bf16 ? num::float_to_bf16_rne(x) : num::float_to_fp16_rne(x));
}

void HostTensor::set_bits(int64_t b, int64_t r, int64_t c, uint32_t bits) {
  uint8_t* p = bytes.data() + index(b, r, c) * dtype_size(dtype);
  if (dtype == DType::fp32) {
    std::memcpy(p, &bits, 4);
  } else {
    const uint16_t h = static_cast<uint16_t>(bits);
    std::memcpy(p, &h, 2);
  }
}

TensorView HostTensor::view() const {
  TensorView v;
  v.data = bytes.data();
  v.dtype = dtype;
  v.batch = batch;
  v.rows = rows;
  v.cols = cols;
  v.row_stride = row_stride;
  v.batch_stride = batch_stride;
  return v;
}

HostTensor HostTensor::contiguous_copy() const {
  HostTensor out(dtype, batch, rows, cols);
  const int64_t es = dtype_size(dtype);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out.bytes.data() + out.index(b, r, 0) * es, bytes.data() + index(b, r, 0) * es,
                  static_cast<size_t>(cols * es));
  return out;
}

HostTensor normal_tensor(Rng& rng, DType t, int64_t batch, int64_t rows, int64_t cols, int64_t row_stride,
                         int64_t batch_stride) {
  HostTensor x(t, batch, rows, cols, row_stride, batch_stride);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) x.set(b, r, c, rng.normal());
  return x;
}

std::vector<uint32_t> special_bit_patterns(DType t) {
  switch (t) {
    case DType::fp32:
      return {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x80000000u, 0x00000001u, 0x80000001u,
              0x007FFFFFu, 0x807FFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x00800000u};
    case DType::fp16:
      return {0x7E00u, 0x7C00u, 0xFC00u, 0x8000u, 0x0001u, 0x8001u, 0x03FFu, 0x83FFu, 0x7BFFu, 0xFBFFu, 0x0400u};
    default: return {0x7FC0u, 0x7F80u, 0xFF80u, 0x8000u, 0x0001u, 0x8001u, 0x007Fu, 0x807Fu, 0x7F7Fu, 0xFF7Fu, 0x0080u};
  }
}

namespace {
HostTensor sprinkle(Rng& rng, DType t, int64_t batch, int64_t rows, int64_t cols, double p, size_t first_pattern) {
  HostTensor x = normal_tensor(rng, t, batch, rows, cols);
  const std::vector<uint32_t> specials = special_bit_patterns(t);
  std::bernoulli_distribution pick(p);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        if (pick(rng.engine())) {
          const auto i = static_cast<size_t>(
              rng.uniform(static_cast<int64_t>(first_pattern), static_cast<int64_t>(specials.size()) - 1));
          x.set_bits(b, r, c, specials[i]);
        }
  return x;
}
}  // namespace

HostTensor special_tensor(Rng& rng, DType t, int64_t batch, int64_t rows, int64_t cols, double p) {
  return sprinkle(rng, t, batch, rows, cols, p, 0);
}

HostTensor finite_special_tensor(Rng& rng, DType t, int64_t batch, int64_t rows, int64_t cols, double p) {
  return sprinkle(rng, t, batch, rows, cols, p, 3);  // skip NaN, +Inf, -Inf
}

std::vector<float> element_rounding_ties(Format f) {
  return num::dispatch_format(f, [](auto traits) {
    using Elem = typename decltype(traits)::Elem;
    std::vector<float> ties;
    for (uint32_t code = 0; code < Elem::max_code; ++code) {
      ties.push_back(0.5f * (num::decode<Elem>(code) + num::decode<Elem>(code + 1)));
    }
    return ties;
  });
}

float element_max(Format f) {
  return num::dispatch_format(f, [](auto traits) { return decltype(traits)::max_value; });
}

::testing::AssertionResult every_byte_written(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                                              const std::string& what) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure() << what << ": sizes differ (" << a.size() << " vs " << b.size() << ")";
  }
  size_t count = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && count++ == 0) first = i;
  }
  if (count == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << count << " of " << a.size()
                                       << " bytes were not written (first at byte " << first << ")";
}

::testing::AssertionResult no_poison_left(const std::vector<uint8_t>& buf, uint8_t pattern, const std::string& what) {
  const auto it = std::find(buf.begin(), buf.end(), pattern);
  if (it == buf.end()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": poison byte 0x" << std::hex << int(pattern) << std::dec
                                       << " left at byte " << (it - buf.begin());
}

::testing::AssertionResult bytes_equal(const std::vector<uint8_t>& expected, const std::vector<uint8_t>& actual,
                                       const std::string& what) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure() << what << ": sizes differ (expected " << expected.size() << ", got "
                                         << actual.size() << ")";
  }
  size_t count = 0, first = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != actual[i] && count++ == 0) first = i;
  }
  if (count == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << count << " of " << expected.size()
                                       << " bytes differ; first at byte " << first << ": expected 0x" << std::hex
                                       << int(expected[first]) << ", got 0x" << int(actual[first]) << std::dec;
}

double sqnr_db(const std::vector<float>& ref, const std::vector<float>& test) {
  double signal = 0.0, noise = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(ref[i]) - static_cast<double>(test[i]);
    signal += static_cast<double>(ref[i]) * ref[i];
    noise += d * d;
  }
  if (noise == 0.0) return INFINITY;
  return 10.0 * std::log10(signal / noise);
}

std::vector<int32_t> random_group_ends(Rng& rng, int64_t M, int64_t G, int64_t multiple, int64_t tail_rows) {
  const int64_t total = M - tail_rows;
  std::vector<int64_t> ends(static_cast<size_t>(G), total);
  for (int64_t g = 0; g + 1 < G; ++g) {
    ends[static_cast<size_t>(g)] = std::min(total, multiple * rng.uniform(0, total / multiple));
  }
  std::sort(ends.begin(), ends.end());
  if (G >= 3) {
    ends[0] = 0;                               // empty group at the front
    ends[static_cast<size_t>(G - 2)] = total;  // empty group at the end
  }
  if (G >= 5) {
    const size_t mid = static_cast<size_t>(G / 2);  // 2 <= mid <= G - 3
    ends[mid] = ends[mid - 1];                      // empty group in the middle
  }
  return std::vector<int32_t>(ends.begin(), ends.end());
}

// ctest sets MXQ_TEST_DATA_DIR (tests/CMakeLists.txt); a program run by hand from the repository
// root finds the data without it.
std::string golden_dir() {
  const char* dir = std::getenv("MXQ_TEST_DATA_DIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : "tests/data") + "/golden";
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace mxq::test
