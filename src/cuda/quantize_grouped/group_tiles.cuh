// Token groups of a grouped quantize, resolved on the device: every CTA walks the device-side end
// offsets (one warp with shuffle scans up to 64 groups, else the CTA in chunks through block scans:
// any G, fixed shared memory, no host read, no sync), handing each group's offsets and sums to a
// visitor: the strips kernel finds the groups of its 128-row tiles (find_tile_groups), the rowwise
// kernel the groups of its input rows (rows_kernel.cuh). Groups are laid out tile by tile: group g owns
// ceil(rows_g / 128) consecutive row tiles, rows_g being its (padded) rows, so that each tile maps
// onto whole 512-byte blocked scale tiles of the per-group scale layouts (docs/layouts.md: groups
// along M start on a 128-row scale tile; groups along K own Cp(ceil(rows_g / block)) columns).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include <cub/block/block_scan.cuh>

#include <mxq/numerics/layout.hpp>

namespace mxq::cuda::kernels::quantize_grouped {

constexpr int kTileRows = 128;

// What a CTA needs of the token groups. Every count fits 32 bits: the API bounds every padded row
// count, and so every sum of them, by 2^31 - 1 (the walk is integer work of every CTA before its
// first load: 32-bit arithmetic and shifts, no 64-bit divisions).
struct GroupWalk {
  const int32_t* ends = nullptr;  // raw device ends [G]
  int32_t G = 0;
  int32_t M = 0;                     // input rows, at most 2^31 - 1: ends are clamped to [previous end, M]
  int32_t pad_mask = 0;              // alignment - 1 of the padded direction(s) (a power of two), 0 when nothing pads
  int32_t block_shift = 5;           // log2 of the rows per colwise block (the format's block)
  bool tiles_from_padded = false;    // a padded direction sets the tile count of each group
  bool q_from_padded = false;        // colwise scale columns count padded rows
  int32_t* padded_starts = nullptr;  // optional outputs, written by the CTA that passes write_offsets
  int32_t* padded_ends = nullptr;
};

// Per-group quantities summed by the walk (identity: all zero, every value is >= 0).
struct GroupSums {
  int32_t padded = 0;  // A * ceil(size / A) (size when nothing pads)
  int32_t tiles = 0;   // 128-row tiles
  int32_t qcols = 0;   // colwise blocks (linear scale columns of groups along K)
  int32_t qtiles = 0;  // 512-byte tiles per 128 k rows of the group's blocked colwise scales
};

struct AddSums {
  __device__ GroupSums operator()(const GroupSums& a, const GroupSums& b) const {
    return {a.padded + b.padded, a.tiles + b.tiles, a.qcols + b.qcols, a.qtiles + b.qtiles};
  }
};
struct MaxOf {
  __device__ int32_t operator()(int32_t a, int32_t b) const { return a > b ? a : b; }
};

// The group of one tile (found false for a tile past the last group).
struct TileGroup {
  bool found = false;
  int32_t in_start = 0;      // first input row of the group (clamped end of g - 1)
  int32_t size = 0;          // input rows of the group
  int32_t padded_start = 0;  // ps_g
  int32_t padded_rows = 0;   // A * ceil(size / A) (size when nothing pads)
  int32_t tile_first = 0;    // the group's first row tile
  int32_t q_first = 0;       // the group's first colwise scale column (linear layout)
  int32_t q = 0;             // the group's colwise scale columns
  int32_t qtiles_first = 0;  // blocked colwise: scale tiles per 128 k rows of the groups before
  int32_t qtiles = 0;        // ... and of this group
  int32_t tile = 0;          // this tile inside the group
};
struct GroupTotals {   // no member initializers: it lives in shared memory
  int32_t end;         // clamped end of the last group
  int32_t padded_end;  // sum of padded sizes
  int32_t tiles;
  int32_t qcols;
  int32_t qtiles;
};

template <int Threads>
struct GroupWalkScans {
  using MaxScan = cub::BlockScan<int32_t, Threads, cub::BLOCK_SCAN_WARP_SCANS>;
  using SumScan = cub::BlockScan<GroupSums, Threads, cub::BLOCK_SCAN_WARP_SCANS>;
};

template <int Threads, int Tiles>
struct GroupWalkStorage {
  // Separate storage: the barrier inside each scan orders the reuse of the other one's storage.
  typename GroupWalkScans<Threads>::MaxScan::TempStorage max_scan;
  typename GroupWalkScans<Threads>::SumScan::TempStorage sum_scan;
  TileGroup group[Tiles];  // of the row tiles first + i * stride
  GroupTotals totals;
};

// The sums of one group of n clamped rows.
__device__ __forceinline__ GroupSums group_sums(const GroupWalk& w, int32_t n) {
  // Unsigned: a size near 2^31 plus the rounding term may pass 2^31 - 1; the results do not.
  const uint32_t un = static_cast<uint32_t>(n), mask = static_cast<uint32_t>(w.pad_mask);
  const uint32_t padded = (un + mask) & ~mask;
  const uint32_t q_rows = w.q_from_padded ? padded : un;
  GroupSums mine;
  mine.padded = static_cast<int32_t>(padded);
  mine.tiles = static_cast<int32_t>(((w.tiles_from_padded ? padded : un) + kTileRows - 1) / kTileRows);
  mine.qcols = static_cast<int32_t>((q_rows + (1u << w.block_shift) - 1) >> w.block_shift);
  mine.qtiles = (mine.qcols + 3) / 4;
  return mine;
}

// Tile `tile` of group g (input rows [start, start + n), `before`: the sums of the groups before
// it, `mine`: its own) into f.
__device__ __forceinline__ void set_tile_group(TileGroup& f, int32_t start, int32_t n, const GroupSums& before,
                                               const GroupSums& mine, int32_t tile) {
  f.found = true;
  f.in_start = start;
  f.size = n;
  f.padded_start = before.padded;
  f.padded_rows = mine.padded;
  f.tile_first = before.tiles;
  f.q_first = before.qcols;
  f.q = mine.qcols;
  f.qtiles_first = before.qtiles;
  f.qtiles = mine.qtiles;
  f.tile = tile;
}

// The strip tiles of group g (input rows [start, start + n), `before`: the sums of the groups
// before it, `mine`: its own).
template <int Tiles>
__device__ __forceinline__ void record_group(int32_t start, int32_t n, const GroupSums& before, const GroupSums& mine,
                                             int32_t first_tile, int32_t stride, int count, TileGroup (&group)[Tiles]) {
  // Exactly one group contains each tile; this one holds the tiles [lo, hi), of which the CTA's
  // are steps i_lo .. i_hi - 1.
  const int32_t lo = before.tiles, hi = lo + mine.tiles;
  if constexpr (Tiles == 1) {
    // One tile: a range test, which keeps the divisions by the stride below out of every walk step
    // of the one-tile kernel's start path.
    if (count > 0 && first_tile >= lo && first_tile < hi)
      set_tile_group(group[0], start, n, before, mine, first_tile - lo);
  } else {
    const int i_lo =
        lo <= first_tile ? 0 : static_cast<int>((static_cast<uint32_t>(lo - first_tile) + stride - 1) / stride);
    const int i_hi = hi <= first_tile
                         ? 0
                         : min(count, static_cast<int>((static_cast<uint32_t>(hi - first_tile) + stride - 1) / stride));
    for (int i = i_lo; i < i_hi; ++i) set_tile_group(group[i], start, n, before, mine, first_tile + i * stride - lo);
  }
}

// Every group's walk result goes to visit(start, n, before, mine); the padded offsets are written
// here when write_offsets.
template <class Visit>
__device__ __forceinline__ void visit_group(const GroupWalk& w, int32_t g, int32_t start, int32_t n,
                                            const GroupSums& before, const GroupSums& mine, bool write_offsets,
                                            Visit& visit) {
  visit(start, n, before, mine);
  if (write_offsets) {
    if (w.padded_starts) w.padded_starts[g] = before.padded;
    if (w.padded_ends) w.padded_ends[g] = before.padded + mine.padded;
  }
}

__device__ __forceinline__ GroupSums shfl_up_sums(const GroupSums& v, int d) {
  return {__shfl_up_sync(0xFFFFFFFFu, v.padded, d), __shfl_up_sync(0xFFFFFFFFu, v.tiles, d),
          __shfl_up_sync(0xFFFFFFFFu, v.qcols, d), __shfl_up_sync(0xFFFFFFFFu, v.qtiles, d)};
}

// Few groups: one warp walks them, two per lane, with shuffle scans (no block barriers: the other
// warps only wait at the caller's barrier, and the CTA's walk costs a tenth of the block scans').
constexpr int kWarpWalkGroups = 64;
constexpr int kWarpWalkPerLane = kWarpWalkGroups / 32;
static_assert(kWarpWalkPerLane == 2, "walk_groups_warp takes two groups per lane");

// The raw end offsets of the one-warp walk, lane l holding groups 2 l and 2 l + 1: loaded up
// front, so that the walk waits for one L2 round trip, which the caller may issue before other
// loads.
struct WarpEnds {
  int32_t raw[kWarpWalkPerLane];
};
__device__ __forceinline__ WarpEnds load_warp_ends(const GroupWalk& w) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  WarpEnds e;
#pragma unroll
  for (int h = 0; h < kWarpWalkPerLane; ++h) {
    const int32_t g = kWarpWalkPerLane * lane + h;
    e.raw[h] = g < w.G ? __ldg(w.ends + g) : 0;
  }
  return e;
}

// The walk of G <= kWarpWalkGroups groups by one warp (all 32 lanes call it), two adjacent groups
// per lane: one scan of 32 lanes for up to 64 groups, as the walk is on every CTA's path to its
// first load and a second step of scans for G = 33-64 showed in the grouped kernels' time.
template <class Visit>
__device__ void walk_groups_warp(const GroupWalk& w, const WarpEnds& ends, bool write_offsets, Visit& visit,
                                 GroupTotals& totals) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int32_t ga = kWarpWalkPerLane * lane, gb = ga + 1;  // load_warp_ends' raw[0] and raw[1]
  const bool real_a = ga < w.G, real_b = gb < w.G;
  // The clamped end of g is the running maximum of min(max(raw_h, 0), M) over h <= g
  // (num::clamp_group_end).
  const int32_t ca = real_a ? max(min(ends.raw[0], w.M), 0) : 0;
  const int32_t cb = real_b ? max(min(ends.raw[1], w.M), 0) : 0;
  int32_t incl = max(ca, cb);
  for (int d = 1; d < 32; d *= 2) {
    const int32_t o = __shfl_up_sync(0xFFFFFFFFu, incl, d);
    if (lane >= d) incl = max(incl, o);
  }
  const int32_t up = __shfl_up_sync(0xFFFFFFFFu, incl, 1);
  const int32_t prev = lane > 0 ? up : 0;
  const int32_t end_a = max(ca, prev), end_b = max(cb, end_a);
  const GroupSums mine_a = group_sums(w, end_a - prev), mine_b = group_sums(w, end_b - end_a);
  const GroupSums pair = AddSums{}(mine_a, mine_b);
  GroupSums sum = pair;  // inclusive
  for (int d = 1; d < 32; d *= 2) {
    const GroupSums o = shfl_up_sums(sum, d);
    if (lane >= d) sum = AddSums{}(sum, o);
  }
  const GroupSums before_a = {sum.padded - pair.padded, sum.tiles - pair.tiles, sum.qcols - pair.qcols,
                              sum.qtiles - pair.qtiles};
  const GroupSums before_b = AddSums{}(before_a, mine_a);
  if (real_a) visit_group(w, ga, prev, end_a - prev, before_a, mine_a, write_offsets, visit);
  if (real_b) visit_group(w, gb, end_a, end_b - end_a, before_b, mine_b, write_offsets, visit);
  if (lane == 31) totals = {incl, sum.padded, sum.tiles, sum.qcols, sum.qtiles};
}

// Many groups: the CTA walks them, one group per thread and step, with block scans; every
// thread must call it, and `totals` is written by thread 0 (the caller's barrier publishes it).
template <int Threads, class Visit>
__device__ void walk_groups_block(const GroupWalk& w, bool write_offsets, Visit& visit,
                                  typename GroupWalkScans<Threads>::MaxScan::TempStorage& max_scan,
                                  typename GroupWalkScans<Threads>::SumScan::TempStorage& sum_scan,
                                  GroupTotals& totals) {
  using Scans = GroupWalkScans<Threads>;
  int32_t carry_end = 0;  // every thread keeps the running carries in registers
  GroupSums carry;
  for (int32_t first = 0; first < w.G; first += Threads) {
    const int32_t g = first + static_cast<int32_t>(threadIdx.x);
    const bool real = g < w.G;
    const int32_t capped = min(real ? __ldg(w.ends + g) : 0, w.M);
    int32_t prev, chunk_max;
    typename Scans::MaxScan(max_scan).ExclusiveScan(real ? max(capped, 0) : 0, prev, int32_t{0}, MaxOf{}, chunk_max);
    prev = max(prev, carry_end);
    const int32_t end = real ? max(capped, prev) : prev;
    const GroupSums mine = group_sums(w, end - prev);
    GroupSums before, chunk_sum;
    typename Scans::SumScan(sum_scan).ExclusiveScan(mine, before, GroupSums{}, AddSums{}, chunk_sum);
    before = AddSums{}(carry, before);
    if (real) visit_group(w, g, prev, end - prev, before, mine, write_offsets, visit);
    carry_end = max(carry_end, chunk_max);
    carry = AddSums{}(carry, chunk_sum);
  }
  if (threadIdx.x == 0) totals = {carry_end, carry.padded, carry.tiles, carry.qcols, carry.qtiles};
}

// Walks all groups; on return (after a barrier) s.group[i] holds the group of row tile
// first_tile + i * stride for i < count <= Tiles (found false when the tile is past the last
// group) and s.totals the sums over all groups. Every thread of the CTA must call it. Up to
// kWarpWalkGroups groups one warp walks them, more the CTA. kOneBarrier: with the one-warp walk,
// warp 0 also resets the records (after issuing the loads of the offsets), so that the CTA waits
// at one barrier instead of two.
template <int Threads, int Tiles, bool kOneBarrier = false>
__device__ void find_tile_groups(const GroupWalk& w, int32_t first_tile, int32_t stride, int count, bool write_offsets,
                                 GroupWalkStorage<Threads, Tiles>& s) {
  static_assert(Tiles <= 32, "warp 0 resets the records");
  auto record = [&](int32_t start, int32_t n, const GroupSums& before, const GroupSums& mine) {
    record_group(start, n, before, mine, first_tile, stride, count, s.group);
  };
  if (kOneBarrier && w.G <= kWarpWalkGroups) {
    if (threadIdx.x < 32) {
      const WarpEnds ends = load_warp_ends(w);
      if (threadIdx.x < Tiles) s.group[threadIdx.x].found = false;
      __syncwarp();
      walk_groups_warp(w, ends, write_offsets, record, s.totals);
    }
    __syncthreads();
    return;
  }
  if (threadIdx.x < Tiles) s.group[threadIdx.x].found = false;
  __syncthreads();
  if (w.G <= kWarpWalkGroups) {
    if (threadIdx.x < 32) walk_groups_warp(w, load_warp_ends(w), write_offsets, record, s.totals);
  } else {
    walk_groups_block<Threads>(w, write_offsets, record, s.max_scan, s.sum_scan, s.totals);
  }
  __syncthreads();
}

}  // namespace mxq::cuda::kernels::quantize_grouped
