// The quantize tile: one CTA reads one 128 x 128 tile once and writes the rowwise and/or colwise
// codes and scales of that tile. The plain kernel here maps CTA i to the i-th tile of a (batch, M,
// K) tensor in TileOrder; the token-group kernel (../quantize_grouped) maps a CTA to a tile of one
// group and runs the same tile code: a TileCoord says where the tile reads and writes.
//
// Rowwise alone works from registers: all of a thread's 16-byte loads are in flight before the
// first use. A rowwise block is L adjacent lanes (L = lanes_per_block); L passes are handled
// together so that each block's scale is computed once, by one of its lanes, not by all L lanes
// in every pass (the kernel is bound by instruction issue in "both").
// Colwise and both stage the raw tile in shared memory with cp.async, global to shared without a
// register round trip: few registers per thread, so several CTAs per SM keep loads in flight. A
// colwise thread owns two adjacent columns of one block along M: each shared-memory read brings
// both columns' elements and a warp reads consecutive words of one row (no bank conflicts); each
// column's block codes go out as 16-byte stores into the transposed output.
// Scales are staged in shared memory as the tile's 512-byte blocked tiles (padding zero) and
// written once the tile is done: blocked with 16-byte stores, linear as one 4-byte segment per
// scale row where aligned.
// The pieces: tile_problem.cuh (Problem, TileCoord, the block scaler), tile_io.cuh (loads,
// staging, stores), row_tile.cuh and col_tile.cuh (each direction's codes and scales); this file
// joins them into one tile and the plain kernel.
#pragma once
#include <cstdint>
#include <type_traits>

#include "cuda/abs_max.cuh"
#include "cuda/quantize/col_tile.cuh"
#include "cuda/quantize/row_tile.cuh"

namespace mxq::cuda::kernels::quantize {

// Writes the tile's staged scales. Blocked: T::scale_tiles adjacent 512-byte tiles per direction
// (the last of a row of tiles may lie past the padded scale columns: it is not written). Linear:
// one thread per scale row (rowwise: tile rows; colwise: tile columns).
template <class T, bool ROW, bool COL>
__device__ __forceinline__ void store_tile_scales(const Problem& p, const TileCoord& c, const uint8_t* row_scale_tile,
                                                  const uint8_t* col_scale_tile, int tid) {
  if (p.blocked) {
    constexpr int kStoreThreads = 32 * T::scale_tiles;
    const int s = (tid % kStoreThreads) / 32, lane = tid % 32;
    if (ROW && tid < kStoreThreads && c.tk * T::scale_tiles + s < p.row_scale_nc) {
      store_scale_tile(p.row_scales + c.b * p.row_scale_batch +
                           (c.row_scale_tm * p.row_scale_nc + c.tk * T::scale_tiles + s) * kScaleTileBytes,
                       row_scale_tile + s * kScaleTileBytes, lane, p.vec_scales);
    }
    const int64_t col_tile = c.col_scale_c0 / 4 + s;
    if (COL && tid >= kStoreThreads && tid < 2 * kStoreThreads && col_tile < c.col_scale_nc) {
      store_scale_tile(p.col_scales + c.col_scale_at + (c.tk * c.col_scale_nc + col_tile) * kScaleTileBytes,
                       col_scale_tile + s * kScaleTileBytes, lane, p.vec_scales);
    }
  } else {
    static_assert(kThreads >= kTileRows + kTileCols, "one thread per rowwise and per colwise scale row");
    if (ROW && tid < c.row_rows) {
      store_scale_row_linear<T::scale_tiles>(p.row_scales + c.b * p.row_scale_batch, p.row_scale_cols, p.row_scale_cols,
                                             c.row_m0 + tid, c.tk * T::scale_cols, row_scale_tile, tid);
    }
    const int r = tid - (kThreads - kTileCols);
    if (COL && r >= 0 && c.k0 + r < p.K) {
      store_scale_row_linear<T::scale_tiles>(p.col_scales + c.col_scale_at, p.col_scale_cols, c.col_scale_end, c.k0 + r,
                                             c.col_scale_c0, col_scale_tile, r);
    }
  }
}

// The tile's staged 512-byte scale tiles, one set per direction: its shared memory besides the
// caller's dynamic `staged_tile` (colwise: the raw tile, then the staged output tile).
template <class T>
struct TileScales {
  alignas(16) uint8_t row[kScaleTileBytes * T::scale_tiles];
  alignas(16) uint8_t col[kScaleTileBytes * T::scale_tiles];
};

// nvfp4 with the caller's amax (TileOptions::derive_tensor_scales, Problem::amax): thread 0 reads
// it once the tile's loads are issued and derives the batch's tensor scales into `staged` (shared
// memory) while they are in flight; the batch's first tile also writes them out. This saves the
// separate kernel's launch on small tensors (tuning.hpp: kDeriveTensorScalesTiles).
template <class Fmt>
__device__ __forceinline__ void derive_tensor_scales(const Problem& p, const TileCoord& c, float (&staged)[2]) {
  static_assert(Fmt::nv, "nvfp4 only");
  if (threadIdx.x == 0) {
    const num::Nvfp4TensorScale ts = num::nvfp4_tensor_scale(p.amax[c.b]);
    staged[0] = ts.s_enc;
    staged[1] = ts.s_dec;
    if (c.tk == 0 && c.m0 == 0) {
      p.s_enc[c.b] = ts.s_enc;
      p.s_dec[c.b] = ts.s_dec;
    }
  }
}

// Dynamic shared memory of a tile for the directions served (a paired input: a second staged tile).
template <class T, bool COL>
constexpr size_t tile_dynamic_smem() {
  constexpr int64_t staged = T::Input::paired_halves ? 2 * T::staged_tile_bytes : T::staged_tile_bytes;
  return COL ? static_cast<size_t>(staged + T::col_out_tile_bytes) : 0;
}

// The partner of a paired input's tile c: the same rows, K / 2 columns on (a whole number of tiles).
__device__ __forceinline__ TileCoord paired_tile_coord(const Problem& p, const TileCoord& c) {
  TileCoord up = c;
  up.k0 = c.k0 + p.K / 2;
  up.tk = c.tk + p.K / 2 / kTileCols;
  up.k_full = up.k0 + kTileCols <= p.K;
  return up;
}

// The tile's amax into p.amax_out[c.b] (QuantizeOutputs::amax, cleared before the kernel), in two
// steps around a barrier the tile has anyway, so that it adds none: share_warp_amax before it
// (each warp's largest block amax into shared memory; the largest amax of the blocks each thread
// scaled covers every element of the tile), commit_tile_amax after it (warp 0 folds them and makes
// one atomicMax). The 16-bit block amax of a block with a NaN is the canonical NaN, while
// tensor_amax keeps the NaN's payload: warp 0 then reads the tile again from the input (a cold
// path) for the exact amax.
struct TileAmax {
  uint32_t warp_max[kThreads / 32];
};
__device__ __forceinline__ void share_warp_amax(TileAmax& t, uint32_t block_amax) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) block_amax = max(block_amax, __shfl_xor_sync(0xFFFFFFFFu, block_amax, off));
  if (threadIdx.x % 32 == 0) t.warp_max[threadIdx.x / 32] = block_amax;
}
template <class T>
__device__ __forceinline__ void commit_tile_amax(const Problem& p, const TileCoord& c, const TileAmax& t) {
  using In = typename T::Input;
  constexpr int kWarps = kThreads / 32;
  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x;
  uint32_t amax = t.warp_max[lane % kWarps];
#pragma unroll
  for (int off = kWarps / 2; off > 0; off >>= 1) amax = max(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
  if constexpr (sizeof(typename In::Raw) == 2) {
    if (amax > num::kF32ExpMask) {  // a NaN: the exact amax of every chunk of the tile
      const auto* in = static_cast<const typename T::Raw*>(p.in) + c.b * p.batch_stride;
      amax = 0;
#pragma unroll 1
      for (int i = lane; i < kTileRows * T::chunks_per_row; i += 32) {
        const int64_t k = c.k0 + (i % T::chunks_per_row) * T::vec;
        amax = max(amax, abs_max_bits<In>(load_chunk_guarded<T>(p, c, in, i / T::chunks_per_row, k)));
      }
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) amax = max(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
    }
  }
  if (lane == 0 && amax != 0) atomicMax(p.amax_out + c.b, amax);
}

// Compile-time options of one tile: named bits or-ed into quantize_tile's kOptions (none: 0).
struct TileOptions {
  static constexpr unsigned fetch256 = 1u << 0;              // stage_tile's 256-byte L2 prefetch hint
  static constexpr unsigned derive_tensor_scales = 1u << 1;  // nvfp4: derive_tensor_scales in the tile
  static constexpr unsigned amax_out = 1u << 2;              // the tile's amax into p.amax_out
  static constexpr unsigned rows_as_they_land = 1u << 3;     // both, 8-bit codes: rowwise passes as copies land
  // Staged tiles: skip the blocks and rowwise pass groups past a partial tile's rows, writing only
  // their zero scales. For the grouped kernels, where every token group ends in a partial tile;
  // in the plain kernel, which has at most one partial tile row, the branch made bf16 -> mxfp4
  // both directions spill.
  static constexpr unsigned skip_past_rows = 1u << 4;
};

// One tile: every thread of the CTA calls it. The caller synchronises the CTA before reusing the
// shared memory for another tile.
template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule, unsigned kOptions = 0>
__device__ __forceinline__ void quantize_tile(const Problem& p, const TileCoord& c, uint4* staged_tile,
                                              TileScales<TileTraits<In, Fmt>>& scales) {
  using T = TileTraits<In, Fmt>;
  constexpr bool kFetch256 = (kOptions & TileOptions::fetch256) != 0;
  constexpr bool kDerive = (kOptions & TileOptions::derive_tensor_scales) != 0;
  constexpr bool kAmaxOut = (kOptions & TileOptions::amax_out) != 0;
  constexpr bool kRowsLand = (kOptions & TileOptions::rows_as_they_land) != 0;
  constexpr bool kSkipPast = (kOptions & TileOptions::skip_past_rows) != 0;
  uint8_t* row_scale_tile = scales.row;
  uint8_t* col_scale_tile = scales.col;
  __shared__ float derived[kDerive ? 2 : 1];  // s_enc, s_dec
  BlockScaler<Fmt> scaler = kDerive ? BlockScaler<Fmt>{kRule, 1.0f, 1.0f} : batch_scaler<Fmt, kRule>(p, c.b);
  const auto derive = [&] {
    if constexpr (kDerive) derive_tensor_scales<Fmt>(p, c, derived);
  };
  const auto take_derived = [&] {
    if constexpr (kDerive) scaler.set_tensor_scales(derived[0], derived[1]);
  };
  const int tid = threadIdx.x;
  const int chunk = tid % T::chunks_per_row;
  const int row0 = tid / T::chunks_per_row;
  uint32_t block_amax = 0;  // kAmaxOut: the largest amax of the blocks this thread scales
  __shared__ TileAmax tile_amax;
  const auto share_amax = [&] {
    if constexpr (kAmaxOut) share_warp_amax(tile_amax, block_amax);
  };

  if constexpr (COL) {
    // FP4 both directions: the rowwise passes read only the thread's own chunks, so each group of
    // them starts once its own copies have landed (one commit group each) and the colwise pass,
    // which reads every thread's, follows a barrier. 8-bit codes gain from it on small grids only,
    // so they wait for the whole tile unless the caller asks (TileOptions::rows_as_they_land).
    // A paired input stages both of its tiles before either is quantized.
    constexpr bool kRowsAsTheyLand = ROW && !In::paired_halves && (T::elem_bits == 4 || kRowsLand);
    // The codes and scales of staged tile `tile` at tc, once it is staged (or, rows as they land,
    // while it is).
    const auto quantize_staged = [&](const TileCoord& tc, const uint4* tile) {
      if constexpr (ROW) {
        const auto staged_chunk = [&](int i) {
          return tile[(row0 + i * T::rows_per_pass) * T::chunks_per_row + chunk];
        };
        using BeforeGroup = std::conditional_t<kRowsAsTheyLand, WaitForPassGroup<T>, NoGroupWait>;
        block_amax =
            quantize_rows<In, Fmt, kSkipPast>(p, tc, scaler, staged_chunk, row0, chunk,
                                              tile_row_out<T>(p, tc, row0, chunk), row_scale_tile, BeforeGroup{});
        if constexpr (kRowsAsTheyLand) __syncthreads();  // every thread's copies have landed
      }
      uint8_t* out_tile = reinterpret_cast<uint8_t*>(staged_tile) + T::staged_tile_bytes;
      block_amax =
          max(block_amax, quantize_col_pairs<In, Fmt, kSkipPast>(p, tc, scaler, tile, tid, out_tile, col_scale_tile));
      share_amax();
      __syncthreads();  // the staged output and both scale tiles are complete
      store_col_tile<T>(p, tc, out_tile, tid);
    };
    if constexpr (In::paired_halves) {
      // The partner tile after the staged output; the first tile's scales and staged output are
      // written out before the second reuses their shared memory.
      uint4* up_tile = staged_tile + (T::staged_tile_bytes + T::col_out_tile_bytes) / sizeof(uint4);
      const TileCoord up = paired_tile_coord(p, c);
      stage_tile_pair<T>(p, c, up, chunk, row0, staged_tile, up_tile);
      derive();
      __syncthreads();
      take_derived();
      quantize_staged(c, staged_tile);
      store_tile_scales<T, ROW, COL>(p, c, row_scale_tile, col_scale_tile, tid);
      if constexpr (kAmaxOut) commit_tile_amax<T>(p, c, tile_amax);
      __syncthreads();
      quantize_staged(up, up_tile);
      store_tile_scales<T, ROW, COL>(p, up, row_scale_tile, col_scale_tile, tid);
      if constexpr (kAmaxOut) commit_tile_amax<T>(p, up, tile_amax);
      return;
    }
    stage_tile<T, !kRowsAsTheyLand, kFetch256, kRowsAsTheyLand ? kRowPassGroups<T> : 1>(p, c, chunk, row0, staged_tile,
                                                                                        derive);
    if constexpr (!kRowsAsTheyLand || kDerive) __syncthreads();
    take_derived();
    quantize_staged(c, staged_tile);
  } else {
    static_assert(!In::paired_halves, "paired tiles are staged: a colwise direction");
    uint4 regs[T::passes];
    load_tile_regs<T>(p, c, chunk, row0, regs);
    if constexpr (kDerive) {
      derive();
      __syncthreads();
      take_derived();
    }
    const auto reg_chunk = [&](int i) { return regs[i]; };
    block_amax = quantize_rows<In, Fmt>(p, c, scaler, reg_chunk, row0, chunk, tile_row_out<T>(p, c, row0, chunk),
                                        row_scale_tile);
    share_amax();
    __syncthreads();
  }
  store_tile_scales<T, ROW, COL>(p, c, row_scale_tile, col_scale_tile, tid);
  if constexpr (kAmaxOut) commit_tile_amax<T>(p, c, tile_amax);
}

// kOptions: derive_tensor_scales and amax_out only.
template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule, unsigned kOptions = 0>
__global__ void __launch_bounds__(kThreads, (min_ctas<TileTraits<In, Fmt>, COL>()))
    quantize_tile_kernel(const Problem p) {
  using T = TileTraits<In, Fmt>;
  // 128-byte aligned after static shared memory of any size: 16-byte accesses then never straddle
  // 128-byte lines, which slowed the staged kernels markedly.
  extern __shared__ __align__(128) uint4 staged_tile[];
  __shared__ TileScales<T> scales;
  static_assert((kOptions & ~(TileOptions::derive_tensor_scales | TileOptions::amax_out)) == 0,
                "the plain kernel's options");
  quantize_tile<In, Fmt, ROW, COL, kRule, kOptions>(p, dense_tile_coord < T, COL && !ROW > (p, blockIdx.x), staged_tile,
                                                    scales);
}

}  // namespace mxq::cuda::kernels::quantize
