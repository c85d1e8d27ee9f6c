// Compile-time shape of the quantize tile kernel, derived from the input type and the format.
// A tile is 128 rows x 128 input columns; with 32-element blocks it maps to exactly one 512-byte
// blocked scale tile per direction (rowwise: 128 rows x 4 scale columns; colwise: 128 k-rows x 4
// m-block columns). A 16-element format (nvfp4) would give two scale tiles per direction: the
// constants below say so and the kernel static_asserts what it serves today.
#pragma once
#include <cstdint>

#include <mxq/numerics.hpp>

#include "../convert.cuh"

namespace mxq::cuda::quant {

constexpr int kTileRows = 128;
constexpr int kTileCols = 128;
constexpr int kThreads = 256;
constexpr int kScaleTileBytes = 512;

template <class In, class Fmt>
struct TileTraits {
  using Raw = typename In::Raw;
  static constexpr int vec = 16 / static_cast<int>(sizeof(Raw));  // elements per 16-byte load
  static constexpr int chunks_per_row = kTileCols / vec;
  static constexpr int rows_per_pass = kThreads / chunks_per_row;
  static constexpr int passes = kTileRows / rows_per_pass;        // 16-byte loads per thread
  static constexpr int block = Fmt::block;
  static constexpr int lanes_per_block = block / vec;              // lanes sharing a rowwise block
  static constexpr int elem_bits = Fmt::elem_bits;
  static constexpr int row_bytes_per_chunk = vec * elem_bits / 8;  // rowwise output of one load
  static constexpr int scale_cols = kTileCols / block;             // per tile, rowwise
  static constexpr int col_blocks = kTileRows / block;             // per tile column, colwise
  static constexpr int64_t staged_tile_bytes = int64_t{kTileRows} * kTileCols * sizeof(Raw);
  static_assert(lanes_per_block >= 1 && (lanes_per_block & (lanes_per_block - 1)) == 0,
                "a rowwise block spans a power-of-two number of lanes of one warp");
  static_assert(scale_cols == 4 && col_blocks == 4,
                "one 512-byte blocked scale tile per direction (32-element blocks)");
};

// Codes of N consecutive elements of one block, packed low element first (N * bits <= 64).
// A poisoned block (non-finite amax) encodes every element as the format's NaN code.
template <class Fmt, int N>
__device__ __forceinline__ uint64_t encode_codes(const float* x, uint8_t scale_byte, bool poisoned) {
  using Elem = typename Fmt::Elem;
  static_assert(N % 2 == 0 && N * Elem::bits <= 64, "pairs of codes into one 64-bit word");
  uint64_t codes = 0;
  if (poisoned) {
    for (int j = 0; j < N; ++j) codes |= uint64_t{Elem::nan_code} << (j * Elem::bits);
    return codes;
  }
  const float mult = num::element_multiplier<Fmt>(scale_byte, 0.0f);
#pragma unroll
  for (int j = 0; j < N; j += 2) {
    codes |= uint64_t{encode_pair<Elem>(x[j] * mult, x[j + 1] * mult)} << (j * Elem::bits);
  }
  return codes;
}

}  // namespace mxq::cuda::quant
