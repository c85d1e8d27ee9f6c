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
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../common.cuh"
#include "tile_order.hpp"
#include "traits.cuh"

namespace mxq::cuda::quant {

struct Problem {
  const void* in = nullptr;
  int64_t batch = 1, M = 0, K = 0;
  int64_t Mc = 0;                 // colwise data: codes per transposed row (M, or padded rows)
  int64_t row_stride = 0, batch_stride = 0;  // elements
  bool blocked = true;
  uint8_t* row_data = nullptr;
  uint8_t* row_scales = nullptr;
  uint8_t* col_data = nullptr;
  uint8_t* col_scales = nullptr;
  int64_t row_scale_cols = 0;     // ceil(K / block)
  int64_t col_scale_cols = 0;     // linear colwise scales: bytes per k row (ceil(M / block); groups: more)
  int64_t row_scale_batch = 0;    // bytes of one batch's rowwise scales
  int64_t col_scale_batch = 0;
  int64_t row_scale_nc = 0;       // blocked: 512-byte tiles per 128 scale rows (Cp / 4)
  int64_t col_scale_nc = 0;
  int64_t tiles_m = 0, tiles_k = 0;
  FastDiv batch_tiles;            // plain kernel: tiles per batch
  TileOrder order;                // plain kernel: tiles_m x tiles_k
  const float* s_enc = nullptr;   // nvfp4: the batch's tensor scales, written before the launch
  const float* s_dec = nullptr;
  // Fast paths, valid for full tiles only: 16-byte input loads, vector data and scale stores.
  bool vec_in = false, vec_row_out = false, vec_col_out = false, vec_scales = false;
  bool elem_aligned = true;  // the input pointer is aligned to its element size
};

// Where one tile reads and writes. Tile rows past in_rows read as zeros (the tail of a tensor or
// of a token group, or padding rows); a direction writes only its first row_rows / col_rows tile
// rows (padding rows of a padded direction are written, the next group's rows are not).
struct TileCoord {
  int64_t b;               // batch: the batch strides of the input, the data and the scales
  int64_t tk, k0;          // column tile and its first column
  int64_t m0;              // first input row
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

__device__ __forceinline__ bool in_full(const TileCoord& c) { return c.in_rows == kTileRows && c.k_full; }

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

// Writes the scales of staged row r (4 per 512-byte tile, contiguous there) to row `row` of a
// linear scale matrix (`pitch` bytes per row) from column c0, columns below `end` only: 4-byte
// stores where aligned.
template <int kScaleTiles>
__device__ __forceinline__ void store_scale_row_linear(uint8_t* scales, int64_t pitch, int64_t end, int64_t row,
                                                       int64_t c0, const uint8_t* staged, int r) {
  uint8_t* dst = scales + row * pitch + c0;
  const bool vec = reinterpret_cast<uintptr_t>(dst) % 4 == 0;
#pragma unroll
  for (int s = 0; s < kScaleTiles; ++s) {
    const uint8_t* src = staged + num::blocked_offset(r, 4 * s, 1);
    if (vec && c0 + 4 * s + 4 <= end) {
      *reinterpret_cast<uint32_t*>(dst + 4 * s) = *reinterpret_cast<const uint32_t*>(src);
    } else {
      for (int j = 0; j < 4 && c0 + 4 * s + j < end; ++j) dst[4 * s + j] = src[j];
    }
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

// The 16 bytes of input (T::vec elements) at tile row `row`, column k of the tile's batch;
// elements outside the tile's input rows or the tensor read as zeros. For tiles that are not full
// or not 16-byte aligned.
template <class T>
__device__ __forceinline__ uint4 load_chunk_guarded(const Problem& p, const TileCoord& c, const typename T::Raw* in,
                                                    int row, int64_t k) {
  using Raw = typename T::Raw;
  if (row >= c.in_rows) return make_uint4(0, 0, 0, 0);
  const Raw* src = in + (c.m0 + row) * p.row_stride + k;
  if (p.vec_in && k + T::vec <= p.K) return __ldg(reinterpret_cast<const uint4*>(src));
  Raw v[T::vec];
#pragma unroll
  for (int j = 0; j < T::vec; ++j) v[j] = k + j < p.K ? load_element(src + j, p.elem_aligned) : Raw(0);
  uint4 r;
  memcpy(&r, v, sizeof r);
  return r;
}

// 16 bytes global -> shared without registers (.cg: cached in L2 only, the input is read once).
// kFetch256: with the L2 prefetch-size hint of 256 bytes (a tile's row segment of 16-bit input).
template <bool kFetch256 = false>
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  if constexpr (kFetch256) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
  }
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// Loads this thread's chunks of the tile into registers (row0 + i * rows_per_pass, chunk).
template <class T>
__device__ __forceinline__ void load_tile_regs(const Problem& p, const TileCoord& c, int chunk, int row0,
                                               uint4 (&regs)[T::passes]) {
  using Raw = typename T::Raw;
  const Raw* in = static_cast<const Raw*>(p.in) + c.b * p.batch_stride;
  const int64_t k = c.k0 + chunk * T::vec;
  if (in_full(c) && p.vec_in) {
    // One address computation, then a constant stride: per load, a 64-bit multiply chain and a
    // branch to the guarded path cost about as many instructions as the load's codes.
    const Raw* src = in + (c.m0 + row0) * p.row_stride + k;
    const int64_t pass_stride = T::rows_per_pass * p.row_stride;
#pragma unroll
    for (int i = 0; i < T::passes; ++i) regs[i] = __ldg(reinterpret_cast<const uint4*>(src + i * pass_stride));
  } else {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) regs[i] = load_chunk_guarded<T>(p, c, in, row0 + i * T::rows_per_pass, k);
  }
}

// Copies the raw tile into shared memory, row-major with kTileCols elements per row (zeros
// outside the tensor); the caller synchronises the CTA before reading it. The coordinates are read
// once, before the copies: `c` may live in shared memory, and every cp.async clobbers memory.
// kWait false: the caller waits for the copies (cp_async_wait_all) before its barrier. kFetch256:
// cp_async_16's L2 prefetch hint.
template <class T, bool kWait = true, bool kFetch256 = false>
__device__ __forceinline__ void stage_tile(const Problem& p, const TileCoord& c, int chunk, int row0, uint4* staged) {
  using Raw = typename T::Raw;
  const Raw* in = static_cast<const Raw*>(p.in) + c.b * p.batch_stride;
  const int64_t k = c.k0 + chunk * T::vec;
  const int in_rows = c.in_rows;
  const Raw* src = in + (c.m0 + row0) * p.row_stride + k;  // pass i reads src + i * pass_stride
  const int64_t pass_stride = T::rows_per_pass * p.row_stride;
  if (in_full(c) && p.vec_in) {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      const int row = row0 + i * T::rows_per_pass;
      cp_async_16<kFetch256>(&staged[row * T::chunks_per_row + chunk], src + i * pass_stride);
    }
    if constexpr (kWait) cp_async_wait_all();
  } else if (p.vec_in && k + T::vec <= p.K) {  // whole chunks: rows past in_rows are zero-filled
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      const int row = row0 + i * T::rows_per_pass;
      uint4* dst = &staged[row * T::chunks_per_row + chunk];
      if (row < in_rows) {
        cp_async_16<kFetch256>(dst, src + i * pass_stride);
      } else {
        *dst = make_uint4(0, 0, 0, 0);
      }
    }
    if constexpr (kWait) cp_async_wait_all();
  } else {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) {
      const int row = row0 + i * T::rows_per_pass;
      staged[row * T::chunks_per_row + chunk] = load_chunk_guarded<T>(p, c, in, row, k);
    }
  }
}

// Two adjacent raw elements: one shared-memory access.
template <class Raw>
struct PairOf;
template <>
struct PairOf<uint16_t> {
  using type = uint32_t;
};
template <>
struct PairOf<float> {
  using type = float2;
};

// Element h (0: lower address) of a pair. Two 16-bit inputs are cut out of their word by a shift
// (a copy into a 16-bit array made the compiler widen bf16 high halves with two instructions, not
// one AND).
template <class Raw, class Pair>
__device__ __forceinline__ Raw pair_half(const Pair& w, int h) {
  if constexpr (sizeof(Pair) == 4) {
    return static_cast<Raw>(h == 0 ? w & 0xFFFFu : w >> 16);
  } else {
    Raw v[2];
    memcpy(v, &w, sizeof(w));
    return v[h];
  }
}

// The inputs of one 16-byte chunk widened to fp32, as pairs (low address first).
template <class In, int N>
__device__ __forceinline__ void chunk_to_float(const uint4& raw, float (&x)[N]) {
  using Raw = typename In::Raw;
  using Pair = typename PairOf<Raw>::type;
  static_assert(N * sizeof(Raw) == sizeof(raw), "one chunk");
  Pair pairs[N / 2];
  memcpy(pairs, &raw, sizeof(raw));
#pragma unroll
  for (int j = 0; j < N / 2; ++j) {
    x[2 * j] = In::to_float(pair_half<Raw>(pairs[j], 0));
    x[2 * j + 1] = In::to_float(pair_half<Raw>(pairs[j], 1));
  }
}

// The rowwise MX fp4 encoder of bf16 takes the input words' magnitude bits (bf16x2_exact_pair):
// its amax reuses them (integer max of the 16-bit halves, three words per instruction) instead
// of computing max_abs_16x2 beside them.
template <class In, class Fmt>
constexpr bool kRowMagnitudesShared = std::is_same<In, Bf16In>::value && Fmt::Elem::bits == 4 && !Fmt::nv;

// Partial amax of one 16-byte chunk. 16-bit inputs: each half's largest magnitude, sign bits
// noise (max_abs_16x2 of its words); fp32: the largest abs_bits. Partials of one block combine
// with combine_amax and end as the numerics core's amax bits through finish_amax.
template <class In, class Fmt>
__device__ __forceinline__ uint32_t chunk_amax(const uint4& raw) {
  using Raw = typename In::Raw;
  if constexpr (kRowMagnitudesShared<In, Fmt>) {
    return __vmaxu2(__vmaxu2(magnitude_bits_16x2(raw.x), magnitude_bits_16x2(raw.y)),
                    __vmaxu2(magnitude_bits_16x2(raw.z), magnitude_bits_16x2(raw.w)));
  } else if constexpr (sizeof(Raw) == 2) {
    return max_abs_16x2<In>(max_abs_16x2<In>(raw.x, raw.y), max_abs_16x2<In>(raw.z, raw.w));
  } else {
    constexpr int kVec = sizeof(raw) / sizeof(Raw);
    Raw v[kVec];
    memcpy(v, &raw, sizeof(v));
    uint32_t amax = 0;
#pragma unroll
    for (int j = 0; j < kVec; ++j) amax = max(amax, num::abs_bits(In::to_float(v[j])));
    return amax;
  }
}
template <class In>
__device__ __forceinline__ uint32_t combine_amax(uint32_t a, uint32_t b) {
  if constexpr (sizeof(typename In::Raw) == 2) {
    return max_abs_16x2<In>(a, b);
  } else {
    return max(a, b);
  }
}
template <class In>
__device__ __forceinline__ uint32_t finish_amax(uint32_t partial) {
  using Raw = typename In::Raw;
  if constexpr (sizeof(Raw) == 2) {
    const uint32_t both = magnitude_bits_16x2(max_abs_16x2<In>(partial, partial >> 16));  // low half: the larger
    return num::abs_bits(In::to_float(static_cast<Raw>(both)));
  } else {
    return partial;
  }
}

// The L lanes of a rowwise block (L consecutive lanes) each hold their chunk's partial amax of L
// passes; afterwards lane l holds its block's partial amax of pass l % L: a reduce-scatter,
// log2(L) rounds of halving, so each block's scale is then computed once, by one lane, instead of
// by every lane of the block in every pass.
template <class In, int L>
__device__ __forceinline__ uint32_t reduce_scatter_amax(uint32_t (&part)[L], int lane) {
#pragma unroll
  for (int s = L / 2; s >= 1; s /= 2) {
    const bool upper = (lane & s) != 0;  // keeps passes with this bit set, gives the others away
#pragma unroll
    for (int j = 0; j < s; ++j) {
      const uint32_t keep = upper ? part[j + s] : part[j];
      const uint32_t give = upper ? part[j] : part[j + s];
      part[j] = combine_amax<In>(keep, __shfl_xor_sync(0xFFFFFFFFu, give, s));
    }
  }
  return part[0];
}

// One load's rowwise codes at dst: a vector store when `vec`, else the first `bytes` bytes one by
// one (edge tiles).
template <class T>
__device__ __forceinline__ void store_row_codes(uint8_t* dst, uint64_t codes, bool vec, int bytes) {
  if (vec) {
    store_vec<T::row_bytes_per_chunk>(dst, codes);
  } else {
    for (int j = 0; j < bytes; ++j) dst[j] = static_cast<uint8_t>(codes >> (8 * j));
  }
}

// Where a thread's rowwise codes go in a tile of consecutive output rows: pass i at base + i *
// pass_bytes, only for i * rows_per_pass < rows_left (every pass when all_rows).
struct RowOut {
  uint8_t* base;
  int64_t pass_bytes;
  bool vec, all_rows;
  int rows_left, bytes;
  template <class T>
  __device__ __forceinline__ void store(int i, uint64_t codes) const {
    uint8_t* dst = base + i * pass_bytes;
    if (vec && all_rows) {
      store_vec<T::row_bytes_per_chunk>(dst, codes);
    } else if (i * T::rows_per_pass < rows_left) {
      store_row_codes<T>(dst, codes, vec, bytes);
    }
  }
};

// Where a lane's scale bytes go in the staged rowwise scale tile: its block in pass group
// `first` lies in tile row `row` + first * rows_per_pass (first_row). A group moves that row by
// whole 32-row bands of the blocked tile, 4 bytes each, so the byte is at[first_row / 8], a
// constant offset. Scales of tile rows past row_rows, and of scale columns past the tensor's
// (col_real false), are the blocked padding: 0.
struct RowScaleSlot {
  uint8_t* at;
  int row;
  bool col_real;
  __device__ __forceinline__ void put(int first_row, int row_rows, uint32_t sb) const {
    at[first_row / 8] = col_real && row + first_row < row_rows ? sb : 0;
  }
};

// Rowwise codes of passes first .. first + L - 1 (L = lanes per block) of this thread's chunk;
// chunk_at(i) gives the raw 16 bytes of pass i (tile row row0 + i * T::rows_per_pass), and
// out.store<T>(i, codes) writes its codes. Every lane of the warp calls it. Lane l computes
// the scale of its block in pass first + l % L, stores its byte at its `slot` and hands the
// multiplier to the block's lanes by a shuffle per pass (poison flags by one ballot).
template <class In, class Fmt, class ChunkAt, class Out>
__device__ __forceinline__ void quantize_row_passes(const BlockScaler<Fmt>& scaler, ChunkAt chunk_at, int first,
                                                    const Out& out, const RowScaleSlot& slot, int row_rows) {
  using T = TileTraits<In, Fmt>;
  constexpr int L = T::lanes_per_block;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  uint32_t part[L];
#pragma unroll
  for (int q = 0; q < L; ++q) part[q] = chunk_amax<In, Fmt>(chunk_at(first + q));
  const uint32_t amax = finish_amax<In>(reduce_scatter_amax<In, L>(part, lane));
  const uint32_t sb = scaler.scale(amax);
  slot.put(first * T::rows_per_pass, row_rows, sb);
  const bool poisoned = num::is_nonfinite_abs_bits(amax);
  const float mult = scaler.multiplier(sb, poisoned);
  // Bit q: the block of this lane's chunk is poisoned in pass first + q.
  const uint32_t poisoned_passes = __ballot_sync(0xFFFFFFFFu, poisoned) >> (lane & ~(L - 1));
#pragma unroll
  for (int q = 0; q < L; ++q) {
    const int i = first + q;
    float x[T::vec];
    chunk_to_float<In>(chunk_at(i), x);
    const float block_mult = __shfl_sync(0xFFFFFFFFu, mult, q, L);
    const uint64_t codes = encode_codes<Fmt, T::vec>(x, block_mult, ((poisoned_passes >> q) & 1u) != 0);
    out.template store<T>(i, codes);
  }
}

// All rowwise passes of this thread's chunk, L at a time.
template <class In, class Fmt, class ChunkAt, class Out>
__device__ __forceinline__ void quantize_rows(const Problem& p, const TileCoord& c, const BlockScaler<Fmt>& scaler,
                                              ChunkAt chunk_at, int row0, int chunk, const Out& out,
                                              uint8_t* row_scale_tile) {
  using T = TileTraits<In, Fmt>;
  constexpr int L = T::lanes_per_block;
  static_assert(T::passes % L == 0, "passes come in groups of lanes_per_block");
  static_assert((L * T::rows_per_pass) % 32 == 0, "a group of passes spans whole 32-row bands (RowScaleSlot)");
  RowScaleSlot slot;
  slot.row = row0 + (chunk % L) * T::rows_per_pass;
  slot.at = row_scale_tile + staged_scale_offset(slot.row, chunk / L);
  slot.col_real = c.k0 / T::block + chunk / L < p.row_scale_cols;
#pragma unroll
  for (int first = 0; first < T::passes; first += L) {
    quantize_row_passes<In, Fmt>(scaler, chunk_at, first, out, slot, c.row_rows);
  }
}

// Bytes of this thread's rowwise codes in a row (edge tiles: fewer than a load's).
template <class T>
__device__ __forceinline__ int row_chunk_bytes(const Problem& p, const TileCoord& c, int chunk) {
  return static_cast<int>(min(code_bytes<T>(p.K - c.k0 - chunk * T::vec), int64_t{T::row_bytes_per_chunk}));
}

// This thread's rowwise outputs in a tile whose rows go to consecutive output rows from c.row_m0.
template <class T>
__device__ __forceinline__ RowOut tile_row_out(const Problem& p, const TileCoord& c, int row0, int chunk) {
  RowOut out;
  out.base = p.row_data + c.b * code_bytes<T>(p.M * p.K) + code_bytes<T>((c.row_m0 + row0) * p.K + c.k0 + chunk * T::vec);
  out.pass_bytes = code_bytes<T>(T::rows_per_pass * p.K);
  out.vec = c.k_full && p.vec_row_out;
  out.all_rows = c.row_rows == kTileRows;
  out.rows_left = c.row_rows - row0;
  out.bytes = row_chunk_bytes<T>(p, c, chunk);
  return out;
}

// Byte offset of byte `byte` of row `row` in the staged colwise output tile (ColOut rows of
// row_bytes). 16-byte chunks are XOR-swizzled by row >> 1 so that the colwise threads (lane p
// writes row 2p or 2p + 1) and the row-by-row readers are both free of bank conflicts.
template <class T>
__device__ __forceinline__ int col_out_offset(int row, int byte) {
  constexpr int kChunks = T::col_out_row_bytes / 16;
  return row * T::col_out_row_bytes + (((byte / 16) ^ ((row >> 1) % kChunks)) * 16) + byte % 16;
}

// Colwise codes of the staged tile into the staged output tile. Thread tid owns column pair
// tid % 64 (columns 2p, 2p + 1) of T::col_blocks / 4 consecutive blocks along M; lanes of a warp
// read consecutive pairs of one row.
template <class In, class Fmt>
__device__ __forceinline__ void quantize_col_pairs(const Problem& p, const TileCoord& c, const BlockScaler<Fmt>& scaler,
                                                   const uint4* staged_tile, int tid, uint8_t* out_tile,
                                                   uint8_t* col_scale_tile) {
  using T = TileTraits<In, Fmt>;
  using Raw = typename T::Raw;
  using Pair = typename PairOf<Raw>::type;
  constexpr int kPairs = kTileCols / 2;
  static_assert(kThreads % kPairs == 0 && (kPairs * T::col_blocks) % kThreads == 0,
                "every thread owns whole blocks of one column pair");
  constexpr int kBlocksPerThread = kPairs * T::col_blocks / kThreads;
  constexpr int kWordsPerStore = T::block_words % 2 == 0 ? 2 : 1;  // 16-byte shared stores if it can
  const int pair = tid % kPairs;
  const Pair* staged = reinterpret_cast<const Pair*>(staged_tile) + pair;
#pragma unroll
  for (int jb = 0; jb < kBlocksPerThread; ++jb) {
    const int mb_local = (tid / kPairs) * kBlocksPerThread + jb;
    const Pair* rows = staged + mb_local * T::block * kPairs;
    // Two passes over shared memory (amax, then codes) instead of holding the block in registers:
    // fewer registers per thread, more CTAs per SM.
    uint32_t amax[2] = {0, 0};
    if constexpr (sizeof(Raw) == 2) {
      uint32_t largest = 0;  // both columns' largest magnitudes, one per 16-bit half
#pragma unroll
      for (int i = 0; i < T::block; ++i) largest = max_abs_16x2<In>(largest, rows[i * kPairs]);
      const uint32_t magnitudes = magnitude_bits_16x2(largest);
      amax[0] = num::abs_bits(In::to_float(static_cast<Raw>(magnitudes & 0xFFFFu)));
      amax[1] = num::abs_bits(In::to_float(static_cast<Raw>(magnitudes >> 16)));
    } else {
#pragma unroll
      for (int i = 0; i < T::block; ++i) {
        const Pair w = rows[i * kPairs];
        amax[0] = max(amax[0], num::abs_bits(In::to_float(pair_half<Raw>(w, 0))));
        amax[1] = max(amax[1], num::abs_bits(In::to_float(pair_half<Raw>(w, 1))));
      }
    }
    uint32_t sb[2];
    bool poisoned[2];
    float mult[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      sb[h] = scaler.scale(amax[h]);
      poisoned[h] = num::is_nonfinite_abs_bits(amax[h]);
      mult[h] = scaler.multiplier(sb[h], poisoned[h]);
      const int kl = 2 * pair + h;
      col_scale_tile[staged_scale_offset(kl, mb_local)] = c.k0 + kl < p.K && mb_local * T::block < c.col_rows ? sb[h] : 0;
    }
#pragma unroll
    for (int q = 0; q < T::block_words; q += kWordsPerStore) {
      constexpr int kRows = kWordsPerStore * T::codes_per_word;
      // MX fp4 of bf16: each column's elements of two rows as one bf16 pair (one byte permute),
      // which the encoder takes as it is; else the elements widened to fp32.
      constexpr bool kBf16Pairs = std::is_same<In, Bf16In>::value && Fmt::Elem::bits == 4 && !Fmt::nv;
      float x[2][kBf16Pairs ? 1 : kRows];
      uint32_t pairs[2][kBf16Pairs ? kRows / 2 : 1];
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        const Pair w = rows[(q * T::codes_per_word + i) * kPairs];
        if constexpr (kBf16Pairs) {
          if (i % 2 == 1) {
            const uint32_t above = rows[(q * T::codes_per_word + i - 1) * kPairs];
            pairs[0][i / 2] = byte_perm(above, w, 0x5410);
            pairs[1][i / 2] = byte_perm(above, w, 0x7632);
          }
        } else {
          x[0][i] = In::to_float(pair_half<Raw>(w, 0));
          x[1][i] = In::to_float(pair_half<Raw>(w, 1));
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint64_t words[kWordsPerStore];
#pragma unroll
        for (int j = 0; j < kWordsPerStore; ++j) {
          if constexpr (kBf16Pairs) {
            words[j] = encode_codes_mxfp4_bf16x2<Fmt, T::codes_per_word>(pairs[h] + j * T::codes_per_word / 2, mult[h],
                                                                         poisoned[h]);
          } else {
            words[j] = encode_codes<Fmt, T::codes_per_word>(x[h] + j * T::codes_per_word, mult[h], poisoned[h]);
          }
        }
        uint8_t* dst = out_tile + col_out_offset<T>(2 * pair + h, mb_local * T::block_bytes + q * 8);
        if constexpr (kWordsPerStore == 2) {
          *reinterpret_cast<uint4*>(dst) = make_uint4(static_cast<uint32_t>(words[0]), static_cast<uint32_t>(words[0] >> 32),
                                                      static_cast<uint32_t>(words[1]), static_cast<uint32_t>(words[1] >> 32));
        } else {
          *reinterpret_cast<uint2*>(dst) = make_uint2(static_cast<uint32_t>(words[0]), static_cast<uint32_t>(words[0] >> 32));
        }
      }
    }
  }
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
  // This thread's 16 bytes of each row lie inside the tile's rows (always, for full tiles).
  const bool whole = p.vec_col_out && col_byte0 % 16 == 0 && chunk * 16 + 16 <= row_bytes;
#pragma unroll
  for (int step = 0; step < kTileCols / kRowsPerStep; ++step, dst += step_bytes) {
    const int row = row0 + step * kRowsPerStep;
    const uint4 v = *reinterpret_cast<const uint4*>(out_tile + col_out_offset<T>(row, chunk * 16));
    if (whole && (c.k_full || c.k0 + row < p.K)) {
      *reinterpret_cast<uint4*>(dst) = v;
    } else if (c.k0 + row < p.K) {
      uint8_t b[16];
      memcpy(b, &v, sizeof(v));
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        if (chunk * 16 + j < row_bytes) dst[j] = b[j];
      }
    }
  }
}

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
      store_scale_row_linear<T::scale_tiles>(p.row_scales + c.b * p.row_scale_batch, p.row_scale_cols,
                                             p.row_scale_cols, c.row_m0 + tid, c.tk * T::scale_cols,
                                             row_scale_tile, tid);
    }
    const int r = tid - (kThreads - kTileCols);
    if (COL && r >= 0 && c.k0 + r < p.K) {
      store_scale_row_linear<T::scale_tiles>(p.col_scales + c.col_scale_at, p.col_scale_cols, c.col_scale_end,
                                             c.k0 + r, c.col_scale_c0, col_scale_tile, r);
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

// Dynamic shared memory of a tile for the directions served.
template <class T, bool COL>
constexpr size_t tile_dynamic_smem() {
  return COL ? static_cast<size_t>(T::staged_tile_bytes + T::col_out_tile_bytes) : 0;
}

// One tile: every thread of the CTA calls it. The caller synchronises the CTA before reusing the
// shared memory for another tile. kFetch256: stage_tile's L2 prefetch hint.
template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule, bool kFetch256 = false>
__device__ __forceinline__ void quantize_tile(const Problem& p, const TileCoord& c, uint4* staged_tile,
                                              TileScales<TileTraits<In, Fmt>>& scales) {
  using T = TileTraits<In, Fmt>;
  uint8_t* row_scale_tile = scales.row;
  uint8_t* col_scale_tile = scales.col;
  const BlockScaler<Fmt> scaler = batch_scaler<Fmt, kRule>(p, c.b);
  const int tid = threadIdx.x;
  const int chunk = tid % T::chunks_per_row;
  const int row0 = tid / T::chunks_per_row;

  if constexpr (COL) {
    stage_tile<T, true, kFetch256>(p, c, chunk, row0, staged_tile);
    __syncthreads();
    if constexpr (ROW) {
      const auto staged_chunk = [&](int i) {
        return staged_tile[(row0 + i * T::rows_per_pass) * T::chunks_per_row + chunk];
      };
      quantize_rows<In, Fmt>(p, c, scaler, staged_chunk, row0, chunk, tile_row_out<T>(p, c, row0, chunk),
                             row_scale_tile);
    }
    uint8_t* out_tile = reinterpret_cast<uint8_t*>(staged_tile) + T::staged_tile_bytes;
    quantize_col_pairs<In, Fmt>(p, c, scaler, staged_tile, tid, out_tile, col_scale_tile);
    __syncthreads();  // the staged output and both scale tiles are complete
    store_col_tile<T>(p, c, out_tile, tid);
  } else {
    uint4 regs[T::passes];
    load_tile_regs<T>(p, c, chunk, row0, regs);
    const auto reg_chunk = [&](int i) { return regs[i]; };
    quantize_rows<In, Fmt>(p, c, scaler, reg_chunk, row0, chunk, tile_row_out<T>(p, c, row0, chunk), row_scale_tile);
    __syncthreads();
  }
  store_tile_scales<T, ROW, COL>(p, c, row_scale_tile, col_scale_tile, tid);
}

template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule>
__global__ void __launch_bounds__(kThreads, (min_ctas<TileTraits<In, Fmt>, COL>()))
quantize_tile_kernel(const Problem p) {
  using T = TileTraits<In, Fmt>;
  extern __shared__ uint4 staged_tile[];
  __shared__ TileScales<T> scales;
  quantize_tile<In, Fmt, ROW, COL, kRule>(p, dense_tile_coord<T, COL && !ROW>(p, blockIdx.x), staged_tile, scales);
}

}  // namespace mxq::cuda::quant
