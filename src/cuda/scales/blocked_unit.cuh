// The 16-byte unit of a blocked scale buffer (docs/spec.md section 5): the bytes at (r % 32) * 16 of a
// 512-byte tile hold rows r, r+32, r+64, r+96 of the tile, 4 columns each, so a unit is built from
// its first cell alone and written with one 16-byte store.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include <mxq/mxq.hpp>
#include <mxq/numerics/layout.hpp>

namespace mxq::cuda::kernels::scales {

constexpr int64_t kUnitBytes = 16;

__host__ __device__ inline int64_t ceil_units(int64_t bytes) { return (bytes + kUnitBytes - 1) / kUnitBytes; }

struct UnitCell {
  int64_t r, c;
};

// The (row, column) of byte k of the unit whose byte 0 sits at `first` (blocked_offset adds
// ((r % 128) / 32) * 4 + c % 4 within a unit).
__device__ __forceinline__ UnitCell unit_cell(num::RowCol first, int k) {
  return {first.r + (k / 4) * 32, first.c + k % 4};
}

// Writes the unit at byte `off` of a buffer of `bytes` bytes, byte k = value(k): one 16-byte
// store when the unit is whole and aligned, else byte by byte up to the end of the buffer.
template <class Value>
__device__ __forceinline__ void store_unit(uint8_t* out, int64_t bytes, int64_t off, Value&& value) {
  union {
    uint4 v;
    uint8_t b[16];
  } u;
#pragma unroll
  for (int k = 0; k < 16; ++k) u.b[k] = off + k < bytes ? value(k) : uint8_t{0};
  if (off + kUnitBytes <= bytes && reinterpret_cast<uintptr_t>(out + off) % 16 == 0) {
    *reinterpret_cast<uint4*>(out + off) = u.v;
  } else {
    for (int k = 0; k < 16 && off + k < bytes; ++k) out[off + k] = u.b[k];
  }
}

// Bytes of the blocked buffer of a swizzle (docs/layouts.md; src/api reports the same from
// swizzle_size).
inline int64_t blocked_buffer_bytes(const SwizzleArgs& a) {
  switch (a.group_axis) {
    case ScaleGroups::along_m: return num::group_m_scale_rows_bound(a.rows, a.groups.count) * num::blocked_cols(a.cols);
    case ScaleGroups::along_k:
      return num::blocked_rows(a.rows) * num::group_k_scale_cols_bound(a.cols, a.groups.count, 1);
    default: return a.batch * num::blocked_bytes(a.rows, a.cols);
  }
}

}  // namespace mxq::cuda::kernels::scales
