// Token groups of a grouped quantize, resolved on the device: every CTA walks the device-side end
// offsets in chunks staged through block scans (any G, fixed shared memory, no host read, no sync)
// and finds the group of its 128-row tile. Groups are laid out tile by tile: group g owns
// ceil(rows_g / 128) consecutive row tiles, rows_g being its (padded) rows, so that each tile maps
// onto whole 512-byte blocked scale tiles of the per-group scale layouts (docs/layouts.md: groups
// along M start on a 128-row scale tile; groups along K own Cp(ceil(rows_g / block)) columns).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include <cub/block/block_scan.cuh>

#include <mxq/numerics/layout.hpp>

namespace mxq::cuda::qgroup {

constexpr int kTileRows = 128;

// What a CTA needs of the token groups.
struct GroupWalk {
  const int32_t* ends = nullptr;  // raw device ends [G]
  int64_t G = 0;
  int64_t M = 0;                  // input rows: ends are clamped to [previous end, M]
  int64_t pad = 0;                // alignment A of the padded direction(s), 0 when nothing pads
  int64_t block = 32;             // rows per colwise block (the format's block)
  bool tiles_from_padded = false; // a padded direction sets the tile count of each group
  bool q_from_padded = false;     // colwise scale columns count padded rows
  int32_t* padded_starts = nullptr;  // optional outputs, written by the CTA that passes write_offsets
  int32_t* padded_ends = nullptr;
};

// Per-group quantities summed by the walk (identity: all zero, every value is >= 0). 32 bits
// suffice: the API bounds every padded row count, and so every sum, by 2^31 - 1.
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

// The group of one tile, or the totals for a tile past the last group.
struct TileGroup {
  bool found = false;
  int64_t in_start = 0;      // first input row of the group (clamped end of g - 1)
  int64_t size = 0;          // input rows of the group
  int64_t padded_start = 0;  // ps_g
  int64_t padded_rows = 0;   // A * ceil(size / A) (size when nothing pads)
  int64_t tile_first = 0;    // the group's first row tile
  int64_t tiles = 0;         // the group's row tiles
  int64_t q_first = 0;       // the group's first colwise scale column (linear layout)
  int64_t q = 0;             // the group's colwise scale columns
  int64_t qtiles_first = 0;  // blocked colwise: scale tiles per 128 k rows of the groups before
  int64_t qtiles = 0;        // ... and of this group
  int64_t tile = 0;          // this tile inside the group
};
struct GroupTotals {
  int64_t end = 0;         // clamped end of the last group
  int64_t padded_end = 0;  // sum of padded sizes
  int64_t tiles = 0;
  int64_t qcols = 0;
  int64_t qtiles = 0;
};

template <int Threads, int Items, int Tiles>
struct GroupWalkStorage {
  using MaxScan = cub::BlockScan<int32_t, Threads, cub::BLOCK_SCAN_WARP_SCANS>;
  using SumScan = cub::BlockScan<GroupSums, Threads, cub::BLOCK_SCAN_WARP_SCANS>;
  // Separate storage: the barrier inside each scan orders the reuse of the other one's storage.
  typename MaxScan::TempStorage max_scan;
  typename SumScan::TempStorage sum_scan;
  TileGroup group[Tiles];  // of the row tiles first + i * stride
  GroupTotals totals;
};

// Walks all groups; on return (after a barrier) s.group[i] holds the group of row tile
// first + i * stride for i < count <= Tiles (found false when the tile is past the last group) and
// s.totals the sums over all groups. Every thread of the CTA must call it.
template <int Threads, int Items, int Tiles>
__device__ void find_tile_groups(const GroupWalk& w, int64_t first_tile, int64_t stride, int count,
                                 bool write_offsets, GroupWalkStorage<Threads, Items, Tiles>& s) {
  using Storage = GroupWalkStorage<Threads, Items, Tiles>;
  constexpr int kChunk = Threads * Items;
  if (threadIdx.x < Tiles) s.group[threadIdx.x].found = false;
  __syncthreads();
  int32_t carry_end = 0;  // every thread keeps the running carries in registers
  GroupSums carry;
  for (int64_t first = 0; first < w.G; first += kChunk) {
    int32_t raw[Items];
    int32_t local_max = 0;
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const int64_t g = first + threadIdx.x * Items + k;
      raw[k] = g < w.G ? __ldg(w.ends + g) : 0;
      // The clamped end of g is the running maximum of clamp(raw_h, 0, M) over h <= g.
      if (g < w.G) local_max = MaxOf{}(local_max, static_cast<int32_t>(num::clamp_group_end(raw[k], 0, w.M)));
    }
    int32_t prev32, chunk_max;
    typename Storage::MaxScan(s.max_scan).ExclusiveScan(local_max, prev32, int32_t{0}, MaxOf{}, chunk_max);
    int64_t prev = MaxOf{}(prev32, carry_end);

    GroupSums mine[Items], local;
    int64_t starts[Items], sizes[Items];
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const int64_t g = first + threadIdx.x * Items + k;
      const int64_t end = g < w.G ? num::clamp_group_end(raw[k], prev, w.M) : prev;
      const int64_t n = end - prev;
      const int64_t padded = w.pad > 0 ? num::round_up(n, w.pad) : n;
      starts[k] = prev;
      sizes[k] = n;
      mine[k].padded = static_cast<int32_t>(padded);
      mine[k].tiles = static_cast<int32_t>(num::ceil_div(w.tiles_from_padded ? padded : n, int64_t{kTileRows}));
      mine[k].qcols = static_cast<int32_t>(num::ceil_div(w.q_from_padded ? padded : n, w.block));
      mine[k].qtiles = static_cast<int32_t>(num::ceil_div(int64_t{mine[k].qcols}, int64_t{4}));
      local = AddSums{}(local, mine[k]);
      prev = end;
    }
    GroupSums before, chunk_sum;
    typename Storage::SumScan(s.sum_scan).ExclusiveScan(local, before, GroupSums{}, AddSums{}, chunk_sum);
    before = AddSums{}(carry, before);
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const int64_t g = first + threadIdx.x * Items + k;
      if (g < w.G) {
        // Exactly one group contains each tile; this one holds the tiles [lo, hi), of which the
        // CTA's are steps i_lo .. i_hi - 1.
        const int64_t lo = before.tiles, hi = lo + mine[k].tiles;
        const int64_t i_lo = lo <= first_tile ? 0 : num::ceil_div(lo - first_tile, stride);
        const int64_t i_hi = hi <= first_tile ? 0 : min(int64_t{count}, num::ceil_div(hi - first_tile, stride));
        for (int64_t i = i_lo; i < i_hi; ++i) {
          const int64_t tile = first_tile + i * stride;
          TileGroup& f = s.group[i];
          f.found = true;
          f.in_start = starts[k];
          f.size = sizes[k];
          f.padded_start = before.padded;
          f.padded_rows = mine[k].padded;
          f.tile_first = before.tiles;
          f.tiles = mine[k].tiles;
          f.q_first = before.qcols;
          f.q = mine[k].qcols;
          f.qtiles_first = before.qtiles;
          f.qtiles = mine[k].qtiles;
          f.tile = tile - before.tiles;
        }
        if (write_offsets) {
          if (w.padded_starts) w.padded_starts[g] = static_cast<int32_t>(before.padded);
          if (w.padded_ends) w.padded_ends[g] = static_cast<int32_t>(before.padded + mine[k].padded);
        }
      }
      before = AddSums{}(before, mine[k]);
    }
    carry_end = MaxOf{}(carry_end, chunk_max);
    carry = AddSums{}(carry, chunk_sum);
  }
  if (threadIdx.x == 0) s.totals = {carry_end, carry.padded, carry.tiles, carry.qcols, carry.qtiles};
  __syncthreads();
}

}  // namespace mxq::cuda::qgroup
