// Dequantize: x = decode(q) * 2^(b - 127) (MX) or decode(q) * sf * s_dec (nvfp4) in fp32
// (num::dequantize_element), rounded to the output dtype.
//
// Vector kernel (rows a multiple of 8 codes long, aligned pointers): each thread takes eight
// octets (octet.cuh: eight codes of one scale block, one 8- or 4-byte load and one scale byte
// each) of eight consecutive code rows r0..r0+7 at the same columns c0..c0+7, and writes its 64
// values with 16-byte stores (element.cuh). No shared memory:
// - rowwise: code rows are output rows; a CTA converts 64 rows x 256 columns, lane l columns
//   8l..8l+7, so a warp reads 256 (fp8) or 128 (fp4) contiguous bytes and writes 512 (bf16) per
//   instruction.
// - colwise (codes stored (K, M)): code rows are output columns; the thread's 8 x 8 block is
//   transposed in registers into eight output rows c0..c0+7 of eight values r0..r0+7. A CTA
//   converts a 128 x 128 tile; the lanes that share code rows cover one 32-byte sector of each
//   (4 lanes of fp8 octets, 8 of fp4), the others go along k, so loads take whole sectors and
//   each output row gets whole 128-byte (fp8) or 64-byte (fp4) runs.
// Anything else (odd widths, unaligned pointers) takes the per-element tile kernel: one CTA of
// 32 x 8 threads per 32 x 32 tile, colwise through shared memory.
#pragma once
#include <cstdint>

#include <mxq/numerics.hpp>

#include "cuda/dequantize/element.cuh"
#include "cuda/dequantize/octet.cuh"
#include "cuda/dequantize/tuning.hpp"

namespace mxq::cuda::kernels::dequantize {

constexpr int kTile = 32;  // per-element kernels (also the grouped one)
constexpr int kRowsPerPass = 8;

constexpr int kVectorThreads = 256;
constexpr int kRowTileCols = 256;  // rowwise: 64 x 256 tiles (VectorTile)
constexpr int kColTile = 128;      // colwise: 128 x 128 tiles

struct Problem {
  const uint8_t* data = nullptr;
  const uint8_t* scales = nullptr;
  void* out = nullptr;
  int64_t batch = 1;
  int64_t M = 0, K = 0;     // output (rows, cols) per batch
  int64_t scale_cols = 0;   // logical scale columns (rowwise ceil(K/b), colwise ceil(M/b))
  int64_t blocked_nc = 0;   // blocked: 4-column groups of the padded scale matrix
  int64_t scale_batch = 0;  // bytes of one batch's scales
  bool blocked = true;
  int64_t tiles_m = 0, tiles_k = 0;  // tiles along M (and K: per-element kernel) of the launched kernel
  const float* s_dec = nullptr;      // nvfp4: [batch]
};

__device__ __forceinline__ int64_t scale_offset(const Problem& p, int64_t r, int64_t c) {
  return p.blocked ? num::blocked_offset(r, c, p.blocked_nc) : r * p.scale_cols + c;
}

// ---- per-element tile kernel (any shape and alignment) ------------------------------------------

template <class Fmt, class Out, bool COLWISE>
__global__ void __launch_bounds__(kTile* kRowsPerPass) dequantize_tile_kernel(const Problem p) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t t = blockIdx.x;
  const int64_t k0 = (t % p.tiles_k) * kTile;
  const int64_t m0 = ((t / p.tiles_k) % p.tiles_m) * kTile;
  const int64_t b = t / (p.tiles_k * p.tiles_m);
  const uint8_t* data = p.data + b * p.M * p.K * Fmt::elem_bits / 8;
  const float s_dec = Fmt::nv ? p.s_dec[b] : 1.0f;
  const uint8_t* scales = p.scales + b * p.scale_batch;
  const int64_t out_base = b * p.M * p.K;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if constexpr (!COLWISE) {
    for (int i = ty; i < kTile; i += kRowsPerPass) {
      const int64_t m = m0 + i, k = k0 + tx;
      if (m < p.M && k < p.K) {
        const float x = num::dequantize_element<Fmt>(code_at<Fmt>(data, m * p.K + k),
                                                     scales[scale_offset(p, m, k / Fmt::block)], s_dec);
        Out::store(p.out, out_base + m * p.K + k, x);
      }
    }
  } else {
    for (int i = ty; i < kTile; i += kRowsPerPass) {  // read along m (contiguous in the codes)
      const int64_t k = k0 + i, m = m0 + tx;
      if (m < p.M && k < p.K) {
        tile[i][tx] = num::dequantize_element<Fmt>(code_at<Fmt>(data, k * p.M + m),
                                                   scales[scale_offset(p, k, m / Fmt::block)], s_dec);
      }
    }
    __syncthreads();
    for (int i = ty; i < kTile; i += kRowsPerPass) {  // write along k (contiguous in the output)
      const int64_t m = m0 + i, k = k0 + tx;
      if (m < p.M && k < p.K) Out::store(p.out, out_base + m * p.K + k, tile[tx][i]);
    }
  }
}

// ---- vector kernel --------------------------------------------------------------------------------

template <class Fmt>
__device__ __forceinline__ Octet<Fmt> load_octet(const uint8_t* p) {
  Octet<Fmt> o;
  if constexpr (Octet<Fmt>::kWords == 2) {
    const uint2 x = __ldg(reinterpret_cast<const uint2*>(p));
    o.w[0] = x.x;
    o.w[1] = x.y;
  } else {
    o.w[0] = __ldg(reinterpret_cast<const unsigned int*>(p));
  }
  return o;
}

// The fast path's rounding knowledge: MX values there are exact bf16 (normal fp32 products of at
// most four significant bits), NVFP4 ones only finite.
template <class Fmt>
constexpr Known kFastKnown = Fmt::nv ? Known::finite : Known::exact;

// Whether all eight octets of a thread can take the fast path (octet.cuh).
template <class Fmt>
__device__ __forceinline__ bool all_fast(const Octet<Fmt> (&o)[8], const uint32_t (&sb)[8], float s_dec) {
  bool fast = !Fmt::nv || isfinite(s_dec);
  uint32_t special = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    fast &= fast_scale<Fmt>(sb[j]);
    special |= special_codes(o[j]);
  }
  return fast && special == 0;
}

// How the 256 threads of a CTA cover their tile of code rows (rowwise: data rows m; colwise: code
// rows k) by code columns, each thread eight octets: rows r0..r0+7, columns c0..c0+7.
template <class Fmt, bool COLWISE>
struct VectorTile {
  static constexpr int lanes_c = COLWISE ? 32 / Octet<Fmt>::kBytes : 32;  // lanes along a code row
  static constexpr int lanes_r = 32 / lanes_c;
  static constexpr int cols = COLWISE ? kColTile : kRowTileCols;
  static constexpr int warps_c = cols / (8 * lanes_c);
  static constexpr int warps_r = kVectorThreads / 32 / warps_c;
  static constexpr int rows = warps_r * lanes_r * 8;
  static_assert(warps_c * warps_r * 32 == kVectorThreads, "whole warps");
  static_assert(!COLWISE || rows == kColTile, "square colwise tile");
};

// The 8 x 8 block v[octet][value]: rowwise, `rows` output rows first + j * row_stride of octet j;
// colwise, output rows first + i * row_stride of the octets' i-th values.
template <class Out, Known K, bool COLWISE>
__device__ __forceinline__ void store_block(void* out, int64_t first, int64_t row_stride, int rows,
                                            const float (&v)[8][8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    if constexpr (COLWISE) {
      const float column[8] = {v[0][i], v[1][i], v[2][i], v[3][i], v[4][i], v[5][i], v[6][i], v[7][i]};
      Out::template store8<K>(out, first + i * row_stride, column);
    } else if (i < rows) {
      Out::template store8<K>(out, first + i * row_stride, v[i]);
    }
  }
}

// The values of octet j of o (scale bytes sb) by the fast path (kFast, the thread's octets passed
// all_fast) or the numerics core; 0 when j's bit is set in `zero`.
template <class Fmt, bool kFast>
__device__ __forceinline__ void octet_values(const Octet<Fmt> (&o)[8], const uint32_t (&sb)[8], float s_dec,
                                             uint32_t zero, int j, float (&v)[8]) {
  if constexpr (kFast) {
    fast_values(o[j], fast_factor<Fmt>(sb[j]), s_dec, v);
  } else {
    reference_values(o[j], sb[j], s_dec, v);
  }
  if ((zero >> j) & 1u) {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = 0.0f;
  }
}

// Rowwise, compact: octet j converted and stored as output row first + j * row_stride (rows < 8
// stores only the first `rows`), one octet's eight values live at a time.
template <class Fmt, class Out, Known K, bool kFast>
__device__ __forceinline__ void convert_rows(const Octet<Fmt> (&o)[8], const uint32_t (&sb)[8], float s_dec,
                                             uint32_t zero, void* out, int64_t first, int64_t row_stride, int rows) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    float v[8];
    octet_values<Fmt, kFast>(o, sb, s_dec, zero, j, v);
    if (j < rows) Out::template store8<K>(out, first + j * row_stride, v);
  }
}

// Colwise to a 16-bit output: octets 2q and 2q + 1 are converted together and their i-th values
// rounded into word q of output row i at once, so that 32 words live instead of 64 floats and the
// transpose costs no instruction beyond the packing.
template <class Fmt, class Out, Known K, bool kFast>
__device__ __forceinline__ void convert_transposed_halves(const Octet<Fmt> (&o)[8], const uint32_t (&sb)[8],
                                                          float s_dec, uint32_t zero, void* out, int64_t first,
                                                          int64_t row_stride) {
  uint32_t w[8][4];  // [output row i][word q]
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    float v[2][8];
    octet_values<Fmt, kFast>(o, sb, s_dec, zero, 2 * q, v[0]);
    octet_values<Fmt, kFast>(o, sb, s_dec, zero, 2 * q + 1, v[1]);
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i][q] = Out::template pack2<K>(v[0][i], v[1][i]);
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    store16(static_cast<uint16_t*>(out) + first + i * row_stride, w[i][0], w[i][1], w[i][2], w[i][3]);
  }
}

// A thread's eight octets o[j] (scale bytes sb[j]) to the output: rowwise, `rows` output rows
// first + j * row_stride of eight values; colwise, transposed into eight output rows
// first + i * row_stride of the eight octets' i-th values. Octets whose bit is set in `zero` come
// out as 0 (their codes and scale bytes must still keep the fast path: zeros and a normal scale).
// kCompact: rowwise one octet and colwise (16-bit outputs) two octets at a time instead of the
// whole 8 x 8 block of floats, which holds the registers down (tuning.hpp: compact_conversion).
template <class Fmt, class Out, bool COLWISE, bool kCompact>
__device__ __forceinline__ void convert_and_store(const Octet<Fmt> (&o)[8], const uint32_t (&sb)[8], float s_dec,
                                                  uint32_t zero, void* out, int64_t first, int64_t row_stride,
                                                  int rows) {
  const bool fast = all_fast(o, sb, s_dec);
  if constexpr (kCompact && !COLWISE) {
    if (fast) {
      convert_rows<Fmt, Out, kFastKnown<Fmt>, true>(o, sb, s_dec, zero, out, first, row_stride, rows);
    } else {
      convert_rows<Fmt, Out, Known::any, false>(o, sb, s_dec, zero, out, first, row_stride, rows);
    }
  } else if constexpr (kCompact && Out::kBytes == 2) {
    if (fast) {
      convert_transposed_halves<Fmt, Out, kFastKnown<Fmt>, true>(o, sb, s_dec, zero, out, first, row_stride);
    } else {
      convert_transposed_halves<Fmt, Out, Known::any, false>(o, sb, s_dec, zero, out, first, row_stride);
    }
  } else {
    float v[8][8];
    if (fast) {
#pragma unroll
      for (int j = 0; j < 8; ++j) octet_values<Fmt, true>(o, sb, s_dec, zero, j, v[j]);
      store_block<Out, kFastKnown<Fmt>, COLWISE>(out, first, row_stride, rows, v);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) octet_values<Fmt, false>(o, sb, s_dec, zero, j, v[j]);
      store_block<Out, Known::any, COLWISE>(out, first, row_stride, rows, v);
    }
  }
}

// grid.x: tiles along K (output columns), grid.y: along M, grid.z: batches (y and z loop past the
// grid). Rowwise rows past M load row M - 1 and store nothing; colwise needs M and K multiples of 8.
template <class Fmt, class Out, bool COLWISE>
__global__ void __launch_bounds__(kVectorThreads) dequantize_vector_kernel(const Problem p) {
  using T = VectorTile<Fmt, COLWISE>;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int r_in_tile = ((warp / T::warps_c) * T::lanes_r + lane / T::lanes_c) * 8;
  const int c_in_tile = ((warp % T::warps_c) * T::lanes_c + lane % T::lanes_c) * 8;
  const int64_t R = COLWISE ? p.K : p.M, C = COLWISE ? p.M : p.K;  // code rows, codes per row
  const int64_t row_bytes = C * Fmt::elem_bits / 8;
  // Code rows r0..r0+7 lie in one 32-row group of the blocked layout: +16 bytes per row.
  const int64_t scale_step = p.blocked ? 16 : p.scale_cols;
  const int64_t tile_x = blockIdx.x;
  for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z) {
    const float s_dec = Fmt::nv ? p.s_dec[b] : 1.0f;
    const uint8_t* data = p.data + b * R * row_bytes;
    const uint8_t* scales = p.scales + b * p.scale_batch;
    const int64_t out_base = b * p.M * p.K;
    for (int64_t tile_y = blockIdx.y; tile_y < p.tiles_m; tile_y += gridDim.y) {
      const int64_t r0 = (COLWISE ? tile_x : tile_y) * T::rows + r_in_tile;
      const int64_t c0 = (COLWISE ? tile_y : tile_x) * T::cols + c_in_tile;
      if (r0 >= R || c0 >= C) continue;
      const int rows = COLWISE ? 8 : static_cast<int>(R - r0 < 8 ? R - r0 : 8);
      const uint8_t* code_row = data + r0 * row_bytes + c0 * Fmt::elem_bits / 8;
      const uint8_t* scale = scales + scale_offset(p, r0, c0 / Fmt::block);
      Octet<Fmt> o[8];
      uint32_t sb[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        o[j] = load_octet<Fmt>(code_row);
        sb[j] = __ldg(scale);
        if (j + 1 < rows) {  // rowwise rows past M repeat the last one (never stored)
          code_row += row_bytes;
          scale += scale_step;
        }
      }
      // Rowwise: output rows r0 + j at columns c0; colwise: output rows c0 + i at columns r0.
      const int64_t first = out_base + (COLWISE ? c0 * p.K + r0 : r0 * p.K + c0);
      convert_and_store<Fmt, Out, COLWISE, compact_conversion(false, Fmt::nv)>(o, sb, s_dec, 0u, p.out, first, p.K,
                                                                               rows);
    }
  }
}

}  // namespace mxq::cuda::kernels::dequantize
