// Colwise quantization of a staged tile: two columns per thread, the transposed codes staged in a
// swizzled shared-memory tile, then written as whole rows of the transposed output.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/quantize/tile_io.cuh"

namespace mxq::cuda::kernels::quantize {

// Byte offset of byte `byte` of row `row` in the staged colwise output tile (ColOut rows of
// row_bytes). 16-byte chunks are XOR-swizzled by row >> 1 so that the colwise threads (lane p
// writes row 2p or 2p + 1) and the row-by-row readers are both free of bank conflicts.
template <class T>
__device__ __forceinline__ int col_out_offset(int row, int byte) {
  constexpr int kChunks = T::col_out_row_bytes / 16;
  return row * T::col_out_row_bytes + (((byte / 16) ^ ((row >> 1) % kChunks)) * 16) + byte % 16;
}

// A colwise block of a column pair (columns 2 pair, 2 pair + 1) is read twice from shared memory
// (amax, then codes) instead of held in registers: fewer registers per thread, more CTAs per SM.
// row(i) is the pair's raw elements of block row i (i < T::block).

// Both columns' amax bits.
template <class In, class Fmt, class Row>
__device__ __forceinline__ void col_block_amax(Row&& row, uint32_t (&amax)[2]) {
  using T = TileTraits<In, Fmt>;
  using Raw = typename T::Raw;
  using Pair = typename PairOf<Raw>::type;
  amax[0] = amax[1] = 0;
  if constexpr (sizeof(Raw) == 2) {
    uint32_t largest = 0;  // both columns' largest magnitudes, one per 16-bit half
#pragma unroll
    for (int i = 0; i < T::block; ++i) largest = max_abs_16x2<In>(largest, row(i));
    const uint32_t magnitudes = magnitude_bits_16x2(largest);
    amax[0] = num::abs_bits(In::to_float(static_cast<Raw>(magnitudes & 0xFFFFu)));
    amax[1] = num::abs_bits(In::to_float(static_cast<Raw>(magnitudes >> 16)));
  } else {
#pragma unroll
    for (int i = 0; i < T::block; ++i) {
      const Pair w = row(i);
      amax[0] = max(amax[0], num::abs_bits(In::to_float(pair_half<Raw>(w, 0))));
      amax[1] = max(amax[1], num::abs_bits(In::to_float(pair_half<Raw>(w, 1))));
    }
  }
}

// Both columns' codes (multipliers and poison flags from the scales) into the staged output
// tile's rows 2 pair and 2 pair + 1 at block `block` (bytes block * T::block_bytes on).
template <class In, class Fmt, class Row>
__device__ __forceinline__ void col_block_codes(Row&& row, const float (&mult)[2], const bool (&poisoned)[2],
                                                uint8_t* out_tile, int pair, int block) {
  using T = TileTraits<In, Fmt>;
  using Raw = typename T::Raw;
  using Pair = typename PairOf<Raw>::type;
  // MX fp4 of 16-bit inputs: each column's elements of two rows as one pair (one byte permute),
  // which encode_codes_mxfp4_pairs takes as it is; else the elements widened to fp32.
  constexpr bool kPairs = kMxfp4Pairs<In, Fmt>;
  // 16-byte shared stores (two words) if it can, except where two words would hold 64 widened
  // floats per thread (fp16 -> mxfp4 on widenings), which spilled. On pairs, fp16 -> mxfp4 takes
  // two words as bf16 does. (nvfp4 blocks are one word; fp32 rows take float2s.)
  constexpr bool kWideFloats = !kPairs && Fmt::Elem::bits == 4 && sizeof(Raw) == 2;
  constexpr int kWordsPerStore = T::block_words % 2 == 0 && !kWideFloats ? 2 : 1;
#pragma unroll
  for (int q = 0; q < T::block_words; q += kWordsPerStore) {
    constexpr int kRows = kWordsPerStore * T::codes_per_word;
    float x[2][kPairs ? 1 : kRows];
    uint32_t pairs[2][kPairs ? kRows / 2 : 1];
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const Pair w = row(q * T::codes_per_word + i);
      if constexpr (kPairs) {
        if (i % 2 == 1) {
          const uint32_t above = row(q * T::codes_per_word + i - 1);
          pairs[0][i / 2] = byte_perm(above, w, 0x5410);
          pairs[1][i / 2] = byte_perm(above, w, 0x7632);
        }
      } else {
        x[0][i] = In::to_float_for_codes(pair_half<Raw>(w, 0));
        x[1][i] = In::to_float_for_codes(pair_half<Raw>(w, 1));
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint64_t words[kWordsPerStore];
#pragma unroll
      for (int j = 0; j < kWordsPerStore; ++j) {
        if constexpr (kPairs) {
          words[j] = encode_codes_mxfp4_pairs<In, Fmt, T::codes_per_word>(pairs[h] + j * T::codes_per_word / 2, mult[h],
                                                                          poisoned[h]);
        } else {
          words[j] = encode_codes<Fmt, T::codes_per_word>(x[h] + j * T::codes_per_word, mult[h], poisoned[h]);
        }
      }
      uint8_t* dst = out_tile + col_out_offset<T>(2 * pair + h, block * T::block_bytes + q * 8);
      if constexpr (kWordsPerStore == 2) {
        *reinterpret_cast<uint4*>(dst) =
            make_uint4(static_cast<uint32_t>(words[0]), static_cast<uint32_t>(words[0] >> 32),
                       static_cast<uint32_t>(words[1]), static_cast<uint32_t>(words[1] >> 32));
      } else {
        *reinterpret_cast<uint2*>(dst) =
            make_uint2(static_cast<uint32_t>(words[0]), static_cast<uint32_t>(words[0] >> 32));
      }
    }
  }
}

// Colwise codes of the staged tile into the staged output tile. Thread tid owns column pair
// tid % 64 (columns 2p, 2p + 1) of T::col_blocks / 4 consecutive blocks along M; lanes of a warp
// read consecutive pairs of one row. Returns the largest amax bits of its blocks.
// kSkipPastRows: blocks wholly past c.col_rows only write their zero scales (TileOptions::skip_past_rows).
template <class In, class Fmt, bool kSkipPastRows = false>
__device__ __forceinline__ uint32_t quantize_col_pairs(const Problem& p, const TileCoord& c,
                                                       const BlockScaler<Fmt>& scaler, const uint4* staged_tile,
                                                       int tid, uint8_t* out_tile, uint8_t* col_scale_tile) {
  using T = TileTraits<In, Fmt>;
  using Pair = typename PairOf<typename T::Raw>::type;
  constexpr int kPairs = kTileCols / 2;
  static_assert(kThreads % kPairs == 0 && (kPairs * T::col_blocks) % kThreads == 0,
                "every thread owns whole blocks of one column pair");
  constexpr int kBlocksPerThread = kPairs * T::col_blocks / kThreads;
  const int pair = tid % kPairs;
  const Pair* staged = reinterpret_cast<const Pair*>(staged_tile) + pair;
  uint32_t largest_amax = 0;
#pragma unroll
  for (int jb = 0; jb < kBlocksPerThread; ++jb) {
    const int mb_local = (tid / kPairs) * kBlocksPerThread + jb;
    if (kSkipPastRows && mb_local * T::block >= c.col_rows) {
      // A block past the tile's rows: no codes go out (store_col_tile stops at col_rows), its
      // scales are the blocked padding.
      col_scale_tile[staged_scale_offset(2 * pair, mb_local)] = 0;
      col_scale_tile[staged_scale_offset(2 * pair + 1, mb_local)] = 0;
      continue;
    }
    const Pair* rows = staged + mb_local * T::block * kPairs;
    const auto row = [&](int i) { return rows[i * kPairs]; };
    uint32_t amax[2];
    col_block_amax<In, Fmt>(row, amax);
    largest_amax = max(largest_amax, max(amax[0], amax[1]));
    uint32_t sb[2];
    bool poisoned[2];
    float mult[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      sb[h] = scaler.scale(amax[h]);
      poisoned[h] = num::is_nonfinite_abs_bits(amax[h]);
      mult[h] = scaler.multiplier(sb[h], poisoned[h]);
      const int kl = 2 * pair + h;
      col_scale_tile[staged_scale_offset(kl, mb_local)] =
          c.k0 + kl < p.K && mb_local * T::block < c.col_rows ? sb[h] : 0;
    }
    col_block_codes<In, Fmt>(row, mult, poisoned, out_tile, pair, mb_local);
  }
  return largest_amax;
}

// Writes the staged colwise output tile: rows k0.. of the transposed output, 16 bytes per thread
// and store, consecutive lanes along a row (whole 128-byte lines per 8 lanes for fp8). A thread
// keeps one 16-byte column of the rows and steps down kRowsPerStep rows at a time (a constant
// trip count: the loop unrolls, the destination moves by one add per step).
template <class T>
__device__ __forceinline__ void store_col_tile(const Problem& p, const TileCoord& c, const uint8_t* out_tile, int tid) {
  constexpr int kChunks = T::col_out_row_bytes / 16;
  constexpr int kRowsPerStep = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0 && kTileCols % kRowsPerStep == 0, "whole rows per step");
  const int64_t out_row = code_bytes<T>(p.Mc);
  const int row0 = tid / kChunks, chunk = tid % kChunks;
  const int64_t col_byte0 = code_bytes<T>(c.col_m0);
  uint8_t* dst = p.col_data + (c.b * p.K + c.k0 + row0) * out_row + col_byte0 + chunk * 16;
  const int64_t step_bytes = kRowsPerStep * out_row;
  const int row_bytes = static_cast<int>(code_bytes<T>(c.col_rows));  // bytes of a row the tile writes
  // This thread's 16 bytes of each row lie inside the tile's rows (always, for full tiles), or
  // none of them do (a partial tile's last chunks: skipped, not run through the byte loop with
  // every store predicated off, as the grouped colwise windows' rounds often hold three blocks).
  const bool whole = p.vec_col_out && col_byte0 % 16 == 0 && chunk * 16 + 16 <= row_bytes;
  const bool none = chunk * 16 >= row_bytes;
#pragma unroll
  for (int step = 0; step < kTileCols / kRowsPerStep; ++step, dst += step_bytes) {
    const int row = row0 + step * kRowsPerStep;
    const uint4 v = *reinterpret_cast<const uint4*>(out_tile + col_out_offset<T>(row, chunk * 16));
    if (whole && (c.k_full || c.k0 + row < p.K)) {
      *reinterpret_cast<uint4*>(dst) = v;
    } else if (!none && c.k0 + row < p.K) {
      uint8_t b[16];
      memcpy(b, &v, sizeof(v));
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        if (chunk * 16 + j < row_bytes) dst[j] = b[j];
      }
    }
  }
}

}  // namespace mxq::cuda::kernels::quantize
