// Rowwise quantization of a tile: the block amax across the lanes that share a block, one scale
// per block computed by one lane, the codes of each 16-byte chunk and where they go.
#pragma once
#include <cstdint>
#include <type_traits>

#include "cuda/quantize/tile_io.cuh"

namespace mxq::cuda::kernels::quantize {

// The rowwise MX fp4 encoder of bf16 takes the input words' magnitude bits (bf16x2_exact_pair):
// its amax reuses them (integer max of the 16-bit halves, three words per instruction) instead
// of computing max_abs_16x2 beside them.
template <class In, class Fmt>
constexpr bool kRowMagnitudesShared = std::is_same<typename In::Plain, Bf16In>::value&& Fmt::Elem::bits == 4 && !Fmt::nv;

// fp16 -> MX fp4 rowwise codes from the chunk's words (encode_codes_mxfp4_pairs). bf16 keeps the
// fp32 widenings, which the compiler sees through (round_to_odd_bf16x2<true> of shifted words).
template <class In, class Fmt>
constexpr bool kRowFp16Pairs = std::is_same<typename In::Plain, Fp16In>::value&& kMxfp4Pairs<In, Fmt>;

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
    // Rolled: this edge-tile path sits after every pass, and unrolled it spread the passes' hot
    // code (the rows kernel waited for instructions in a quarter of its stalls, cold).
#pragma unroll 1
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
// multiplier to the block's lanes by a shuffle per pass (poison flags by one ballot). Returns the
// amax bits of the block whose scale this lane computed.
template <class In, class Fmt, class ChunkAt, class Out>
__device__ __forceinline__ uint32_t quantize_row_passes(const BlockScaler<Fmt>& scaler, ChunkAt chunk_at, int first,
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
    const float block_mult = __shfl_sync(0xFFFFFFFFu, mult, q, L);
    const bool block_poisoned = ((poisoned_passes >> q) & 1u) != 0;
    uint64_t codes;
    if constexpr (kRowFp16Pairs<In, Fmt>) {
      const uint4 raw = chunk_at(i);
      const uint32_t pairs[4] = {raw.x, raw.y, raw.z, raw.w};
      codes = encode_codes_mxfp4_pairs<In, Fmt, T::vec>(pairs, block_mult, block_poisoned);
    } else {
      float x[T::vec];
      chunk_to_float<In>(chunk_at(i), x);
      codes = encode_codes<Fmt, T::vec>(x, block_mult, block_poisoned);
    }
    out.template store<T>(i, codes);
  }
  return amax;
}

// Called before each group of L passes with the group's index (nothing by default).
struct NoGroupWait {
  __device__ void operator()(int) const {}
};

// A tile staged for quantize_rows as one cp.async commit group per group of passes it handles
// together (stage_tile's kCommits): kRowPassGroups groups, and the wait before group g for this
// thread's own copies of it. A thread's rowwise passes read only the chunks it copied, so no
// barrier is needed between the wait and the pass.
template <class T>
constexpr int kRowPassGroups = T::passes / T::lanes_per_block;
template <class T>
struct WaitForPassGroup {
  __device__ void operator()(int g) const { cp_async_wait_pending(kRowPassGroups<T> - 1 - g); }
};

// All rowwise passes of this thread's chunk, L at a time; before_group(g) runs before group g.
// Returns the largest amax bits of the blocks whose scales this thread computed: over the warp,
// every block of its rows once (the tile amax, without another look at the elements).
// kSkipPastRows: groups of passes wholly past c.row_rows only write their zero scales
// (TileOptions::skip_past_rows). Not for the register path: there the branch made the plain
// fp16 -> mxfp8 rowwise kernel spill.
template <class In, class Fmt, bool kSkipPastRows = false, class ChunkAt, class Out, class BeforeGroup = NoGroupWait>
__device__ __forceinline__ uint32_t quantize_rows(const Problem& p, const TileCoord& c, const BlockScaler<Fmt>& scaler,
                                                  ChunkAt chunk_at, int row0, int chunk, const Out& out,
                                                  uint8_t* row_scale_tile, BeforeGroup before_group = {}) {
  using T = TileTraits<In, Fmt>;
  constexpr int L = T::lanes_per_block;
  static_assert(T::passes % L == 0, "passes come in groups of lanes_per_block");
  static_assert((L * T::rows_per_pass) % 32 == 0, "a group of passes spans whole 32-row bands (RowScaleSlot)");
  RowScaleSlot slot;
  slot.row = row0 + (chunk % L) * T::rows_per_pass;
  slot.at = row_scale_tile + staged_scale_offset(slot.row, chunk / L);
  slot.col_real = c.k0 / T::block + chunk / L < p.row_scale_cols;
  uint32_t amax = 0;
#pragma unroll
  for (int first = 0; first < T::passes; first += L) {
    before_group(first / L);
    if (kSkipPastRows && first * T::rows_per_pass >= c.row_rows) {
      // Every row of the group lies past the tile's rows (a partial tile): only its zero scales.
      slot.put(first * T::rows_per_pass, c.row_rows, 0);
      continue;
    }
    amax = max(amax, quantize_row_passes<In, Fmt>(scaler, chunk_at, first, out, slot, c.row_rows));
  }
  return amax;
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
  out.base =
      p.row_data + c.b * code_bytes<T>(p.M * p.K) + code_bytes<T>((c.row_m0 + row0) * p.K + c.k0 + chunk * T::vec);
  out.pass_bytes = code_bytes<T>(T::rows_per_pass * p.K);
  out.vec = c.k_full && p.vec_row_out;
  out.all_rows = c.row_rows == kTileRows;
  out.rows_left = c.row_rows - row0;
  out.bytes = row_chunk_bytes<T>(p, c, chunk);
  return out;
}

}  // namespace mxq::cuda::kernels::quantize
