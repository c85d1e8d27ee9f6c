// What a quantize tile kernel is told (Problem, from the launcher) and where one tile reads and
// writes (TileCoord): the plain kernel's tile coordinates and the batch's block scaler.
#pragma once
#include <cstdint>

#include <mxq/numerics/swiglu.hpp>

#include "cuda/common.cuh"
#include "cuda/quantize/tile_order.hpp"
#include "cuda/quantize/traits.cuh"

namespace mxq::cuda::kernels::quantize {

// What a computed input (In::computed: ../swiglu/source.cuh) makes its elements from, besides
// Problem::in, which is then h (M, 2F) with h's row stride: the SwiGLU activation a (M, F) or its
// gradient dh (M, 2F) are quantized as they are produced, never read back from memory.
struct SwigluSource {
  const void* grad = nullptr;      // backward: dA (M, F) in h's dtype
  int64_t grad_row_stride = 0;     // elements
  const float* weights = nullptr;  // one per row, or null
  void* copy = nullptr;            // the computed tensor, contiguous in h's dtype, or null
  bool copy_vec = false;           // copy: 16-byte stores (aligned, rows of whole 16 bytes)
  int64_t F = 0;                   // gate (and up) columns
  bool interleaved = false;        // gate in even, up in odd columns (else [gate | up])
  num::SwigluRule rule;
};

struct Problem {
  const void* in = nullptr;
  int64_t batch = 1, M = 0, K = 0;
  int64_t Mc = 0;                            // colwise data: codes per transposed row (M, or padded rows)
  int64_t row_stride = 0, batch_stride = 0;  // elements
  bool blocked = true;
  uint8_t* row_data = nullptr;
  uint8_t* row_scales = nullptr;
  uint8_t* col_data = nullptr;
  uint8_t* col_scales = nullptr;
  int64_t row_scale_cols = 0;   // ceil(K / block)
  int64_t col_scale_cols = 0;   // linear colwise scales: bytes per k row (ceil(M / block); groups: more)
  int64_t row_scale_batch = 0;  // bytes of one batch's rowwise scales
  int64_t col_scale_batch = 0;
  int64_t row_scale_nc = 0;  // blocked: 512-byte tiles per 128 scale rows (Cp / 4)
  int64_t col_scale_nc = 0;
  int64_t tiles_m = 0, tiles_k = 0;
  FastDiv batch_tiles;           // plain kernel: tiles per batch
  TileOrder order;               // plain kernel: tiles_m x tiles_k
  float* s_enc = nullptr;        // nvfp4: the batch's tensor scales, written before the launch
  float* s_dec = nullptr;        // (or by the kernel: derive_tensor_scales)
  const float* amax = nullptr;   // nvfp4, kDerive kernels: the caller's amax
  uint32_t* amax_out = nullptr;  // nvfp4, kAmaxOut kernels: QuantizeOutputs::amax as fp32 bits, cleared
  // Fast paths, valid for full tiles only: 16-byte input loads, vector data and scale stores.
  bool vec_in = false, vec_row_out = false, vec_col_out = false, vec_scales = false;
  bool elem_aligned = true;  // the input pointer is aligned to its element size
  SwigluSource swiglu;       // computed inputs only
};

// Where one tile reads and writes. Tile rows past in_rows read as zeros (the tail of a tensor or
// of a token group, or padding rows); a direction writes only its first row_rows / col_rows tile
// rows (padding rows of a padded direction are written, the next group's rows are not).
struct TileCoord {
  int64_t b;       // batch: the batch strides of the input, the data and the scales
  int64_t tk, k0;  // column tile and its first column
  int64_t m0;      // first input row
  int in_rows, row_rows, col_rows;
  int64_t row_m0, col_m0;  // rowwise output row / colwise output column of tile row 0
  int64_t row_scale_tm;    // blocked rowwise scales: the tile's row of 512-byte scale tiles
  int64_t col_scale_at;    // colwise scales: byte offset of the matrix holding the tile's scales
  int64_t col_scale_nc;    // blocked: 512-byte tiles per 128 k rows of that matrix
  int64_t col_scale_c0;    // the tile's first scale column in that matrix
  int64_t col_scale_end;   // linear: the matrix's scale columns the tile may write are < this
  bool k_full;             // all 128 columns inside the tensor
};

// Tile `tile` of a plain tensor: batch-major, then p.order within the batch (row-major, one
// division, unless kBands: colwise alone, tile_order_band).
template <class T, bool kBands>
__device__ __forceinline__ TileCoord dense_tile_coord(const Problem& p, uint32_t tile) {
  const uint32_t b = p.batch_tiles.div(tile);
  const uint32_t in_batch = tile - b * p.batch_tiles.d;
  const TilePlace at = kBands ? p.order.place(in_batch) : p.order.place_row_major(in_batch);
  const int64_t tm = at.row;
  TileCoord c;
  c.tk = at.col;
  c.b = b;
  c.m0 = tm * kTileRows;
  c.k0 = c.tk * kTileCols;
  c.in_rows = c.row_rows = c.col_rows = static_cast<int>(min(p.M - c.m0, int64_t{kTileRows}));
  c.row_m0 = c.col_m0 = c.m0;
  c.row_scale_tm = tm;
  c.col_scale_at = c.b * p.col_scale_batch;
  c.col_scale_nc = p.col_scale_nc;
  c.col_scale_c0 = tm * T::scale_cols;
  c.col_scale_end = p.col_scale_cols;
  c.k_full = c.k0 + kTileCols <= p.K;
  return c;
}

template <int kRows = kTileRows>  // rows staged: more than a tile for the grouped colwise windows
__device__ __forceinline__ bool in_full(const TileCoord& c) {
  return c.in_rows == kRows && c.k_full;
}

// The rule is a template argument of the kernel: a runtime rule would compile both rules' code
// and a branch into every scale computation.
template <class Fmt, ScaleRule kRule>
__device__ __forceinline__ BlockScaler<Fmt> batch_scaler(const Problem& p, int64_t b) {
  BlockScaler<Fmt> scaler{kRule, 1.0f, 1.0f};
  if constexpr (Fmt::nv) scaler.set_tensor_scales(p.s_enc[b], p.s_dec[b]);
  return scaler;
}

// Offset of scale (row, col) in a tile's staged blocked scale tiles (0 <= row < 128, 0 <= col <
// 4 * T::scale_tiles): num::blocked_offset told that its operands are small and non-negative, so
// that it compiles to a few 32-bit shifts and masks instead of 64-bit signed divisions.
__device__ __forceinline__ int staged_scale_offset(int row, int col) {
  __builtin_assume(row >= 0 && row < kTileRows && col >= 0 && col < 8);
  return static_cast<int>(num::blocked_offset(static_cast<uint32_t>(row), static_cast<uint32_t>(col), 1));
}

}  // namespace mxq::cuda::kernels::quantize
