// Dequantize with token groups (docs/layouts.md): each CTA owns a strip of 32 data rows and finds,
// from the device-side ends (groups/group_scan.cuh: no host read, any G), the group of each of its
// rows, the row inside the group and where the group's scales start. Then it converts the strip
// 32 x 32 elements at a time like the ungrouped kernel (colwise through shared memory). Rows that
// belong to no group (past the last end, or past the last padded end) come out as 0.
#pragma once
#include <cstdint>

#include <mxq/numerics.hpp>

#include "../groups/group_scan.cuh"
#include "kernel.cuh"

namespace mxq::cuda::dequant {

constexpr int kGroupedThreads = kTile * kRowsPerPass;
constexpr int kGroupedColumnCtas = 8;  // CTAs that share one strip of rows, column tiles dealt round robin

struct GroupedProblem {
  const uint8_t* data = nullptr;
  const uint8_t* scales = nullptr;
  void* out = nullptr;
  const int32_t* ends = nullptr;  // raw device ends [G]
  int64_t G = 0;
  int64_t M = 0;         // input rows: the ends are clamped to [previous end, M]
  int64_t R = 0;         // data rows of the direction = output rows (padded bound when it pads)
  int64_t K = 0;
  int64_t pad = 0;       // alignment of the direction, 0 when it does not pad
  bool blocked = true;
  int64_t k_blocks = 0;  // rowwise: scale columns ceil(K/b)
  int64_t pitch = 0;     // colwise linear: scale columns L = ceil(R/b) + G
  int64_t tiles_k = 0;
  const float* s_dec = nullptr;  // nvfp4: [1] (token groups are 2-D)
};

// The scale units that a group of n input rows occupies before the next group's scales: rowwise
// blocked Rp(rows) scale rows; colwise ceil(rows/b) linear or Cp(ceil(rows/b)) blocked columns
// (rows: the group's data rows, padded when the direction pads). Rowwise linear scales follow the
// data rows and need none.
template <class Fmt, bool COLWISE>
struct GroupScaleUnits {
  int64_t pad;
  bool blocked;
  __device__ int64_t operator()(int64_t n) const {
    const int64_t rows = pad > 0 ? num::round_up(n, pad) : n;
    if (COLWISE) return blocked ? num::group_k_scale_cols(rows, Fmt::block) : num::ceil_div(rows, Fmt::block);
    return blocked ? num::group_m_scale_rows(rows) : 0;
  }
};

// What the strip knows of each of its rows.
struct StripRows {
  int64_t group[kTile];        // -1: the row belongs to no group
  int64_t local[kTile];        // row inside its group's data rows
  int64_t scale_base[kTile];   // the group's first scale unit (GroupScaleUnits summed over earlier groups)
  int64_t scale_units[kTile];  // the group's own scale units
};

// Fills rows for data rows [m0, m0 + kTile) by two walks over the groups: the data spans (padded
// or not), then the scale units of the groups found. Every thread must call it.
template <class Fmt, bool COLWISE>
__device__ void find_strip_groups(const GroupedProblem& p, int64_t m0, StripRows& rows,
                                  GroupChunkStorage<kGroupedThreads>& s) {
  const int t = threadIdx.x;
  const int64_t m_last = min(m0 + kTile, p.R) - 1;
  if (t < kTile) rows.group[t] = -1;
  int64_t end = 0, padded_end = 0;
  auto find_rows = [&](const GroupChunk<kGroupedThreads>& c) {
    const int64_t m = m0 + t;
    if (t < kTile && m <= m_last && m >= c.chunk_padded_begin() && m < c.chunk_padded_end()) {
      const int j = c.find_by_padded_end(m);
      rows.group[t] = c.first + j;
      rows.local[t] = m - c.padded_begin_of(j);
    }
    return c.chunk_padded_end() <= m_last;
  };
  // Alignment 1 leaves the sizes as they are: the "padded" ends are then the clamped ends.
  for_each_group_chunk<kGroupedThreads, 1>(p.ends, p.G, p.M, PadToMultiple{p.pad > 0 ? p.pad : 1}, s, find_rows,
                                           &end, &padded_end);
  int64_t last_group = -1;  // the same on every thread
  for (int i = 0; i < kTile; ++i) last_group = max(last_group, rows.group[i]);
  __syncthreads();  // the first walk's last reads of s are done before the second walk resets it
  if (last_group < 0 || (!COLWISE && !p.blocked)) return;
  auto find_scales = [&](const GroupChunk<kGroupedThreads>& c) {
    if (t < kTile) {
      const int64_t j = rows.group[t] - c.first;
      if (j >= 0 && j < c.count) {
        rows.scale_base[t] = c.padded_begin_of(static_cast<int>(j));
        rows.scale_units[t] = c.padded_end_of(static_cast<int>(j)) - rows.scale_base[t];
      }
    }
    return c.first + c.count <= last_group;
  };
  for_each_group_chunk<kGroupedThreads, 1>(p.ends, p.G, p.M, GroupScaleUnits<Fmt, COLWISE>{p.pad, p.blocked}, s,
                                           find_scales, &end, &padded_end);
}

// Element (m, k) of the output, m a row of the strip (i = m - m0) that belongs to a group.
template <class Fmt, bool COLWISE>
__device__ __forceinline__ float grouped_element(const GroupedProblem& p, const StripRows& rows, int i, int64_t m,
                                                 int64_t k, float s_dec) {
  int64_t code_index, scale;
  if constexpr (!COLWISE) {
    const int64_t c = k / Fmt::block, cp = num::blocked_cols(p.k_blocks);
    code_index = m * p.K + k;
    scale = p.blocked ? rows.scale_base[i] * cp + num::blocked_offset(rows.local[i], c, cp / 4) : m * p.k_blocks + c;
  } else {
    const int64_t c = rows.local[i] / Fmt::block;
    code_index = k * p.R + m;
    scale = p.blocked ? rows.scale_base[i] * num::blocked_rows(p.K) + num::blocked_offset(k, c, rows.scale_units[i] / 4)
                      : rows.scale_base[i] + k * p.pitch + c;
  }
  return num::dequantize_element<Fmt>(code_at<Fmt>(p.data, code_index), p.scales[scale], s_dec);
}

template <class Fmt, class Out, bool COLWISE>
__global__ void __launch_bounds__(kGroupedThreads) dequantize_grouped_kernel(const GroupedProblem p) {
  __shared__ GroupChunkStorage<kGroupedThreads> s;
  __shared__ StripRows rows;
  __shared__ float tile[kTile][kTile + 1];
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTile;
  find_strip_groups<Fmt, COLWISE>(p, m0, rows, s);
  __syncthreads();
  const float s_dec = Fmt::nv ? p.s_dec[0] : 1.0f;
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (int64_t kt = blockIdx.y; kt < p.tiles_k; kt += gridDim.y) {
    const int64_t k0 = kt * kTile;
    if constexpr (!COLWISE) {
      for (int i = ty; i < kTile; i += kRowsPerPass) {
        const int64_t m = m0 + i, k = k0 + tx;
        if (m < p.R && k < p.K) {
          Out::store(p.out, m * p.K + k, rows.group[i] >= 0 ? grouped_element<Fmt, false>(p, rows, i, m, k, s_dec) : 0.0f);
        }
      }
    } else {
      for (int i = ty; i < kTile; i += kRowsPerPass) {  // read along m (contiguous in the codes)
        const int64_t k = k0 + i, m = m0 + tx;
        if (m < p.R && k < p.K) {
          tile[i][tx] = rows.group[tx] >= 0 ? grouped_element<Fmt, true>(p, rows, tx, m, k, s_dec) : 0.0f;
        }
      }
      __syncthreads();
      for (int i = ty; i < kTile; i += kRowsPerPass) {  // write along k (contiguous in the output)
        const int64_t m = m0 + i, k = k0 + tx;
        if (m < p.R && k < p.K) Out::store(p.out, m * p.K + k, tile[tx][i]);
      }
      __syncthreads();  // the next column tile overwrites tile
    }
  }
}

}  // namespace mxq::cuda::dequant
