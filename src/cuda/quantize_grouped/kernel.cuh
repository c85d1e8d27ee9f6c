// The grouped quantize kernel: token groups along M for rowwise (per-group blocked scales,
// optional fused padding) and along K for colwise (blocks inside each group, virtual zero rows up
// to the padded size, K-group scales), both from one read of the tile. Each tile is quantized by
// the plain kernel's tile code (../quantize/kernel.cuh): only the TileCoord differs. (Rowwise
// alone on up to 16 rounds of CTAs takes tiles of input rows instead: rows_kernel.cuh.)
//
// The grid is sized on the host from an upper bound: tile_rows = ceil(rows / 128) + G row tiles,
// tiles_k column tiles (a paired input's: those of the first half, each CTA making its partner
// tile too). A CTA takes up to kStripTiles row tiles, `stride` apart, at one column tile, and
// walks the device-side offsets (group_tiles.cuh) once to find the groups of all of them
// (a walk per tile cost a quarter of the speed); with one tile per CTA (few groups) the one-tile
// instantiation takes a shorter path to its first load (quantize_one_tile). The CTAs take (strip,
// column tile) in the plain kernel's TileOrder: the column tile varies fastest, over all column
// tiles for both directions (whole input rows together), over narrow bands for colwise alone
// (long runs of the transposed rows together). Group g owns
// ceil(rows_g / 128) consecutive row tiles, tile t covering its local rows [128 t, 128 t + 128),
// and each such tile owns whole 512-byte blocked scale tiles per direction. CTAs whose row tile
// lies past the last group zero the bytes that belong to no group (zero_fill.cuh); there is always
// at least one such row tile, because the tiles of the groups and of the rows past them sum to at
// most ceil(rows / 128) + G - 1.
#pragma once
#include <cstdint>

#include "cuda/quantize/kernel.cuh"
#include "cuda/quantize_grouped/group_tiles.cuh"
#include "cuda/quantize_grouped/tuning.hpp"
#include "cuda/quantize_grouped/zero_fill.cuh"

namespace mxq::cuda::kernels::quantize_grouped {

using quantize::kScaleTileBytes;
using quantize::kThreads;
using quantize::kTileCols;
static_assert(quantize::kTileRows == kTileRows, "one tile height for the plain and the grouped kernels");

struct GroupedProblem {
  quantize::Problem tile;  // batch 1; Mc and the linear colwise pitch are the grouped ones
  GroupWalk walk;
  bool row_padded = false, col_padded = false;
  int64_t Mr = 0;                                    // rowwise data rows (Mc: tile.Mc)
  int64_t row_scale_bytes = 0, col_scale_bytes = 0;  // whole buffers (quantize_sizes)
  int64_t k_rows_padded = 0;                         // Rp(K): rows of each group's colwise blocked matrix
  int64_t tiles_k = 0, tile_rows = 0;
  int strip_tiles = 1;        // row tiles per CTA (<= kStripTiles)
  int64_t strip_stride = 1;   // row tiles between a CTA's tiles: the CTAs per column tile
  quantize::TileOrder order;  // of the CTAs: strip_stride x tiles_k (rows kernel: tiles_m x tiles_k)
};

__device__ __forceinline__ int rows_in_tile(int64_t rows, int64_t first) {
  return static_cast<int>(max(int64_t{0}, min(rows - first, int64_t{kTileRows})));
}

// Where tile grp.tile of group grp at column tile tk reads and writes.
template <class T>
__device__ __forceinline__ quantize::TileCoord group_tile_coord(const GroupedProblem& gp, const TileGroup& grp,
                                                                int64_t tk) {
  const quantize::Problem& p = gp.tile;
  const int64_t lr0 = int64_t{grp.tile} * kTileRows;  // first group-local row of the tile
  quantize::TileCoord c;
  c.b = 0;
  c.tk = tk;
  c.k0 = tk * kTileCols;
  c.m0 = grp.in_start + lr0;
  c.in_rows = rows_in_tile(grp.size, lr0);
  c.row_rows = rows_in_tile(gp.row_padded ? grp.padded_rows : grp.size, lr0);
  c.col_rows = rows_in_tile(gp.col_padded ? grp.padded_rows : grp.size, lr0);
  c.row_m0 = int64_t{gp.row_padded ? grp.padded_start : grp.in_start} + lr0;
  c.col_m0 = int64_t{gp.col_padded ? grp.padded_start : grp.in_start} + lr0;
  c.row_scale_tm = int64_t{grp.tile_first} + grp.tile;
  if (p.blocked) {  // the group's own blocked matrix Rp(K) x Cp(q_g)
    c.col_scale_at = gp.k_rows_padded * 4 * grp.qtiles_first;
    c.col_scale_nc = grp.qtiles;
    c.col_scale_c0 = int64_t{grp.tile} * T::scale_cols;
  } else {  // the group's columns of the shared linear matrix
    c.col_scale_at = 0;
    c.col_scale_c0 = grp.q_first + int64_t{grp.tile} * T::scale_cols;
  }
  c.col_scale_end = int64_t{grp.q_first} + grp.q;
  c.k_full = c.k0 + kTileCols <= p.K;
  return c;
}

// The bytes of this direction's outputs that belong to no group; z of zs is this CTA's place
// among the CTAs past the last group with the same column tile.
template <class T, bool ROW, bool COL>
__device__ void zero_ungrouped_tile(const GroupedProblem& gp, const GroupTotals& t, int64_t z, int64_t zs, int64_t tk) {
  const quantize::Problem& p = gp.tile;
  const int64_t cta = z * gp.tiles_k + tk, ctas = zs * gp.tiles_k;
  if constexpr (ROW) {
    const int64_t end = gp.row_padded ? t.padded_end : t.end;
    zero_flat(p.row_data, quantize::code_bytes<T>(end * p.K), quantize::code_bytes<T>(gp.Mr * p.K), cta, ctas);
    if (p.blocked) {
      zero_flat(p.row_scales, t.tiles * p.row_scale_nc * kScaleTileBytes, gp.row_scale_bytes, cta, ctas);
    } else {
      zero_flat(p.row_scales, end * p.row_scale_cols, gp.Mr * p.row_scale_cols, cta, ctas);
    }
  }
  if constexpr (COL) {
    const int64_t end = gp.col_padded ? t.padded_end : t.end;
    const int64_t k0 = tk * kTileCols, k1 = min(p.K, k0 + kTileCols);
    const int64_t row_bytes = quantize::code_bytes<T>(p.Mc);
    zero_columns(p.col_data, row_bytes, k0, k1, quantize::code_bytes<T>(end), row_bytes, z, zs);
    if (p.blocked) {
      zero_flat(p.col_scales, gp.k_rows_padded * 4 * t.qtiles, gp.col_scale_bytes, cta, ctas);
    } else {
      zero_columns(p.col_scales, p.col_scale_cols, k0, k1, t.qcols, p.col_scale_cols, z, zs);
    }
  }
}

// zero_ungrouped_tile for the CTA's column tile tk, and for a paired input's CTA its partner's.
template <class T, bool ROW, bool COL>
__device__ void zero_ungrouped(const GroupedProblem& gp, const GroupTotals& t, int64_t z, int64_t zs, int64_t tk) {
  zero_ungrouped_tile<T, ROW, COL>(gp, t, z, zs, tk);
  if constexpr (T::Input::paired_halves) zero_ungrouped_tile<T, ROW, COL>(gp, t, z, zs, tk + gp.tiles_k / 2);
}

// One row tile per CTA (strip_tiles 1): the path from the CTA's start to its first load is what
// a CTA pays before it moves any bytes, and at 16384 tokens most CTAs start in the first or the
// last round, so it is kept short: warp 0 walks the offsets behind one barrier, every thread then
// computes the tile's coordinates in registers from the group record and stages the tile (no
// coordinates in shared memory, no barrier for them, no loop over strip tiles for the compiler to
// hoist the colwise setup out of, ahead of the loads). It is an instantiation of its own
// (TileWalk), as a branch inside the strips kernel cost the strips registers and code.
template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule, unsigned kOptions>
__device__ __forceinline__ void quantize_one_tile(const GroupedProblem& gp, const quantize::TilePlace& at,
                                                  uint4* staged,
                                                  quantize::TileScales<quantize::TileTraits<In, Fmt>>& scales) {
  using T = quantize::TileTraits<In, Fmt>;
  __shared__ GroupWalkStorage<kThreads, 1> walk;
  const quantize::Problem& p = gp.tile;
  const int32_t trow = static_cast<int32_t>(at.row), tk = static_cast<int32_t>(at.col);
  find_tile_groups<kThreads, 1, true>(gp.walk, trow, 1, 1, blockIdx.x == 0, walk);
  const TileGroup group = walk.group[0];
  if (group.found) {
    // K = 0: no columns to read and no colwise scale tile to write (see the strips kernel). No
    // L2 prefetch hint here: measured without it (the strips' colwise gain from it is 0.5-1.5 %).
    if (p.K > 0) {
      quantize::quantize_tile<In, Fmt, ROW, COL, kRule, kOptions | quantize::TileOptions::skip_past_rows>(
          p, group_tile_coord<T>(gp, group, tk), staged, scales);
    }
  } else {
    const GroupTotals& totals = walk.totals;
    zero_ungrouped<T, ROW, COL>(gp, totals, trow - totals.tiles, gp.tile_rows - totals.tiles, tk);
  }
}

// The strip of a CTA: one column tile of the row tiles r + i * strip_stride, r = at.row.
template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule>
__device__ __forceinline__ void quantize_strip(const GroupedProblem& gp, const quantize::TilePlace& at, uint4* staged,
                                               quantize::TileScales<quantize::TileTraits<In, Fmt>>& scales) {
  using T = quantize::TileTraits<In, Fmt>;
  __shared__ GroupWalkStorage<kThreads, kStripTiles> walk;
  // The tiles' coordinates live in shared memory: held in registers beside the tile code's they
  // made the 16-bit kernels spill under the 4-CTA register cap.
  __shared__ quantize::TileCoord coord[kStripTiles];

  const quantize::Problem& p = gp.tile;
  // 32-bit: the launcher keeps tile_rows x tiles_k below 2^31.
  const int32_t stride = static_cast<int32_t>(gp.strip_stride);
  const int32_t trow0 = static_cast<int32_t>(at.row);
  const int32_t tk = static_cast<int32_t>(at.col);
  const int count = min(gp.strip_tiles, (static_cast<int32_t>(gp.tile_rows) - trow0 + stride - 1) / stride);
  find_tile_groups(gp.walk, trow0, stride, count, blockIdx.x == 0, walk);
  // The strip's row tiles increase and the groups own the first row tiles: the tiles with a group
  // come first.
  int grouped = 0;
  while (grouped < count && walk.group[grouped].found) ++grouped;
  if (threadIdx.x < grouped) coord[threadIdx.x] = group_tile_coord<T>(gp, walk.group[threadIdx.x], tk);
  __syncthreads();
  // Colwise alone stages its tiles with the L2 prefetch hint of 256 bytes (a row segment of a
  // 16-bit tile): tuning.hpp's strips_fetch256.
  constexpr unsigned kOptions =
      (strips_fetch256(ROW, COL) ? quantize::TileOptions::fetch256 : 0u) | quantize::TileOptions::skip_past_rows;
  // K = 0 still takes one column tile (the padded offsets, the zero bytes), but its tiles have no
  // columns to read and, with no k rows, no colwise scale tile to write.
  for (int i = 0; i < grouped && p.K > 0; ++i) {
    quantize::quantize_tile<In, Fmt, ROW, COL, kRule, kOptions>(p, coord[i], staged, scales);
    __syncthreads();  // the next tile reuses the shared memory
  }
  for (int i = grouped; i < count; ++i) {  // past the last group: a share of the bytes of no group
    const GroupTotals& totals = walk.totals;
    const int32_t trow = trow0 + i * stride;
    zero_ungrouped<T, ROW, COL>(gp, totals, trow - totals.tiles, gp.tile_rows - totals.tiles, tk);
  }
}

// How a CTA takes its row tiles: a strip (quantize_strip), or one tile (strip_tiles 1,
// quantize_one_tile), optionally starting the rowwise passes as the copies land.
enum class TileWalk { strips, one_tile, one_tile_rows_land };

// CTA i takes (r, column tile) = gp.order's place i (quantize::TileOrder over strip_stride x
// tiles_k): the strip at row tile r, or with a one-tile walk row tile r alone.
template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule, TileWalk kWalk>
__global__ void __launch_bounds__(kThreads, (quantize::TileTraits<In, Fmt>::grouped_ctas_per_sm(COL)))
    grouped_quantize_kernel(const GroupedProblem gp) {
  using T = quantize::TileTraits<In, Fmt>;
  // colwise: the staged input tile, then the staged output (aligned: see quantize_tile_kernel)
  extern __shared__ __align__(128) uint4 staged[];
  __shared__ quantize::TileScales<T> scales;
  // Only colwise alone takes bands (quantize::tile_order_band); row-major order needs one division
  // (the general place() made the rowwise mxfp4 kernel spill).
  const quantize::TilePlace at = COL && !ROW ? gp.order.place(blockIdx.x) : gp.order.place_row_major(blockIdx.x);
  if constexpr (kWalk == TileWalk::one_tile) {
    quantize_one_tile<In, Fmt, ROW, COL, kRule, 0>(gp, at, staged, scales);
  } else if constexpr (kWalk == TileWalk::one_tile_rows_land) {
    quantize_one_tile<In, Fmt, ROW, COL, kRule, quantize::TileOptions::rows_as_they_land>(gp, at, staged, scales);
  } else {
    quantize_strip<In, Fmt, ROW, COL, kRule>(gp, at, staged, scales);
  }
}

}  // namespace mxq::cuda::kernels::quantize_grouped
