// Grouped colwise quantize with groups along K padded to whole blocks, on windows of input rows:
// CTA (w, tk) stages input rows [112 w, 112 w + 144) at column tile tk as soon as it starts,
// walks the offsets while the copies are in flight, and quantizes every colwise block that
// starts in its first 112 rows (a block holds at most 32 rows, so it lies inside the window;
// one group, whose blocks start on multiples of 32, takes windows of 128 rows: OneGroupWindows).
// The group-local tiles of kernel.cuh must walk before they know which rows to load, and each
// group ends in a partial tile of its own; here the loads need no walk and a group boundary costs
// one block more in its window, not a tile.
//
// With padding to a multiple of the block, block j of group g writes the transposed codes
// [32 (q_first_g + j), + 32) of every k row: the blocks of all groups, padding blocks included,
// are numbered 0, 1, ... in the transposed output, and a window's blocks are a run of them
// [b_lo, b_hi). The padding blocks of a group (alignments above 32) belong to the window of its
// last block with rows. Rounds of kWindowSlots blocks per column go through the staged output tile
// and out as whole 16-byte segments of the transposed rows; their scales are staged as one blocked
// tile and go out as 16-byte words where the round's blocks are one whole blocked tile of a group,
// byte by byte otherwise (a window's blocks need not start on a 512-byte scale tile), with the
// zero columns of a group's blocked scale tiles written beside its last block: store_round_scales.
#pragma once
#include <cstdint>

#include "cuda/quantize_grouped/kernel.cuh"

namespace mxq::cuda::kernels::quantize_grouped {

// A window's geometry: it owns the block starts in its first kOwned rows and stages kStaged rows,
// the rows of every block it owns: 32 more for blocks that start anywhere, none more (kOwned a
// multiple of 32) for blocks that start on multiples of 32.
template <int kOwned, int kStaged>
struct WindowShape {
  static constexpr int owned = kOwned, staged = kStaged;
  static_assert(kStaged % 16 == 0 && (kStaged == kOwned + 32 || (kStaged == kOwned && kOwned % 32 == 0)),
                "whole passes of 16 rows holding every owned block");
};
// Windows of tuning.hpp's geometry; one group (G = 1) starts at row 0, so its blocks start on
// multiples of 32 and a plain tile's rows stage every row of its blocks. With more groups a block
// may start anywhere and need up to 31 rows of the next window, which these windows stage.
using GroupWindows = WindowShape<kWindowOwnedRows, kWindowStagedRows>;
using OneGroupWindows = WindowShape<kOneGroupWindowRows, kOneGroupWindowRows>;
constexpr int kWindowSlots = 4;  // blocks per column per round (the output tile's)

// A group with blocks in the window: input rows [start, start + size), its blocks (padding blocks
// included) [q_first, q_first + q) and its blocked scale matrix (qtiles 512-byte tiles per 128 k
// rows, after qtiles_first of the groups before).
struct WindowGroup {
  int32_t start, size, q_first, q, qtiles_first, qtiles;
};

struct WindowStorage {
  GroupTotals totals;
  int32_t count;  // groups with blocks in the window
  int32_t b_lo, b_hi;
  WindowGroup group[kWarpWalkGroups];
};

template <class T, class W>
constexpr size_t window_dynamic_smem() {
  return size_t{W::staged} * kTileCols * sizeof(typename T::Raw) + T::col_out_tile_bytes;
}

// Blocks of a group (rows [start, start + n), q blocks with its padding) owned by the windows
// before input row R: those with rows whose first row lies before R, and the padding blocks
// with the last of them.
__device__ __forceinline__ int32_t blocks_before(int32_t start, int32_t n, int32_t q, int64_t R) {
  const int32_t with_rows = (n + 31) >> 5;
  if (with_rows == 0 || R <= start) return 0;
  if (start + int64_t{32} * (with_rows - 1) < R) return q;
  return static_cast<int32_t>((R - start + 31) >> 5);
}

// A round's scales, staged as one blocked tile (k row kl, slot s at quantize::staged_scale_offset),
// go out after the round's barrier. Where the round's blocks are blocks 4 i .. 4 i + 3 of one
// group and every k row of the column tile lies inside K, they are a whole 512-byte blocked tile:
// 16-byte words from warp 0. Otherwise byte by byte, a block (slot) at a time, lanes laid along
// the blocked tile (consecutive lanes 4 bytes apart: a warp's store covers four sectors), with
// the zero rows past K and the zero columns past a group's last block. Each thread storing its
// own block's bytes instead would touch 16 sectors per warp store.
struct RoundScales {
  uint8_t tile[quantize::kScaleTileBytes];
  int8_t group[kWindowSlots];  // the block's group among the window's (WindowStorage::group)
  static_assert(kWarpWalkGroups <= 127, "a group index fits int8_t");
};

__device__ __forceinline__ void store_round_scales(const GroupedProblem& gp, const WindowStorage& s,
                                                   const RoundScales& rs, int64_t k0, bool k_full, int32_t base,
                                                   int32_t blocks, int tid) {
  static_assert(kWindowSlots == 4 && kThreads == 2 * kTileCols, "a round of four blocks per column: one tile");
  const quantize::Problem& p = gp.tile;
  const WindowGroup& first = s.group[rs.group[0]];
  const int32_t j0 = base - first.q_first;
  if (p.blocked && k_full && blocks == kWindowSlots && j0 % 4 == 0 && j0 + kWindowSlots <= first.q) {
    if (tid < 32) {
      uint8_t* tile =
          p.col_scales + gp.k_rows_padded * 4 * first.qtiles_first + num::blocked_offset(k0, j0, first.qtiles);
      quantize::store_scale_tile(tile, rs.tile, tid, p.vec_scales);
    }
    return;
  }
  const int w = tid % kTileCols;
  const int kl = p.blocked ? (w % 4) * 32 + w / 4 : w;  // blocked: lane w writes byte 4 w + j % 4 of the tile
  const int64_t k = k0 + kl;
  for (int slot = tid / kTileCols; slot < blocks; slot += kThreads / kTileCols) {
    const WindowGroup& g = s.group[rs.group[slot]];
    const int32_t j = base + slot - g.q_first;
    const uint8_t v = rs.tile[quantize::staged_scale_offset(kl, slot)];
    if (p.blocked) {
      uint8_t* m = p.col_scales + gp.k_rows_padded * 4 * g.qtiles_first;
      __builtin_assume(k >= 0 && j >= 0);
      m[num::blocked_offset(k, j, g.qtiles)] = k < p.K ? v : 0;
      if (j == g.q - 1) {
        for (int32_t jj = g.q; jj < 4 * g.qtiles; ++jj) m[num::blocked_offset(k, jj, g.qtiles)] = 0;
      }
    } else if (k < p.K) {
      p.col_scales[k * p.col_scale_cols + g.q_first + j] = v;
    }
  }
}

// CTA i takes (window, column tile) = gp.order.place(i) (bands of column tiles, as colwise alone
// in kernel.cuh); gp.tile_rows is the number of windows.
template <class In, class Fmt, ScaleRule kRule, class W>
__global__ void __launch_bounds__(kThreads, kWindowCtasPerSm) grouped_col_windows_kernel(const GroupedProblem gp) {
  using T = quantize::TileTraits<In, Fmt>;
  using Pair = typename quantize::PairOf<typename T::Raw>::type;
  static_assert(T::block == 32 && T::elem_bits == 8, "blocks of 32 one-byte codes: a block is 32 output bytes");
  constexpr int kPairs = kTileCols / 2;
  static_assert(kThreads == kPairs * kWindowSlots, "a thread per column pair and slot");
  extern __shared__ __align__(128) uint4 staged[];  // aligned: see quantize_tile_kernel
  __shared__ WindowStorage s;
  __shared__ __align__(16) RoundScales round_scales;

  const quantize::Problem& p = gp.tile;
  const quantize::TilePlace at = gp.order.place(blockIdx.x);
  const int64_t r0 = int64_t{at.row} * W::owned, r1 = r0 + W::owned;
  const int64_t k0 = int64_t{at.col} * kTileCols;
  const int tid = threadIdx.x;

  WarpEnds ends;
  if (tid < 32) {
    ends = load_warp_ends(gp.walk);  // before the window: an L2 hit queued behind it would wait
    if (tid == 0) s.count = 0;
  }
  {  // the window's rows (zeros past M and past K): copies started, waited for below
    quantize::TileCoord w{};
    w.k0 = k0;
    w.m0 = r0;
    w.in_rows = static_cast<int>(max(int64_t{0}, min(p.M - r0, int64_t{W::staged})));
    w.k_full = k0 + kTileCols <= p.K;
    quantize::stage_tile<T, false, false, 1, W::staged>(p, w, tid % T::chunks_per_row, tid / T::chunks_per_row, staged);
  }
  if (tid < 32) {
    __syncwarp();
    int32_t lo = 0, hi = 0;
    auto collect = [&](int32_t start, int32_t n, const GroupSums& before, const GroupSums& mine) {
      const int32_t glo = blocks_before(start, n, mine.qcols, r0), ghi = blocks_before(start, n, mine.qcols, r1);
      lo += glo;
      hi += ghi;
      if (ghi > glo) s.group[atomicAdd(&s.count, 1)] = {start, n, before.qcols, mine.qcols, before.qtiles, mine.qtiles};
    };
    walk_groups_warp(gp.walk, ends, blockIdx.x == 0, collect, s.totals);
    lo = __reduce_add_sync(0xFFFFFFFFu, lo);
    hi = __reduce_add_sync(0xFFFFFFFFu, hi);
    if (tid == 0) {
      s.b_lo = lo;
      s.b_hi = hi;
    }
  }
  __syncthreads();
  // Every CTA zeroes a share of the bytes past the last group while its copies are in flight.
  zero_ungrouped<T, false, true>(gp, s.totals, at.row, gp.tile_rows, at.col);
  quantize::cp_async_wait_pending(0);
  __syncthreads();

  const int32_t b_lo = s.b_lo, b_hi = s.b_hi, count = s.count;
  const int pair = tid % kPairs, slot = tid / kPairs;
  const Pair* column = reinterpret_cast<const Pair*>(staged) + pair;
  uint8_t* out_tile = reinterpret_cast<uint8_t*>(staged) + size_t{W::staged} * kTileCols * sizeof(typename T::Raw);
  const auto scaler = quantize::batch_scaler<Fmt, kRule>(p, 0);
  quantize::TileCoord c{};
  c.k0 = k0;
  c.k_full = k0 + kTileCols <= p.K;
  for (int32_t base = b_lo; base < b_hi; base += kWindowSlots) {
    const int32_t b = base + slot;
    if (b < b_hi) {
      int i = 0;
      while (i + 1 < count && !(b >= s.group[i].q_first && b < s.group[i].q_first + s.group[i].q)) ++i;
      const WindowGroup g = s.group[i];
      const int32_t j = b - g.q_first;
      // The group's rows from the block's first on: 32 or more for a full block, fewer for its
      // last block with rows, none for a padding block. Not clamped to [0, 32]: ptxas (CUDA 13.0,
      // sm_90a) folded `max(0, min(32, rem)) == 32` into a VIMNMX predicate that sent the partial
      // and padding blocks down the full blocks' path (seen in the SASS, and as reads past the
      // staged rows under racecheck).
      const int32_t rem = g.size - 32 * j;
      const bool whole = rem >= T::block;
      const Pair* rows = column + (g.start + 32 * j - r0) * kPairs;
      // Blocks with fewer rows read zeros past them; a separate path keeps the compare out of
      // the full blocks' reads.
      const auto full = [&](int r) { return rows[r * kPairs]; };
      const auto masked = [&](int r) { return r < rem ? rows[r * kPairs] : Pair{}; };
      uint32_t amax[2], sb[2];
      bool poisoned[2];
      float mult[2];
      if (whole) {
        quantize::col_block_amax<In, Fmt>(full, amax);
      } else {
        quantize::col_block_amax<In, Fmt>(masked, amax);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        sb[h] = scaler.scale(amax[h]);
        poisoned[h] = num::is_nonfinite_abs_bits(amax[h]);
        mult[h] = scaler.multiplier(sb[h], poisoned[h]);
      }
      if (whole) {
        quantize::col_block_codes<In, Fmt>(full, mult, poisoned, out_tile, pair, slot);
      } else {
        quantize::col_block_codes<In, Fmt>(masked, mult, poisoned, out_tile, pair, slot);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        round_scales.tile[quantize::staged_scale_offset(2 * pair + h, slot)] = static_cast<uint8_t>(sb[h]);
      }
      if (pair == 0) round_scales.group[slot] = static_cast<int8_t>(i);
    }
    __syncthreads();  // the round's output and scale tiles are complete
    const int32_t blocks = min(kWindowSlots, b_hi - base);
    c.col_m0 = int64_t{base} * T::block;
    c.col_rows = blocks * T::block;
    quantize::store_col_tile<T>(p, c, out_tile, tid);
    store_round_scales(gp, s, round_scales, k0, c.k_full, base, blocks, tid);
    if (base + kWindowSlots < b_hi) __syncthreads();  // the next round reuses the output and scale tiles
  }
}

}  // namespace mxq::cuda::kernels::quantize_grouped
