// Row copies of the token-group ops: a warp moves one row with the widest access that the row
// width, the row strides and the pointers allow, several accesses per lane in flight.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

namespace mxq::cuda {

// Accesses per lane issued before the first store: enough bytes in flight to saturate HBM.
constexpr int kRowCopyUnroll = 4;

// Copies n vectors of type V from src to dst with the lanes of one warp; a null src writes zeros.
template <class V>
__device__ __forceinline__ void warp_copy_row(const V* src, V* dst, int64_t n, int lane) {
  constexpr int64_t kStep = 32 * kRowCopyUnroll;
  for (int64_t base = lane; base < n; base += kStep) {
    V v[kRowCopyUnroll];
#pragma unroll
    for (int u = 0; u < kRowCopyUnroll; ++u) {
      const int64_t i = base + u * 32;
      v[u] = V{};
      if (src && i < n) v[u] = src[i];
    }
#pragma unroll
    for (int u = 0; u < kRowCopyUnroll; ++u) {
      const int64_t i = base + u * 32;
      if (i < n) dst[i] = v[u];
    }
  }
}

// The widest access (16, 8, 4, 2 or 1 bytes) that divides every given address and byte stride.
inline int widest_access(std::initializer_list<uint64_t> addresses_and_strides) {
  uint64_t bits = 16;
  for (uint64_t v : addresses_and_strides) bits |= v;
  return static_cast<int>(bits & (~bits + 1));  // lowest set bit, at most 16
}

// Calls fn(V{}) with the unsigned type of `width` bytes (16: uint4).
template <class Fn>
void dispatch_access(int width, Fn&& fn) {
  switch (width) {
    case 16: fn(uint4{}); break;
    case 8: fn(uint2{}); break;
    case 4: fn(uint32_t{}); break;
    case 2: fn(uint16_t{}); break;
    default: fn(uint8_t{});
  }
}

}  // namespace mxq::cuda
