// The grouped MX quantize tile kernel: token groups along M for rowwise (per-group blocked scales,
// optional fused padding) and along K for colwise (blocks inside each group, virtual zero rows up
// to the padded size, K-group scales), both from one read of the tile.
//
// The grid is sized on the host from an upper bound: tile_rows = ceil(rows / 128) + G row tiles,
// tiles_k column tiles, dealt to CTAs in strips of column tiles of one row tile. A CTA walks the device-side offsets (group_tiles.cuh) to find the group of
// its row tile: group g owns ceil(rows_g / 128) consecutive row tiles, tile t covering its local
// rows [128 t, 128 t + 128), and each such tile owns exactly one 512-byte blocked scale tile per
// direction. CTAs whose row tile lies past the last group zero the bytes that belong to no group
// (zero_fill.cuh); there is always at least one such row tile, because the tiles of the groups
// and of the rows past them sum to at most ceil(rows / 128) + G - 1.
#pragma once
#include <cstdint>
#include <cstring>

#include "../quantize/kernel.cuh"
#include "../quantize/traits.cuh"
#include "group_tiles.cuh"
#include "zero_fill.cuh"

namespace mxq::cuda::qgroup {

using quant::kScaleTileBytes;
using quant::kThreads;
using quant::kTileCols;
static_assert(quant::kTileRows == kTileRows, "one tile height for the plain and the grouped kernels");

constexpr int kGroupItems = 4;  // groups per thread and chunk of the walk: 1024 groups per chunk

struct GroupedProblem {
  const void* in = nullptr;
  int64_t M = 0, K = 0, row_stride = 0;  // elements
  ScaleRule rule = ScaleRule::rceil;
  bool blocked = true;
  GroupWalk walk;
  bool row_padded = false, col_padded = false;
  uint8_t* row_data = nullptr;
  uint8_t* row_scales = nullptr;
  uint8_t* col_data = nullptr;
  uint8_t* col_scales = nullptr;
  int64_t Mr = 0, Mc = 0;                           // data rows of each direction
  int64_t row_scale_bytes = 0, col_scale_bytes = 0;  // whole buffers (quantize_sizes)
  int64_t k_blocks = 0;        // ceil(K / 32): rowwise scale columns
  int64_t col_scale_pitch = 0; // linear colwise: ceil(Mc / 32) + G columns per k
  int64_t k_rows_padded = 0;   // Rp(K): rows of each group's colwise blocked matrix
  int64_t tiles_k = 0, tile_rows = 0;
  int64_t strip_tiles = 1, strips = 1;  // column tiles per CTA, CTAs per row tile
  // Fast paths: 16-byte input loads; 8-byte rowwise and 16-byte colwise code stores; 16-byte
  // scale tile stores.
  bool vec_in = false, vec_row_out = false, vec_col_out = false, vec_scales = false;
  bool elem_aligned = true;
};

// The bytes of this direction's outputs that belong to no group; z of zs is this CTA's place
// among the CTAs past the last group with the same column tile.
template <bool ROW, bool COL>
__device__ void zero_ungrouped(const GroupedProblem& p, const GroupTotals& t, int64_t z, int64_t zs, int64_t tk) {
  const int64_t cta = z * p.tiles_k + tk, ctas = zs * p.tiles_k;
  if constexpr (ROW) {
    const int64_t end = p.row_padded ? t.padded_end : t.end;
    zero_flat(p.row_data, end * p.K, p.Mr * p.K, cta, ctas);
    if (p.blocked) {
      zero_flat(p.row_scales, t.tiles * p.tiles_k * kScaleTileBytes, p.row_scale_bytes, cta, ctas);
    } else {
      zero_flat(p.row_scales, end * p.k_blocks, p.Mr * p.k_blocks, cta, ctas);
    }
  }
  if constexpr (COL) {
    const int64_t end = p.col_padded ? t.padded_end : t.end;
    const int64_t k0 = tk * kTileCols, k1 = min(p.K, k0 + kTileCols);
    zero_columns(p.col_data, p.Mc, k0, k1, end, p.Mc, z, zs);
    if (p.blocked) {
      zero_flat(p.col_scales, p.k_rows_padded * 4 * t.tiles, p.col_scale_bytes, cta, ctas);
    } else {
      zero_columns(p.col_scales, p.col_scale_pitch, k0, k1, t.qcols, p.col_scale_pitch, z, zs);
    }
  }
}

// One 128 x 128 tile of group `grp` at column tile tk: one read, then the rowwise and/or colwise
// codes and scales. staged_tile and the scale tiles are the CTA's shared memory.
template <class In, class Fmt, bool ROW, bool COL>
__device__ __forceinline__ void quantize_group_tile(const GroupedProblem& p, const TileGroup& grp, int64_t tk,
                                                    uint4* staged_tile, uint8_t* row_scale_tile,
                                                    uint8_t* col_scale_tile) {
  using T = quant::TileTraits<In, Fmt>;
  using Raw = typename T::Raw;
  const int64_t lr0 = grp.tile * kTileRows;  // first group-local row of the tile
  const int64_t k0 = tk * kTileCols;
  const bool full_k = k0 + kTileCols <= p.K;
  const int tid = threadIdx.x;
  const int chunk = tid % T::chunks_per_row;
  const int row0 = tid / T::chunks_per_row;
  const Raw* in = static_cast<const Raw*>(p.in);
  const quant::BlockScaler<Fmt> scaler{p.rule, 1.0f, 1.0f};  // MX formats: no tensor scale

  // ---- one read of the tile; rows past the group's input rows read as zeros ----
  uint4 regs[T::passes];
  if (full_k && p.vec_in && lr0 + kTileRows <= grp.size) {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      const int64_t m = grp.in_start + lr0 + row0 + i * T::rows_per_pass;
      regs[i] = __ldg(reinterpret_cast<const uint4*>(in + m * p.row_stride + k0 + chunk * T::vec));
    }
  } else {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      const int64_t lr = lr0 + row0 + i * T::rows_per_pass;
      const Raw* src = in + (grp.in_start + lr) * p.row_stride + k0 + chunk * T::vec;
      if (lr < grp.size && full_k && p.vec_in) {
        regs[i] = __ldg(reinterpret_cast<const uint4*>(src));
      } else {
        Raw v[T::vec];
#pragma unroll
        for (int j = 0; j < T::vec; ++j) {
          const bool real = lr < grp.size && k0 + chunk * T::vec + j < p.K;
          v[j] = real ? quant::load_element(src + j, p.elem_aligned) : Raw(0);
        }
        memcpy(&regs[i], v, sizeof(v));
      }
    }
  }
  if constexpr (COL) {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      staged_tile[(row0 + i * T::rows_per_pass) * T::chunks_per_row + chunk] = regs[i];
    }
  }

  // ---- rowwise: blocks along K from registers; rows at the group's (padded) output rows ----
  if constexpr (ROW) {
    const int64_t rows = p.row_padded ? grp.padded_rows : grp.size;
    const int64_t out0 = p.row_padded ? grp.padded_start : grp.in_start;
    const int kb_local = chunk / T::lanes_per_block;
    const bool scale_lane = chunk % T::lanes_per_block == 0;
    const int64_t k = k0 + chunk * T::vec;
    const int64_t kb = k0 / T::block + kb_local;
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      const int row = row0 + i * T::rows_per_pass;
      const bool valid = lr0 + row < rows;  // later rows of the tile belong to the next group
      const int64_t m = out0 + lr0 + row;
      Raw v[T::vec];
      memcpy(v, &regs[i], sizeof(v));
      float x[T::vec];
      uint32_t amax = 0;
#pragma unroll
      for (int j = 0; j < T::vec; ++j) {
        x[j] = In::to_float(v[j]);
        amax = max(amax, num::abs_bits(x[j]));
      }
#pragma unroll
      for (int off = 1; off < T::lanes_per_block; off <<= 1) {
        amax = max(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
      }
      const uint8_t sb = scaler.scale(amax);
      const bool poisoned = num::is_nonfinite_abs_bits(amax);
      const uint64_t codes = quant::encode_codes<Fmt, T::vec>(x, scaler.multiplier(sb, poisoned), poisoned);
      uint8_t* dst = p.row_data + m * p.K + k;
      if (valid) {
        if (full_k && p.vec_row_out) {
          quant::store_vec<T::row_bytes_per_chunk>(dst, codes);
        } else {
          for (int j = 0; j < T::vec && k + j < p.K; ++j) dst[j] = static_cast<uint8_t>(codes >> (8 * j));
        }
      }
      if (scale_lane) {
        const bool real = valid && kb < p.k_blocks;
        if (p.blocked) {
          row_scale_tile[num::blocked_offset(row, kb_local, 1)] = real ? sb : 0;
        } else if (real) {
          p.row_scales[m * p.k_blocks + kb] = sb;
        }
      }
    }
  }

  // ---- colwise: blocks along M inside the group, data transposed; one column per thread ----
  if constexpr (COL) {
    __syncthreads();
    constexpr int kThreadsPerCol = kThreads / kTileCols;
    constexpr int kBlocksPerThread = T::col_blocks / kThreadsPerCol;
    const int64_t rows = p.col_padded ? grp.padded_rows : grp.size;
    const int64_t out0 = p.col_padded ? grp.padded_start : grp.in_start;
    const Raw* staged = reinterpret_cast<const Raw*>(staged_tile);
    const int kl = tid % kTileCols;
    const int64_t k = k0 + kl;
    uint8_t* col_row = p.col_data + k * p.Mc;
#pragma unroll
    for (int jb = 0; jb < kBlocksPerThread; ++jb) {
      const int mb_local = (tid / kTileCols) * kBlocksPerThread + jb;
      const int64_t lb = lr0 + mb_local * T::block;  // group-local first row of the block
      float x[T::block];
      uint32_t amax = 0;
#pragma unroll
      for (int i = 0; i < T::block; ++i) {
        x[i] = In::to_float(staged[(mb_local * T::block + i) * kTileCols + kl]);
        amax = max(amax, num::abs_bits(x[i]));
      }
      const uint8_t sb = scaler.scale(amax);
      const bool poisoned = num::is_nonfinite_abs_bits(amax);
      uint64_t codes[T::block_words];
      quant::encode_block<T, Fmt>(x, scaler.multiplier(sb, poisoned), poisoned, codes);
      const int64_t mstart = out0 + lb;
      const bool real = lb < rows && k < p.K;
      if (real) {  // the block's rows past the group's (padded) rows belong to the next group
        const bool vec = p.vec_col_out && lb + T::block <= rows && mstart % 16 == 0;
        quant::store_block<T>(col_row + mstart, codes, vec, rows - lb);
      }
      if (p.blocked) {
        col_scale_tile[num::blocked_offset(kl, mb_local, 1)] = real ? sb : 0;
      } else if (real) {
        p.col_scales[k * p.col_scale_pitch + grp.q_first + lb / T::block] = sb;
      }
    }
  }

  // ---- blocked scales: the tile owns one 512-byte scale tile per direction ----
  if (p.blocked) {
    __syncthreads();
    if (ROW && tid < 32 && p.k_blocks > 0) {
      const int64_t tile = (grp.tile_first + grp.tile) * p.tiles_k + tk;
      quant::store_scale_tile(p.row_scales + tile * kScaleTileBytes, row_scale_tile, tid, p.vec_scales);
    }
    if (COL && tid >= 32 && tid < 64 && p.K > 0) {
      const int64_t at = p.k_rows_padded * 4 * grp.tile_first + (tk * grp.tiles + grp.tile) * kScaleTileBytes;
      quant::store_scale_tile(p.col_scales + at, col_scale_tile, tid - 32, p.vec_scales);
    }
  }
}

// A CTA owns the row tile blockIdx.x / strips and the strip of up to strip_tiles column tiles
// blockIdx.x % strips of it: the group walk is paid once per strip.
template <class In, class Fmt, bool ROW, bool COL>
__global__ void __launch_bounds__(kThreads) grouped_quantize_kernel(const GroupedProblem p) {
  using T = quant::TileTraits<In, Fmt>;
  static_assert(T::elem_bits == 8 && T::scale_tiles == 1, "token groups serve the MXFP8 formats so far");
  extern __shared__ uint4 staged_tile[];  // colwise: kTileRows x kTileCols raw elements
  __shared__ alignas(16) uint8_t row_scale_tile[kScaleTileBytes];
  __shared__ alignas(16) uint8_t col_scale_tile[kScaleTileBytes];
  __shared__ GroupWalkStorage<kThreads, kGroupItems> walk;

  const int64_t trow = blockIdx.x / p.strips;
  const int64_t tk0 = (blockIdx.x % p.strips) * p.strip_tiles;
  const int64_t tk1 = min(p.tiles_k, tk0 + p.strip_tiles);
  find_tile_group(p.walk, trow, blockIdx.x == 0, walk);
  const TileGroup grp = walk.group;
  if (!grp.found) {
    const GroupTotals totals = walk.totals;
    for (int64_t tk = tk0; tk < tk1; ++tk) {
      zero_ungrouped<ROW, COL>(p, totals, trow - totals.tiles, p.tile_rows - totals.tiles, tk);
    }
    return;
  }
  for (int64_t tk = tk0; tk < tk1; ++tk) {
    quantize_group_tile<In, Fmt, ROW, COL>(p, grp, tk, staged_tile, row_scale_tile, col_scale_tile);
    __syncthreads();  // the next tile reuses the shared tiles
  }
}

}  // namespace mxq::cuda::qgroup
