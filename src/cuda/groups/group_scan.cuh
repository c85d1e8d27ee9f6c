// Token-group spans computed on the device, in chunks of groups staged in shared memory, so that
// no op reads offsets on the host and any number of groups fits in a fixed amount of shared memory.
//
// Every CTA of a kernel walks the groups from the first one: chunk by chunk it clamps the raw ends
// (docs/spec.md section 6, num::clamp_group_end) and sums their padded sizes with block-wide scans (up
// to 64 groups: one warp's shuffle scans), then hands the chunk to the kernel's body, which works
// on the part of its own range that the chunk covers. The clamped end of group g is clamp_group_end(raw_g, end_{g-1},
// limit); since the clamp only raises to the previous end or lowers to the limit, end_{g-1} equals the running maximum
// of clamp_group_end(raw_h, 0, limit) over h < g, which a max-scan gives without a sequential pass.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include <mxq/numerics/layout.hpp>

#include "cuda/groups/tuning.hpp"

namespace mxq::cuda::kernels::groups {

// The padded size of a group of `size` rows (or columns) for each op that pads groups.
struct PadToMultiple {  // pad / unpad: A * ceil(size / A)
  int64_t alignment;
  __device__ int64_t operator()(int64_t size) const { return num::round_up(size, alignment); }
};
struct ScaleRowsAlongM {  // per-group blocked scales, groups along M: 128-row tiles
  __device__ int64_t operator()(int64_t size) const { return num::group_m_scale_rows(size); }
};
struct ScaleColsAlongK {  // per-group blocked scales, groups along K (ends in scale columns)
  __device__ int64_t operator()(int64_t size) const { return num::group_k_scale_cols(size, 1); }
};

// Shared memory of one chunk of `Chunk` groups and the scratch of the block scans.
template <int Chunk>
struct GroupChunkStorage {
  int32_t end[Chunk];         // clamped end offsets (also the staging of the raw ends)
  int64_t padded_end[Chunk];  // cumulative padded ends
  int64_t warp_totals[32];
  int64_t carry_end, carry_padded;  // the clamped and padded ends before the chunk
};

// One chunk of groups [first, first + count): local index j is group first + j.
template <int Chunk>
struct GroupChunk {
  const GroupChunkStorage<Chunk>& s;
  int64_t first;
  int count;
  __device__ int64_t begin_of(int j) const { return j ? s.end[j - 1] : s.carry_end; }
  __device__ int64_t end_of(int j) const { return s.end[j]; }
  __device__ int64_t padded_begin_of(int j) const { return j ? s.padded_end[j - 1] : s.carry_padded; }
  __device__ int64_t padded_end_of(int j) const { return s.padded_end[j]; }
  __device__ int64_t chunk_begin() const { return s.carry_end; }
  __device__ int64_t chunk_end() const { return s.end[count - 1]; }
  __device__ int64_t chunk_padded_begin() const { return s.carry_padded; }
  __device__ int64_t chunk_padded_end() const { return s.padded_end[count - 1]; }

  // The first j whose end (or padded end) is > pos; callers pass pos inside the chunk's span.
  __device__ int find_by_end(int64_t pos) const { return upper_bound(s.end, pos); }
  __device__ int find_by_padded_end(int64_t pos) const { return upper_bound(s.padded_end, pos); }

 private:
  template <class T>
  __device__ int upper_bound(const T* a, int64_t pos) const {
    int lo = 0, hi = count - 1;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (a[mid] > pos)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }
};

struct MaxOp {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a > b ? a : b; }
};
struct SumOp {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a + b; }
};

// Inclusive scan of one value per lane over the whole warp.
template <class Op>
__device__ __forceinline__ int64_t warp_inclusive_scan(int64_t v, Op op) {
  const int lane = threadIdx.x % 32;
  for (int d = 1; d < 32; d *= 2) {
    const int64_t o = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v = op(v, o);
  }
  return v;
}

// Block-wide exclusive scan of one value per thread (identity 0 for both ops: values are >= 0).
// Returns the exclusive prefix; *total receives the reduction over the block.
template <int Threads, class Op, int Chunk>
__device__ int64_t block_exclusive_scan(int64_t v, Op op, GroupChunkStorage<Chunk>& s, int64_t* total) {
  static_assert(Threads % 32 == 0 && Threads <= 1024, "whole warps");
  constexpr int kWarps = Threads / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t incl = warp_inclusive_scan(v, op);
  if (lane == 31) s.warp_totals[warp] = incl;
  __syncthreads();
  int64_t before = 0, all = 0;
  for (int w = 0; w < kWarps; ++w) {  // a few warps: a serial pass over their totals is cheapest
    if (w == warp) before = all;
    all = op(all, s.warp_totals[w]);
  }
  __syncthreads();  // warp_totals may be reused by the next scan
  const int64_t excl_in_warp = __shfl_up_sync(0xffffffffu, incl, 1);
  *total = all;
  return op(before, lane ? excl_in_warp : 0);
}

// Stages groups [0, G), 1 <= G <= kWarpChunkGroups, by warp 0 (lane l: groups l and 32 + l).
template <class PaddedSize, int Chunk>
__device__ void stage_groups_by_warp(const int32_t* raw_ends, int64_t G, int64_t limit, PaddedSize padded_size,
                                     GroupChunkStorage<Chunk>& s) {
  static_assert(Chunk >= kWarpChunkGroups, "the chunk holds every group");
  const int lane = threadIdx.x % 32;
  int32_t raw[kWarpChunkGroups / 32];
#pragma unroll
  for (int k = 0; k < kWarpChunkGroups / 32; ++k) raw[k] = 32 * k + lane < G ? __ldg(raw_ends + 32 * k + lane) : 0;
  int64_t carry_end = 0, carry_padded = 0;
#pragma unroll
  for (int k = 0; k < kWarpChunkGroups / 32; ++k) {
    const int j = 32 * k + lane;
    const bool real = j < G;
    // The max-scan of this file's header.
    const int64_t incl = warp_inclusive_scan(real ? num::clamp_group_end(raw[k], 0, limit) : 0, MaxOp{});
    const int64_t up = __shfl_up_sync(0xffffffffu, incl, 1);
    const int64_t prev = MaxOp{}(carry_end, lane ? up : 0);
    const int64_t end = real ? num::clamp_group_end(raw[k], prev, limit) : prev;
    const int64_t padded = carry_padded + warp_inclusive_scan(real ? padded_size(end - prev) : 0, SumOp{});
    if (real) {
      s.end[j] = static_cast<int32_t>(end);
      s.padded_end[j] = padded;
    }
    carry_end = __shfl_sync(0xffffffffu, end, 31);
    carry_padded = __shfl_sync(0xffffffffu, padded, 31);
  }
  if (lane == 0) s.carry_end = s.carry_padded = 0;  // what comes before group 0
}

// Walks all G groups in chunks of Threads * Items. For each chunk, body(chunk) runs on every
// thread after the chunk is staged; it returns false when the CTA needs no later chunk (the same
// value on every thread). Returns, through *end and *padded_end, the clamped and padded ends after
// the last chunk walked.
template <int Threads, int Items, class PaddedSize, class Body>
__device__ void for_each_group_chunk(const int32_t* raw_ends, int64_t G, int64_t limit, PaddedSize padded_size,
                                     GroupChunkStorage<Threads * Items>& s, Body&& body, int64_t* end_out,
                                     int64_t* padded_out) {
  constexpr int kChunk = Threads * Items;
  if (G >= 1 && G <= kWarpChunkGroups) {  // one chunk, staged by warp 0
    if (threadIdx.x < 32) stage_groups_by_warp(raw_ends, G, limit, padded_size, s);
    __syncthreads();
    body(GroupChunk<kChunk>{s, 0, static_cast<int>(G)});
    *end_out = s.end[G - 1];
    *padded_out = s.padded_end[G - 1];
    __syncthreads();  // as after the chunked walk: the caller may reuse the storage
    return;
  }
  if (threadIdx.x == 0) s.carry_end = s.carry_padded = 0;
  for (int64_t first = 0; first < G; first += kChunk) {
    const int count = static_cast<int>(G - first < kChunk ? G - first : kChunk);
    __syncthreads();  // the previous body is done with the arrays
    for (int j = threadIdx.x; j < count; j += Threads) s.end[j] = __ldg(raw_ends + first + j);
    __syncthreads();
    const int64_t carry_end = s.carry_end, carry_padded = s.carry_padded;

    int32_t raw[Items];
    int64_t local_max = 0;
    for (int k = 0; k < Items; ++k) {
      const int j = threadIdx.x * Items + k;
      raw[k] = j < count ? s.end[j] : 0;
      if (j < count) local_max = MaxOp{}(local_max, num::clamp_group_end(raw[k], 0, limit));
    }
    int64_t total;
    int64_t prev = MaxOp{}(carry_end, block_exclusive_scan<Threads>(local_max, MaxOp{}, s, &total));

    int64_t ends[Items], sizes[Items], local_sum = 0;
    for (int k = 0; k < Items; ++k) {
      const int j = threadIdx.x * Items + k;
      ends[k] = j < count ? num::clamp_group_end(raw[k], prev, limit) : prev;
      sizes[k] = j < count ? padded_size(ends[k] - prev) : 0;
      local_sum += sizes[k];
      prev = ends[k];
    }
    int64_t padded = carry_padded + block_exclusive_scan<Threads>(local_sum, SumOp{}, s, &total);
    for (int k = 0; k < Items; ++k) {
      const int j = threadIdx.x * Items + k;
      padded += sizes[k];
      if (j < count) {
        s.end[j] = static_cast<int32_t>(ends[k]);
        s.padded_end[j] = padded;
      }
    }
    __syncthreads();
    const bool more = body(GroupChunk<kChunk>{s, first, count});
    __syncthreads();
    if (threadIdx.x == 0) {
      s.carry_end = s.end[count - 1];
      s.carry_padded = s.padded_end[count - 1];
    }
    if (!more) break;
  }
  __syncthreads();
  *end_out = s.carry_end;
  *padded_out = s.carry_padded;
}

}  // namespace mxq::cuda::kernels::groups
