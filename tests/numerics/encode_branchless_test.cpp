// encode_branchless<F> (the CPU backend's element encoder) against encode<F> for every one of the
// 2^32 fp32 bit patterns, for each element format. Two threads share the range.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "mxq/numerics/minifloat.hpp"

namespace num = mxq::num;

namespace {

struct Mismatches {
  uint64_t count = 0;
  uint32_t first = 0;
};

// Sanitized builds run about ten times slower: they check every 9th batch of 1024 consecutive
// patterns (every exponent and sign still), the plain build every pattern.
#if defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kBatchStride = 9;
#else
constexpr uint64_t kBatchStride = 1;
#endif

// Patterns [lo, hi) of one thread; the inner loop over a batch vectorizes like the backend's.
template <class F>
void compare_range(uint64_t lo, uint64_t hi, Mismatches* out) {
  constexpr uint32_t kBatch = 1024;
  uint32_t fast[kBatch];
  for (uint64_t base = lo; base < hi; base += kBatch * kBatchStride) {
    for (uint32_t i = 0; i < kBatch; ++i)
      fast[i] = num::encode_branchless<F>(num::u2f(static_cast<uint32_t>(base + i)));
    for (uint32_t i = 0; i < kBatch; ++i) {
      const uint32_t bits = static_cast<uint32_t>(base + i);
      if (fast[i] != num::encode<F>(num::u2f(bits)) && out->count++ == 0) out->first = bits;
    }
  }
}

template <class F>
void expect_equal_on_every_fp32(const char* name) {
  constexpr uint64_t kAll = uint64_t{1} << 32, kHalf = kAll / 2;
  Mismatches low, high;
  std::thread other([&] { compare_range<F>(kHalf, kAll, &high); });
  compare_range<F>(0, kHalf, &low);
  other.join();
  const uint32_t first = low.count ? low.first : high.first;
  EXPECT_EQ(low.count + high.count, 0u) << name << ": first mismatch at fp32 bits 0x" << std::hex << first
                                        << ": branchless 0x" << num::encode_branchless<F>(num::u2f(first))
                                        << ", encode 0x" << num::encode<F>(num::u2f(first));
}

TEST(EncodeBranchless, E4M3EveryFp32) { expect_equal_on_every_fp32<num::E4M3>("e4m3"); }
TEST(EncodeBranchless, E5M2EveryFp32) { expect_equal_on_every_fp32<num::E5M2>("e5m2"); }
TEST(EncodeBranchless, E2M1EveryFp32) { expect_equal_on_every_fp32<num::E2M1>("e2m1"); }

// Spot values, so a failure of the exhaustive tests has readable company.
static_assert(num::encode_branchless<num::E4M3>(448.0f) == 0x7E, "e4m3 max");
static_assert(num::encode_branchless<num::E4M3>(1e30f) == 0x7E, "e4m3 saturates");
static_assert(num::encode_branchless<num::E4M3>(-0.0f) == 0x80, "-0 keeps its sign");
static_assert(num::encode_branchless<num::E2M1>(0.25f) == 0x0 && num::encode_branchless<num::E2M1>(0.75f) == 0x2,
              "e2m1 ties to even");
static_assert(num::encode_branchless<num::E2M1>(-5.0f) == 0xE, "e2m1 tie at 5 goes to 4");

}  // namespace
