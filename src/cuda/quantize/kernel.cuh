// The MX quantize tile kernel: one CTA reads one 128 x 128 tile of one batch once and writes the
// rowwise and/or colwise codes and scales of that tile. Rowwise works from registers (a block is
// a few adjacent lanes; amax by shuffles); colwise stages the raw tile in shared memory and gives
// each thread one column, so that it writes 64 contiguous bytes of the transposed output. Blocked
// scales are staged as the tile's 512-byte blocked tiles and written with 16-byte stores.
#pragma once
#include <cstdint>
#include <cstring>

#include "traits.cuh"

namespace mxq::cuda::quant {

struct Problem {
  const void* in = nullptr;
  int64_t batch = 1, M = 0, K = 0;
  int64_t row_stride = 0, batch_stride = 0;  // elements
  ScaleRule rule = ScaleRule::rceil;
  bool blocked = true;
  uint8_t* row_data = nullptr;
  uint8_t* row_scales = nullptr;
  uint8_t* col_data = nullptr;
  uint8_t* col_scales = nullptr;
  int64_t row_scale_cols = 0;     // ceil(K / block)
  int64_t col_scale_cols = 0;     // ceil(M / block)
  int64_t row_scale_batch = 0;    // bytes of one batch's rowwise scales
  int64_t col_scale_batch = 0;
  int64_t row_scale_nc = 0;       // blocked: 512-byte tiles per 128 scale rows (Cp / 4)
  int64_t col_scale_nc = 0;
  int64_t tiles_m = 0, tiles_k = 0;
  const float* s_enc = nullptr;   // nvfp4: the batch's tensor scales, written before the launch
  const float* s_dec = nullptr;
  // Fast paths, valid for full tiles only: 16-byte input loads, vector data and scale stores.
  bool vec_in = false, vec_row_out = false, vec_col_out = false, vec_scales = false;
  bool elem_aligned = true;  // the input pointer is aligned to its element size
};

template <int NB>
__device__ __forceinline__ void store_vec(uint8_t* dst, uint64_t v) {
  if constexpr (NB == 8) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32));
  } else if constexpr (NB == 4) {
    *reinterpret_cast<uint32_t*>(dst) = static_cast<uint32_t>(v);
  } else {
    static_assert(NB == 2, "2, 4 or 8 bytes");
    *reinterpret_cast<uint16_t*>(dst) = static_cast<uint16_t>(v);
  }
}

// Writes a staged 512-byte scale tile (thread `lane` of 32 writes 16 bytes).
__device__ __forceinline__ void store_scale_tile(uint8_t* dst, const uint8_t* staged, int lane, bool vec) {
  if (vec) {
    reinterpret_cast<uint4*>(dst)[lane] = reinterpret_cast<const uint4*>(staged)[lane];
  } else {
    for (int i = 0; i < 16; ++i) dst[lane * 16 + i] = staged[lane * 16 + i];
  }
}

// One element at p; `aligned` false means p may not be aligned to its size (fp32 at odd offsets).
template <class Raw>
__device__ __forceinline__ Raw load_element(const Raw* p, bool aligned) {
  if (aligned) return *p;
  const uint8_t* b = reinterpret_cast<const uint8_t*>(p);
  uint8_t tmp[sizeof(Raw)];
  for (size_t i = 0; i < sizeof(Raw); ++i) tmp[i] = b[i];
  Raw r;
  memcpy(&r, tmp, sizeof r);
  return r;
}

template <class In, class Fmt, bool ROW, bool COL>
__global__ void __launch_bounds__(kThreads) quantize_tile_kernel(const Problem p) {
  using T = TileTraits<In, Fmt>;
  using Raw = typename T::Raw;
  extern __shared__ uint4 staged_tile[];  // colwise: kTileRows x kTileCols raw elements
  __shared__ alignas(16) uint8_t row_scale_tile[kScaleTileBytes * T::scale_tiles];
  __shared__ alignas(16) uint8_t col_scale_tile[kScaleTileBytes * T::scale_tiles];

  const int64_t tile = blockIdx.x;
  const int64_t tk = tile % p.tiles_k;
  const int64_t tm = (tile / p.tiles_k) % p.tiles_m;
  const int64_t b = tile / (p.tiles_k * p.tiles_m);
  const int64_t m0 = tm * kTileRows, k0 = tk * kTileCols;
  const bool full = m0 + kTileRows <= p.M && k0 + kTileCols <= p.K;
  const int tid = threadIdx.x;
  const int chunk = tid % T::chunks_per_row;
  const int row0 = tid / T::chunks_per_row;
  const Raw* in = static_cast<const Raw*>(p.in) + b * p.batch_stride;
  BlockScaler<Fmt> scaler{p.rule, 1.0f, 1.0f};
  if constexpr (Fmt::nv) {
    scaler.s_enc = p.s_enc[b];
    scaler.s_dec = p.s_dec[b];
  }

  // ---- one read of the tile: all loads in flight before the first use ----
  uint4 regs[T::passes];
  if (full && p.vec_in) {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      const int64_t m = m0 + row0 + i * T::rows_per_pass;
      regs[i] = __ldg(reinterpret_cast<const uint4*>(in + m * p.row_stride + k0 + chunk * T::vec));
    }
  } else {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      const int64_t m = m0 + row0 + i * T::rows_per_pass;
      Raw v[T::vec];
#pragma unroll
      for (int j = 0; j < T::vec; ++j) {
        const int64_t k = k0 + chunk * T::vec + j;
        v[j] = (m < p.M && k < p.K) ? load_element(in + m * p.row_stride + k, p.elem_aligned) : Raw(0);
      }
      memcpy(&regs[i], v, sizeof(v));
    }
  }
  if constexpr (COL) {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      staged_tile[(row0 + i * T::rows_per_pass) * T::chunks_per_row + chunk] = regs[i];
    }
  }

  // ---- rowwise: blocks along K, from registers ----
  if constexpr (ROW) {
    const bool vec_out = full && p.vec_row_out;
    const int kb_local = chunk / T::lanes_per_block;
    const bool scale_lane = chunk % T::lanes_per_block == 0;
    uint8_t* row_data = p.row_data + b * code_bytes<T>(p.M * p.K);
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      const int row = row0 + i * T::rows_per_pass;
      const int64_t m = m0 + row;
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
      const uint64_t codes = encode_codes<Fmt, T::vec>(x, scaler.multiplier(sb, poisoned), poisoned);
      const int64_t k = k0 + chunk * T::vec;
      uint8_t* dst = row_data + code_bytes<T>(m * p.K + k);
      if (vec_out) {
        store_vec<T::row_bytes_per_chunk>(dst, codes);
      } else if (m < p.M) {
        for (int64_t j = 0; j < T::row_bytes_per_chunk && j < code_bytes<T>(p.K - k); ++j) {
          dst[j] = static_cast<uint8_t>(codes >> (8 * j));
        }
      }
      if (scale_lane) {
        const int64_t kb = k0 / T::block + kb_local;
        const bool real = m < p.M && kb < p.row_scale_cols;
        if (p.blocked) {
          row_scale_tile[num::blocked_offset(row, kb_local, 1)] = real ? sb : 0;
        } else if (real) {
          p.row_scales[b * p.row_scale_batch + m * p.row_scale_cols + kb] = sb;
        }
      }
    }
  }

  // ---- colwise: blocks along M, data transposed; one column per thread ----
  if constexpr (COL) {
    __syncthreads();
    constexpr int kThreadsPerCol = kThreads / kTileCols;
    constexpr int kBlocksPerThread = T::col_blocks / kThreadsPerCol;
    const Raw* staged = reinterpret_cast<const Raw*>(staged_tile);
    const int kl = tid % kTileCols;
    const int64_t k = k0 + kl;
    const bool vec_out = full && p.vec_col_out;
    uint8_t* col_row = p.col_data + (b * p.K + k) * code_bytes<T>(p.M);
#pragma unroll
    for (int jb = 0; jb < kBlocksPerThread; ++jb) {
      const int mb_local = (tid / kTileCols) * kBlocksPerThread + jb;
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
      encode_block<T, Fmt>(x, scaler.multiplier(sb, poisoned), poisoned, codes);
      const int64_t mstart = m0 + mb_local * T::block;
      if (vec_out || (k < p.K && mstart < p.M)) {
        store_block<T>(col_row + code_bytes<T>(mstart), codes, vec_out, code_bytes<T>(p.M - mstart));
      }
      const int64_t mb = m0 / T::block + mb_local;
      const bool real = k < p.K && mb < p.col_scale_cols;
      if (p.blocked) {
        col_scale_tile[num::blocked_offset(kl, mb_local, 1)] = real ? sb : 0;
      } else if (real) {
        p.col_scales[b * p.col_scale_batch + k * p.col_scale_cols + mb] = sb;
      }
    }
  }

  // ---- blocked scales: this tile owns T::scale_tiles adjacent 512-byte tiles per direction (the
  // last of a row of tiles may lie past the padded scale columns: it is not written) ----
  if (p.blocked) {
    __syncthreads();
    constexpr int kStoreThreads = 32 * T::scale_tiles;
    const int s = (tid % kStoreThreads) / 32, lane = tid % 32;
    if (ROW && tid < kStoreThreads && tk * T::scale_tiles + s < p.row_scale_nc) {
      store_scale_tile(p.row_scales + b * p.row_scale_batch +
                           (tm * p.row_scale_nc + tk * T::scale_tiles + s) * kScaleTileBytes,
                       row_scale_tile + s * kScaleTileBytes, lane, p.vec_scales);
    }
    if (COL && tid >= kStoreThreads && tid < 2 * kStoreThreads && tm * T::scale_tiles + s < p.col_scale_nc) {
      store_scale_tile(p.col_scales + b * p.col_scale_batch +
                           (tk * p.col_scale_nc + tm * T::scale_tiles + s) * kScaleTileBytes,
                       col_scale_tile + s * kScaleTileBytes, lane, p.vec_scales);
    }
  }
}

}  // namespace mxq::cuda::quant
