// Unsigned 32-bit division by a divisor fixed at launch, as a multiply-high, an add and a shift
// (host and device; tests/cpu/fast_div_test.cpp checks it against `/`). A tile kernel turns its
// CTA index into tile coordinates with two or three divisions; as `/` each is a ~20-instruction
// sequence, a visible share of a tile's instructions.
//
// The method (round-up multiplier, Granlund & Montgomery 1994): for d >= 1 let l = ceil(log2 d)
// and m = floor(2^32 (2^l - d) / d) + 1 (m < 2^32). Then n / d = (umulhi(n, m) + n) >> l for
// every n < 2^31, and the sum stays below 2^32 because umulhi(n, m) <= n.
#pragma once
#include <cstdint>

#include <mxq/numerics/common.hpp>

namespace mxq::cuda {

struct FastDiv {
  uint32_t d = 1, mul = 1, shift = 0;

  FastDiv() = default;
  explicit FastDiv(uint32_t divisor) : d(divisor < 1 ? 1 : divisor) {
    while ((uint64_t{1} << shift) < d) ++shift;
    mul = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }

  // n / d for n < 2^31.
  MXQ_HD uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(n, mul);
#else
    const uint32_t hi = static_cast<uint32_t>((uint64_t{n} * mul) >> 32);
#endif
    return (hi + n) >> shift;
  }
};

}  // namespace mxq::cuda
