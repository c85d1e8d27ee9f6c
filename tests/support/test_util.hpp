// Shared test utilities: a freshly seeded RNG whose seed is reported on failure, host tensors of
// bf16/fp16/fp32 with normal and special values, poison patterns, SQNR, and token-group ends.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <mxq/mxq.hpp>

namespace mxq::test {

// Seeded from std::random_device (or from the MXQ_TEST_SEED environment variable, to replay a
// failure). Declare it with MXQ_FRESH_RNG so that failures print the seed.
class Rng {
 public:
  static Rng fresh();
  explicit Rng(uint64_t seed) : seed_(seed), gen_(seed) {}
  uint64_t seed() const { return seed_; }
  float normal();                           // standard normal
  int64_t uniform(int64_t lo, int64_t hi);  // inclusive bounds
  uint32_t bits32();
  std::mt19937_64& engine() { return gen_; }

 private:
  uint64_t seed_;
  std::mt19937_64 gen_;
};

#define MXQ_FRESH_RNG(name)                          \
  ::mxq::test::Rng name = ::mxq::test::Rng::fresh(); \
  SCOPED_TRACE(::testing::Message() << "rng seed " << name.seed() << " (replay: MXQ_TEST_SEED=" << name.seed() << ")")

// A host tensor (batch, rows, cols) with optional row / batch strides (in elements); the bytes
// between rows are filled with NaN so that a read outside the view shows up.
struct HostTensor {
  DType dtype = DType::bf16;
  int64_t batch = 1, rows = 0, cols = 0, row_stride = 0, batch_stride = 0;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(DType t, int64_t batch, int64_t rows, int64_t cols, int64_t row_stride = 0, int64_t batch_stride = 0);
  int64_t rstride() const { return row_stride ? row_stride : cols; }
  int64_t bstride() const { return batch_stride ? batch_stride : rows * rstride(); }
  int64_t index(int64_t b, int64_t r, int64_t c) const { return b * bstride() + r * rstride() + c; }

  float get(int64_t b, int64_t r, int64_t c) const;               // exact widening to fp32
  void set(int64_t b, int64_t r, int64_t c, float x);             // rounds to nearest even
  void set_bits(int64_t b, int64_t r, int64_t c, uint32_t bits);  // raw pattern of the dtype
  TensorView view() const;
  HostTensor contiguous_copy() const;  // same values, no strides
};

// Standard normal values.
HostTensor normal_tensor(Rng& rng, DType t, int64_t batch, int64_t rows, int64_t cols, int64_t row_stride = 0,
                         int64_t batch_stride = 0);

// Raw bit patterns of the special values of a dtype: NaN, +-Inf, -0, smallest and largest
// subnormal (both signs), the dtype max (both signs), the smallest normal.
std::vector<uint32_t> special_bit_patterns(DType t);
// Normal values with each element replaced, with probability p, by one of special_bit_patterns.
HostTensor special_tensor(Rng& rng, DType t, int64_t batch, int64_t rows, int64_t cols, double p);
// Finite specials only (no NaN / Inf): -0, subnormals, max, smallest normal.
HostTensor finite_special_tensor(Rng& rng, DType t, int64_t batch, int64_t rows, int64_t cols, double p);

// Midpoints between adjacent positive codes of a format's element type (exact ties of RNE when
// the block scale is 1), and the element maximum.
std::vector<float> element_rounding_ties(Format f);
float element_max(Format f);

// Poison patterns: run an op twice on buffers filled with each of them; a byte that differs between
// the two runs was not written (a single pattern could collide with a legal output value).
constexpr uint8_t kPoisonA = 0xA5;
constexpr uint8_t kPoisonB = 0x5A;
inline std::vector<uint8_t> poisoned(size_t bytes, uint8_t pattern) { return std::vector<uint8_t>(bytes, pattern); }
// The bytes of a vector of trivially copyable values (float scales, int32 offsets), for the byte checks below.
template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
// Passes when a and b are equal; otherwise names the first unwritten byte and their count.
::testing::AssertionResult every_byte_written(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                                              const std::string& what);
// Passes when no byte equals `pattern` (for outputs where that value is impossible).
::testing::AssertionResult no_poison_left(const std::vector<uint8_t>& buf, uint8_t pattern, const std::string& what);
// Passes when a and b are byte-for-byte equal; otherwise names the first difference.
::testing::AssertionResult bytes_equal(const std::vector<uint8_t>& expected, const std::vector<uint8_t>& actual,
                                       const std::string& what);

// Signal-to-quantization-noise ratio in dB: 10 log10(sum ref^2 / sum (ref - test)^2).
double sqnr_db(const std::vector<float>& ref, const std::vector<float>& test);

// G cumulative group ends over M rows. For G >= 3 there is an empty group at the front, one in
// the middle and one at the end. Cut points are multiples of `multiple` (except M itself). With
// tail_rows > 0 the last end is M - tail_rows (rows that belong to no group; needs M >= tail_rows).
std::vector<int32_t> random_group_ends(Rng& rng, int64_t M, int64_t G, int64_t multiple = 1, int64_t tail_rows = 0);

// The directory of the golden vectors (tests/data/golden).
std::string golden_dir();
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace mxq::test
