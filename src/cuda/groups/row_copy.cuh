// Row copies of the token-group ops: a CTA moves a run of rows with the widest access that the
// row width, the row strides and the pointers allow, several accesses per thread in flight.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "cuda/groups/tuning.hpp"

namespace mxq::cuda::kernels::groups {

// What a copy folds over the vectors it reads (`fold(v)` once per vector read): nothing here; the
// pad / unpad amax folds their maximum (abs_max.cuh).
struct NoFold {
  template <class V>
  __device__ __forceinline__ void operator()(const V&) const {}
};

// Copies n_rows rows of row_bytes (a multiple of sizeof(V)) from src (rows src_stride bytes apart)
// to contiguous rows at dst, with all Threads threads of the CTA; a null src writes zeros. Rows
// that are contiguous in both (the common case) are copied as one flat run of vectors. The loops
// are not unrolled further: a second copy of the loads in flight would spill.
template <int Threads, class V, class Fold = NoFold>
__device__ __forceinline__ void cta_copy_rows(const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t row_bytes,
                                              int64_t n_rows, Fold&& fold = Fold{}) {
  constexpr int kU = kRowCopyUnroll;
  const int64_t per_row = row_bytes / int64_t(sizeof(V)), n = per_row * n_rows;
  V* out = reinterpret_cast<V*>(dst);
  if (n == 0) return;  // also no division by a zero row width below
  if (src == nullptr) {
#pragma unroll 1
    for (int64_t i = threadIdx.x; i < n; i += Threads) out[i] = V{};
    return;
  }
  if (src_stride == row_bytes) {
    const V* in = reinterpret_cast<const V*>(src);
    int64_t i = threadIdx.x;
#pragma unroll 1
    for (; i + (kU - 1) * Threads < n; i += kU * Threads) {  // whole steps: no bounds tests
      V v[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) v[u] = in[i + u * Threads];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        out[i + u * Threads] = v[u];
        fold(v[u]);
      }
    }
    V v[kU];  // the last, partial step
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (i + u * Threads < n) v[u] = in[i + u * Threads];
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (i + u * Threads < n) {
        out[i + u * Threads] = v[u];
        fold(v[u]);
      }
    return;
  }
  // Strided rows: vector i is (row, col) of the source; stepping i by Threads steps them by a
  // fixed amount with one carry, not a 64-bit division per access.
  const int64_t row_step = Threads / per_row, col_step = Threads % per_row;
  int64_t row = threadIdx.x / per_row, col = threadIdx.x % per_row;
  auto next = [&] {
    row += row_step;
    col += col_step;
    if (col >= per_row) {
      col -= per_row;
      ++row;
    }
  };
#pragma unroll 1
  for (int64_t base = threadIdx.x; base < n; base += int64_t(kU) * Threads) {
    V v[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      if (base + u * Threads < n) v[u] = reinterpret_cast<const V*>(src + row * src_stride)[col];
      next();
    }
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (base + u * Threads < n) {
        out[base + u * Threads] = v[u];
        fold(v[u]);
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

}  // namespace mxq::cuda::kernels::groups
