// Internal: the benchmark's input values, a counter-based standard normal so that the host and the
// device produce the same tensor from (seed, index) without a generator state.
#pragma once
#include <mxq/numerics/common.hpp>
#include <mxq/numerics/halfprec.hpp>
#include <mxq/types.hpp>
#include <math.h>

#include <cstdint>

namespace mxq::bench {

MXQ_HD uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Box-Muller on two 24-bit uniforms of one hash: u1 in (0, 1], u2 in [0, 1).
MXQ_HD float normal_at(uint64_t seed, uint64_t index) {
  const uint64_t h = splitmix64(seed ^ splitmix64(index));
  const float u1 = static_cast<float>((h >> 40) + 1) * 5.9604644775390625e-8f;  // 2^-24
  const float u2 = static_cast<float>((h >> 16) & 0xFFFFFFu) * 5.9604644775390625e-8f;
  return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795865f * u2);
}

// Element `index` of the input in its dtype's bit pattern (u8: a uniform random byte).
MXQ_HD uint32_t random_bits_at(DType t, uint64_t seed, uint64_t index) {
  switch (t) {
    case DType::bf16: return num::float_to_bf16_rne(normal_at(seed, index));
    case DType::fp16: return num::float_to_fp16_rne(normal_at(seed, index));
    case DType::fp32: return num::f2u(normal_at(seed, index));
    case DType::u8: return static_cast<uint32_t>(splitmix64(seed ^ index) & 0xFFu);
  }
  return 0;
}

// Writes element `index` of a tensor of dtype t.
MXQ_HD void store_random(void* data, DType t, uint64_t seed, uint64_t index) {
  const uint32_t bits = random_bits_at(t, seed, index);
  switch (dtype_size(t)) {
    case 1: static_cast<uint8_t*>(data)[index] = static_cast<uint8_t>(bits); break;
    case 2: static_cast<uint16_t*>(data)[index] = static_cast<uint16_t>(bits); break;
    default: static_cast<uint32_t*>(data)[index] = bits; break;
  }
}

}  // namespace mxq::bench
