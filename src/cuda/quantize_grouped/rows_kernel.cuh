// The grouped rowwise kernel: token groups along M, rowwise only (per-group scales, optional fused
// padding). Rows are independent along K, so a tile is 128 consecutive input rows whichever groups
// they belong to (the plain kernel's tiles): its loads are issued before the group walk, and a
// group's last rows do not make a partial tile of their own (with 64 groups of a few hundred rows
// those were a third of the group-local grid). The tile is staged as one cp.async group per group
// of passes that quantize_rows handles together; a thread reads only the chunks it copied, so each
// group of passes starts once its own copies have landed, without a barrier (rather than one wait
// for the whole tile); a SwiGLU forward with 8-bit codes stages its operands and computes each
// group of passes from them as they land. Each tile row's output row and scale row come from its
// group. A 512-byte scale tile may hold rows of two CTAs, so scales go out as one 4-byte word per
// row and 4 scale columns. The CTA holding a group's last row writes the group's zero rows in its
// columns (data padding rows, unused rows of its scale matrix), and every CTA zeroes a share of the
// bytes past the last group.
#pragma once
#include <cstdint>

#include "cuda/quantize_grouped/kernel.cuh"

namespace mxq::cuda::kernels::quantize_grouped {

// A group with rows in the tile: input rows [start, end), the output and scale rows of its first
// row, and how many output and scale rows it owns (padded size; blocked: 128-row scale tiles).
struct SpanGroup {
  int32_t start, end;
  int32_t out_start, out_rows;
  int32_t scale_start, scale_rows;
};

template <int Threads>
struct SpanStorage {
  typename GroupWalkScans<Threads>::MaxScan::TempStorage max_scan;
  typename GroupWalkScans<Threads>::SumScan::TempStorage sum_scan;
  GroupTotals totals;
  int32_t count;                 // groups with rows in the tile
  SpanGroup group[kTileRows];    // at most one per tile row (empty groups have none)
  int32_t out_row[kTileRows];    // per tile row: output row, -1 when in no group
  int32_t scale_row[kTileRows];  // per tile row: scale row, -1 when in no group
};

// Thread t's tile row for scale words: the row whose word is the t-th 4-byte word of a 512-byte
// blocked scale tile, so that a warp writes consecutive words when the tile's scale rows start on
// a 128-row boundary.
__device__ __forceinline__ int word_row(int t) { return (t % 4) * 32 + (t / 4) % 32; }

// A 4-byte word of scales (4 aligned columns of one row), or its bytes one by one.
__device__ __forceinline__ void store_scale_word(uint8_t* dst, uint32_t word, bool vec) {
  if (vec) {
    *reinterpret_cast<uint32_t*>(dst) = word;
  } else {
    for (int j = 0; j < 4; ++j) dst[j] = static_cast<uint8_t>(word >> (8 * j));
  }
}

// The thread's rowwise codes of pass i go to the output row of its tile row.
struct GroupRowOut {
  const int32_t* out_row;  // shared: per tile row
  uint8_t* base;           // output row 0 at this thread's columns
  int64_t row_bytes;
  int row0;
  bool vec;
  int bytes;
  template <class T>
  __device__ __forceinline__ void store(int i, uint64_t codes) const {
    const int32_t r = out_row[row0 + i * T::rows_per_pass];
    if (r >= 0) quantize::store_row_codes<T>(base + r * row_bytes, codes, vec, bytes);
  }
};

// num::blocked_offset of a scale word whose row and column are known to be non-negative: the
// compiler then drops the sign fix-ups of the 64-bit divisions by 128, 32 and 4.
__device__ __forceinline__ int64_t scale_word_offset(int32_t row, int64_t col, int64_t nc) {
  __builtin_assume(row >= 0 && col >= 0);
  return num::blocked_offset(row, col, nc);
}

// The staged scales of the tile rows to their scale rows (per-group blocked or linear).
template <class T>
__device__ __forceinline__ void store_row_scales(const quantize::Problem& p, const quantize::TileCoord& c,
                                                 const int32_t* scale_row, const uint8_t* staged, int tid) {
  if (p.blocked) {
    static_assert(kThreads >= kTileRows * T::scale_tiles, "one thread per scale word of the tile");
    const int j = word_row(tid), s = tid / kTileRows;
    const int64_t col = (c.tk * T::scale_tiles + s) * 4;
    if (s < T::scale_tiles && col < 4 * p.row_scale_nc && scale_row[j] >= 0) {
      const uint32_t word = *reinterpret_cast<const uint32_t*>(staged + num::blocked_offset(j, 4 * s, 1));
      store_scale_word(p.row_scales + scale_word_offset(scale_row[j], col, p.row_scale_nc), word, p.vec_scales);
    }
  } else if (tid < kTileRows && scale_row[tid] >= 0) {
    quantize::store_scale_row_linear<T::scale_tiles>(p.row_scales, p.row_scale_cols, p.row_scale_cols, scale_row[tid],
                                                     c.tk * T::scale_cols, staged, tid);
  }
}

// The zero rows of the groups whose last row lies in this tile, in the tile's columns: data and
// linear scale rows past the group's rows up to its padded size, blocked scale rows up to the end
// of its last 128-row scale tile.
template <class T>
__device__ void zero_group_tails(const GroupedProblem& gp, const quantize::TileCoord& c, const SpanStorage<kThreads>& s,
                                 int64_t tile_end, int tid) {
  const quantize::Problem& p = gp.tile;
  for (int i = 0; i < s.count; ++i) {
    const SpanGroup g = s.group[i];
    if (g.end > tile_end) continue;
    // Most tiles hold no group's last row: the bounds below are computed for those that do.
    const int64_t b0 = quantize::code_bytes<T>(c.k0), b1 = quantize::code_bytes<T>(min(p.K, c.k0 + kTileCols));
    const int32_t size = g.end - g.start;
    zero_columns(p.row_data, quantize::code_bytes<T>(p.K), g.out_start + size, g.out_start + g.out_rows, b0, b1, 0, 1);
    if (p.blocked) {
      const int32_t r0 = g.scale_start + size, words = (g.scale_rows - size) * T::scale_tiles;
      for (int w = tid; w < words; w += kThreads) {
        const int64_t col = (c.tk * T::scale_tiles + w % T::scale_tiles) * 4;
        if (col < 4 * p.row_scale_nc) {
          store_scale_word(p.row_scales + scale_word_offset(r0 + w / T::scale_tiles, col, p.row_scale_nc), 0u,
                           p.vec_scales);
        }
      }
    } else {
      const int64_t s0 = c.tk * T::scale_cols, s1 = min(p.row_scale_cols, s0 + T::scale_cols);
      zero_columns(p.row_scales, p.row_scale_cols, g.out_start + size, g.out_start + g.out_rows, s0, s1, 0, 1);
    }
  }
}

// The rows kernel's launch bounds: a staged forward input states its own CTAs per SM.
template <class In, class Fmt>
constexpr int rows_ctas_per_sm() {
  if constexpr (quantize::stages_operands<In>(Fmt::elem_bits)) {
    return In::staged_rows_ctas_per_sm;
  } else {
    return quantize::TileTraits<In, Fmt>::grouped_ctas_per_sm(false);
  }
}

// Dynamic shared memory of the rows kernel: the staged tile, or twice it for staged operands.
template <class In, class Fmt>
constexpr size_t rows_dynamic_smem() {
  const int64_t tile = quantize::TileTraits<In, Fmt>::staged_tile_bytes;
  return static_cast<size_t>(quantize::stages_operands<In>(Fmt::elem_bits) ? 2 * tile : tile);
}

// CTA i takes tile (tm, tk) = gp.order.place_row_major(i) (row-major over tiles_m x tiles_k) and
// quantizes input rows [128 tm, 128 tm + 128) at column tile tk.
template <class In, class Fmt, ScaleRule kRule>
__global__ void __launch_bounds__(kThreads, (rows_ctas_per_sm<In, Fmt>()))
    grouped_rows_kernel(const GroupedProblem gp) {
  using T = quantize::TileTraits<In, Fmt>;
  constexpr bool kStagesOperands = quantize::stages_operands<In>(Fmt::elem_bits);
  extern __shared__ __align__(128) uint4 staged_tile[];  // aligned: see quantize_tile_kernel
  __shared__ quantize::TileScales<T> scales;             // the rowwise half only
  __shared__ SpanStorage<kThreads> s;

  const quantize::Problem& p = gp.tile;
  const quantize::TilePlace at = gp.order.place_row_major(blockIdx.x);
  const uint32_t tm = at.row;
  quantize::TileCoord c{};
  c.tk = at.col;
  c.k0 = c.tk * kTileCols;
  c.m0 = int64_t{tm} * kTileRows;
  c.in_rows = c.row_rows = rows_in_tile(p.M, c.m0);
  c.k_full = c.k0 + kTileCols <= p.K;
  const int tid = threadIdx.x;
  const int chunk = tid % T::chunks_per_row;
  const int row0 = tid / T::chunks_per_row;

  const int64_t tile_end = c.m0 + kTileRows;
  const bool blocked = p.blocked, padded = gp.row_padded;
  auto collect = [&](int32_t start, int32_t n, const GroupSums& before, const GroupSums& mine) {
    if (n > 0 && start < tile_end && start + n > c.m0) {
      SpanGroup g;
      g.start = start;
      g.end = start + n;
      g.out_start = padded ? before.padded : start;
      g.out_rows = padded ? mine.padded : n;
      g.scale_start = blocked ? before.tiles * kTileRows : g.out_start;
      g.scale_rows = blocked ? mine.tiles * kTileRows : g.out_rows;
      s.group[atomicAdd(&s.count, 1)] = g;
    }
  };
  // Each tile row's output and scale rows (-1: the row belongs to no group), after the walk.
  const auto map_rows = [&]() {
    if (tid >= kTileRows) return;
    const int64_t m = c.m0 + tid;
    int32_t out = -1, scale = -1;
    for (int i = 0; i < s.count; ++i) {
      const SpanGroup& g = s.group[i];
      if (m >= g.start && m < g.end) {
        out = g.out_start + static_cast<int32_t>(m - g.start);
        scale = g.scale_start + static_cast<int32_t>(m - g.start);
      }
    }
    s.out_row[tid] = out;
    s.scale_row[tid] = scale;
  };
  // The tile's copies go out before the walk, which runs while they are in flight. One call site
  // of stage_tile: each CTA runs this code once, straight through, and a second inlined copy of
  // the staging (guarded paths included) would put cold code inside its hot path (instruction
  // cache stalls).
  const bool warp_walk = gp.walk.G <= kWarpWalkGroups;
  WarpEnds ends;
  if (tid == 0) s.count = 0;
  if (warp_walk && tid < 32) {
    // Warp 0 loads the offsets before the tile: an L2 hit queued behind the tile's copies would
    // wait for them.
    ends = load_warp_ends(gp.walk);
  }
  // Where tile row r's chunk lies: in place of its first operand where the operands are staged.
  const auto slot = [&](int r) {
    return kStagesOperands ? quantize::operand_slot<T>(r, 0, chunk) : r * T::chunks_per_row + chunk;
  };
  [[maybe_unused]] const bool raw = kStagesOperands && quantize::in_full(c) && p.vec_in;
  if constexpr (kStagesOperands) {
    if (raw) {
      quantize::stage_operands<T, quantize::kRowPassGroups<T>>(p, c, chunk, row0, staged_tile);
    } else {
#pragma unroll 1
      for (int i = 0; i < T::passes; ++i) {
        const int row = row0 + i * T::rows_per_pass;
        staged_tile[slot(row)] = quantize::load_chunk_guarded<T>(p, c, nullptr, row, c.k0 + chunk * T::vec);
      }
    }
  } else {
    quantize::stage_tile<T, false, false, quantize::kRowPassGroups<T>>(p, c, chunk, row0, staged_tile);
  }
  if (warp_walk) {
    if (tid < 32) {
      __syncwarp();
      walk_groups_warp(gp.walk, ends, blockIdx.x == 0, collect, s.totals);
    }
  } else {
    __syncthreads();  // s.count
    walk_groups_block<kThreads>(gp.walk, blockIdx.x == 0, collect, s.max_scan, s.sum_scan, s.totals);
  }
  __syncthreads();
  map_rows();
  __syncthreads();
  // The zero stores need only the walk, so they go out while the tile's copies are in flight;
  // after the passes they lengthened every CTA's tail, even with no bytes to zero.
  zero_group_tails<T>(gp, c, s, tile_end, tid);
  zero_ungrouped<T, true, false>(gp, s.totals, tm, max(p.tiles_m, int64_t{1}), c.tk);

  GroupRowOut out;
  out.out_row = s.out_row;
  out.base = p.row_data + quantize::code_bytes<T>(c.k0 + chunk * T::vec);
  out.row_bytes = quantize::code_bytes<T>(p.K);
  out.row0 = row0;
  out.vec = c.k_full && p.vec_row_out;
  out.bytes = quantize::row_chunk_bytes<T>(p, c, chunk);
  const auto chunk_at = [&](int i) { return staged_tile[slot(row0 + i * T::rows_per_pass)]; };
  // Each group of passes starts once this thread's copies of it have landed; staged operands are
  // then computed into its chunks in place (an edge tile's were computed while staging).
  const auto before_group = [&](int g) {
    quantize::WaitForPassGroup<T>{}(g);
    if constexpr (kStagesOperands) {
      if (raw) quantize::compute_staged_passes<T>(p, c, chunk, row0, g * T::lanes_per_block, T::lanes_per_block,
                                                  staged_tile);
    }
  };
  quantize::quantize_rows<In, Fmt>(p, c, quantize::batch_scaler<Fmt, kRule>(p, 0), chunk_at, row0, chunk, out,
                                   scales.row, before_group);
  __syncthreads();
  store_row_scales<T>(p, c, s.scale_row, scales.row, tid);
}

}  // namespace mxq::cuda::kernels::quantize_grouped
