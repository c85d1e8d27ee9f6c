// Row copies of the token-group ops: a CTA moves a run of rows with the widest access that the
// row width, the row strides and the pointers allow, several accesses per thread in flight.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

namespace mxq::cuda {

// Accesses per thread issued before the first store: enough bytes in flight to saturate HBM.
constexpr int kRowCopyUnroll = 4;

// Copies n_rows rows of row_bytes (a multiple of sizeof(V)) from src (rows src_stride bytes apart)
// to contiguous rows at dst, with all Threads threads of the CTA; a null src writes zeros. Rows
// that are contiguous in both (the common case) are copied as one flat run of vectors.
template <int Threads, class V>
__device__ __forceinline__ void cta_copy_rows(const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t row_bytes,
                                              int64_t n_rows) {
  constexpr int64_t kStep = int64_t(Threads) * kRowCopyUnroll;
  const int64_t per_row = row_bytes / int64_t(sizeof(V)), n = per_row * n_rows;
  V* out = reinterpret_cast<V*>(dst);
  if (src == nullptr) {
    for (int64_t i = threadIdx.x; i < n; i += Threads) out[i] = V{};
    return;
  }
  if (src_stride == row_bytes) {
    const V* in = reinterpret_cast<const V*>(src);
    for (int64_t base = threadIdx.x; base < n; base += kStep) {
      V v[kRowCopyUnroll];
#pragma unroll
      for (int u = 0; u < kRowCopyUnroll; ++u)
        if (base + u * Threads < n) v[u] = in[base + u * Threads];
#pragma unroll
      for (int u = 0; u < kRowCopyUnroll; ++u)
        if (base + u * Threads < n) out[base + u * Threads] = v[u];
    }
    return;
  }
  for (int64_t base = threadIdx.x; base < n; base += kStep) {
    V v[kRowCopyUnroll];
#pragma unroll
    for (int u = 0; u < kRowCopyUnroll; ++u) {
      const int64_t i = base + u * Threads;
      if (i < n) v[u] = reinterpret_cast<const V*>(src + (i / per_row) * src_stride)[i % per_row];
    }
#pragma unroll
    for (int u = 0; u < kRowCopyUnroll; ++u)
      if (base + u * Threads < n) out[base + u * Threads] = v[u];
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
