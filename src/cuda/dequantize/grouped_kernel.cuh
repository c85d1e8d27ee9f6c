// Dequantize with token groups (docs/layouts.md): each CTA owns a strip of positions along M (the
// data rows rowwise, the code columns colwise) and finds, from the device-side ends
// (groups/group_scan.cuh: no host read, any G), the group of each position, its place inside the
// group and where the group's scales start. Positions that belong to no group (past the last end,
// or past the last padded end) come out as 0.
//
// Two kernels convert the strip, several CTAs sharing it (column tiles dealt round robin):
// - the vector kernel (kernel.cuh's octets, eight per thread, 16-byte stores): 64-row strips
//   rowwise; 128-position strips colwise, where an octet of eight positions must not straddle two
//   groups: groups padded to a multiple of 8 never do; otherwise (unpadded groups along K, padding
//   to 1, 2 or 4) a second instantiation converts element by element the strips where one would.
// - the per-element kernel, 32 x 32 elements at a time (colwise through shared memory), for
//   everything else (rows that are not whole octets, colwise R not a multiple of 8, unaligned
//   pointers).
#pragma once
#include <cstdint>

#include <mxq/numerics.hpp>

#include "cuda/groups/group_scan.cuh"
#include "cuda/dequantize/kernel.cuh"

namespace mxq::cuda::kernels::dequantize {

constexpr int kGroupedThreads = kTile * kRowsPerPass;
static_assert(kGroupedThreads == kVectorThreads, "both grouped kernels share the walk's storage");

struct GroupedProblem {
  const uint8_t* data = nullptr;
  const uint8_t* scales = nullptr;
  void* out = nullptr;
  const int32_t* ends = nullptr;  // raw device ends [G]
  int64_t G = 0;
  int64_t M = 0;  // input rows: the ends are clamped to [previous end, M]
  int64_t R = 0;  // data rows of the direction = output rows (padded bound when it pads)
  int64_t K = 0;
  int64_t pad = 0;  // alignment of the direction, 0 when it does not pad
  bool blocked = true;
  int64_t k_blocks = 0;  // rowwise: scale columns ceil(K/b)
  int64_t pitch = 0;     // colwise linear: scale columns L = ceil(R/b) + G
  int64_t tiles_k = 0;
  const float* s_dec = nullptr;  // nvfp4: [1] (token groups are 2-D)
};

// What one walk over the groups sums for each group of n input rows, packed into one int64: its
// data rows (padded when the direction pads) in the high 32 bits and, in the low 32 bits, the
// scale units it occupies before the next group's scales: rowwise blocked Rp(rows) scale rows;
// colwise ceil(rows/b) linear or Cp(ceil(rows/b)) blocked columns (rowwise linear scales follow
// the data rows and need none). Neither sum carries into the other: the API bounds the padded
// rows by 2^31 - 1, and the scale units exceed the rows by at most 127 per group (at most 2^20
// groups), so both stay below 2^32.
template <class Fmt, bool COLWISE>
struct RowsAndScaleUnits {
  int64_t pad;
  bool blocked;
  __device__ int64_t operator()(int64_t n) const {
    const int64_t rows = pad > 0 ? num::round_up(n, pad) : n;
    int64_t units = 0;
    if (COLWISE) {
      units = blocked ? num::group_k_scale_cols(rows, Fmt::block) : num::ceil_div(rows, Fmt::block);
    } else if (blocked) {
      units = num::group_m_scale_rows(rows);
    }
    return (rows << 32) | units;
  }
};
__device__ __forceinline__ int64_t rows_part(int64_t packed) { return packed >> 32; }
__device__ __forceinline__ int64_t units_part(int64_t packed) { return packed & 0xFFFFFFFF; }

// Where the scale bytes of a strip position lie, as two parts that add up to the byte offset
// (blocked_offset is a sum of a row part and a column part): `base` depends on the position only
// (-1: no group), the rest on the code column (rowwise) or the code row (colwise).
//   rowwise: base = the data row's part (scale row scale_base + local blocked, m linear); add
//            scale_column_part of the element's scale column.
//   colwise: base = the group's matrix plus the position's scale column; add colwise_row_part of
//            the code row k, which needs the group's 4-column groups: `k_step` bytes per 128 k
//            rows (blocked) or the linear pitch.
struct ScalePlace {
  int64_t base;
  int64_t k_step;
};

// The place of position m, row `local` of its group, whose scales start at unit scale_base and
// take scale_units units.
template <class Fmt, bool COLWISE>
__device__ __forceinline__ ScalePlace scale_place(const GroupedProblem& p, int64_t m, int64_t local, int64_t scale_base,
                                                  int64_t scale_units) {
  if constexpr (!COLWISE) {
    const int64_t nc = num::blocked_cols(p.k_blocks) / 4;
    return {p.blocked ? num::blocked_offset(scale_base + local, 0, nc) : m * p.k_blocks, 0};
  } else {
    const int64_t c = local / Fmt::block;
    if (!p.blocked) return {scale_base + c, p.pitch};
    const int64_t nc = scale_units / 4;
    return {scale_base * num::blocked_rows(p.K) + num::blocked_offset(0, c, nc), nc * 512};
  }
}

__device__ __forceinline__ int64_t scale_column_part(bool blocked, int64_t c) {
  return blocked ? num::blocked_offset(0, c, 0) : c;
}
__device__ __forceinline__ int64_t colwise_row_part(bool blocked, int64_t k, int64_t k_step) {
  return blocked ? (k / 128) * k_step + (k % 32) * 16 + ((k % 128) / 32) * 4 : k * k_step;
}

// place[i] for the positions m0 + i of the strip, from one walk over the groups (thread i finds
// position i's group by its data span). Every thread must call it; place is complete on return.
// Returns (the same on every thread) whether a group of the strip starts or ends off a multiple
// of 8 data rows, so that an octet of positions may straddle two groups.
template <class Fmt, bool COLWISE, int Strip>
__device__ bool find_strip_places(const GroupedProblem& p, int64_t m0, ScalePlace (&place)[Strip],
                                  groups::GroupChunkStorage<kGroupedThreads>& s) {
  static_assert(Strip <= kGroupedThreads, "a thread per position");
  const int t = threadIdx.x;
  const int64_t m = m0 + t, m_last = min(m0 + Strip, p.R) - 1;
  ScalePlace mine = {-1, 0};
  bool off_octets = false;
  auto find = [&](const groups::GroupChunk<kGroupedThreads>& c) {
    if (t < Strip && m <= m_last && m >= rows_part(c.chunk_padded_begin()) && m < rows_part(c.chunk_padded_end())) {
      // The first group whose data rows end past m: packed ends above m's last packed value.
      const int j = c.find_by_padded_end((m << 32) | 0xFFFFFFFF);
      const int64_t begin = c.padded_begin_of(j), end = c.padded_end_of(j);
      const int64_t units = units_part(end) - units_part(begin);
      mine = scale_place<Fmt, COLWISE>(p, m, m - rows_part(begin), units_part(begin), units);
      off_octets = (rows_part(begin) | rows_part(end)) % 8 != 0;
    }
    return rows_part(c.chunk_padded_end()) <= m_last;
  };
  int64_t end = 0, packed_end = 0;
  groups::for_each_group_chunk<kGroupedThreads, 1>(p.ends, p.G, p.M, RowsAndScaleUnits<Fmt, COLWISE>{p.pad, p.blocked},
                                                   s, find, &end, &packed_end);
  if (t < Strip) place[t] = mine;
  return __syncthreads_or(off_octets);
}

// ---- per-element kernel ---------------------------------------------------------------------------

// Element (m, k) of the output at position m = m0 + i of the strip (`place`: the position's scale
// place): 0 where the position has no group.
template <class Fmt, bool COLWISE>
__device__ __forceinline__ float grouped_element(const GroupedProblem& p, const ScalePlace& place, int64_t m, int64_t k,
                                                 float s_dec) {
  if (place.base < 0) return 0.0f;
  const int64_t code_index = COLWISE ? k * p.R + m : m * p.K + k;
  const int64_t scale = place.base + (COLWISE ? colwise_row_part(p.blocked, k, place.k_step)
                                              : scale_column_part(p.blocked, k / Fmt::block));
  return num::dequantize_element<Fmt>(code_at<Fmt>(p.data, code_index), p.scales[scale], s_dec);
}

template <class Fmt, class Out, bool COLWISE>
__global__ void __launch_bounds__(kGroupedThreads) dequantize_grouped_kernel(const GroupedProblem p) {
  __shared__ groups::GroupChunkStorage<kGroupedThreads> s;
  __shared__ ScalePlace place[kTile];
  __shared__ float tile[kTile][kTile + 1];
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTile;
  find_strip_places<Fmt, COLWISE, kTile>(p, m0, place, s);
  const float s_dec = Fmt::nv ? p.s_dec[0] : 1.0f;
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (int64_t kt = blockIdx.y; kt < p.tiles_k; kt += gridDim.y) {
    const int64_t k0 = kt * kTile;
    if constexpr (!COLWISE) {
      for (int i = ty; i < kTile; i += kRowsPerPass) {
        const int64_t m = m0 + i, k = k0 + tx;
        if (m < p.R && k < p.K) {
          Out::store(p.out, m * p.K + k, grouped_element<Fmt, false>(p, place[i], m, k, s_dec));
        }
      }
    } else {
      for (int i = ty; i < kTile; i += kRowsPerPass) {  // read along m (contiguous in the codes)
        const int64_t k = k0 + i, m = m0 + tx;
        if (m < p.R && k < p.K) tile[i][tx] = grouped_element<Fmt, true>(p, place[tx], m, k, s_dec);
      }
      __syncthreads();
      for (int i = ty; i < kTile; i += kRowsPerPass) {  // write along k (contiguous in the output)
        const int64_t m = m0 + i, k = k0 + tx;
        if (m < p.R && k < p.K) Out::store(p.out, m * p.K + k, tile[tx][i]);
      }
      __syncthreads();  // the next column tile overwrites tile
    }
  }
}

// ---- vector kernel --------------------------------------------------------------------------------

// A scale byte that takes the fast path in every format, for octets of no group (zero codes,
// whose values are then replaced by 0 whatever s_dec is).
constexpr uint32_t kNeutralScale = 0x38;  // E8M0 2^-71, UE4M3 1.0

// Colwise, a strip where an octet of positions would straddle two groups (groups along K padded
// to 1, 2 or 4, or unpadded and not multiples of 8, outside docs/spec.md's multiple-of-32 rule):
// element by element, coalesced along k, for equality with the cpu backend rather than speed. Not
// inlined: it adds no registers to the octet path of its kernel.
template <class Fmt, class Out, int Strip, int TileK>
__device__ __noinline__ void colwise_strip_by_element(const GroupedProblem& p, int64_t m0,
                                                      const ScalePlace (&place)[Strip], float s_dec) {
  for (int64_t kt = blockIdx.y; kt < p.tiles_k; kt += gridDim.y) {
    for (int e = threadIdx.x; e < Strip * TileK; e += blockDim.x) {
      const int i = e / TileK;
      const int64_t m = m0 + i, k = kt * TileK + e % TileK;
      if (m < p.R && k < p.K) Out::store(p.out, m * p.K + k, grouped_element<Fmt, true>(p, place[i], m, k, s_dec));
    }
  }
}

// The vector kernel's tile (VectorTile) over the strip: rowwise T::rows data rows by T::cols code
// columns per column tile, colwise T::cols positions (code columns) by T::rows code rows per tile.
// grid.x: strips, grid.y: CTAs per strip, each taking every gridDim.y-th tile along K. Needs K a
// multiple of 8, aligned octets and outputs, and colwise R a multiple of 8 and, unless
// kMayStraddle, groups that start and end on multiples of 8 (with kMayStraddle, the strips where
// an octet of positions would straddle two groups take colwise_strip_by_element: a separate
// instantiation, because the fallback cost the octet path 11-25 % in spilled registers).
// Launch bounds: tuning.hpp (grouped_vector_ctas_per_sm).
template <class Fmt, class Out, bool COLWISE, bool kMayStraddle = false>
constexpr int grouped_vector_min_ctas() {
  return grouped_vector_ctas_per_sm(COLWISE, Fmt::elem_bits, Out::kBytes, kMayStraddle);
}

template <class Fmt, class Out, bool COLWISE, bool kMayStraddle = false>
__global__ void __launch_bounds__(kVectorThreads, (grouped_vector_min_ctas<Fmt, Out, COLWISE, kMayStraddle>()))
    dequantize_grouped_vector_kernel(const GroupedProblem p) {
  using T = VectorTile<Fmt, COLWISE>;
  constexpr int kStrip = COLWISE ? T::cols : T::rows;
  __shared__ groups::GroupChunkStorage<kGroupedThreads> s;
  __shared__ ScalePlace place[kStrip];
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kStrip;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int r_in_tile = ((warp / T::warps_c) * T::lanes_r + lane / T::lanes_c) * 8;
  const int c_in_tile = ((warp % T::warps_c) * T::lanes_c + lane % T::lanes_c) * 8;
  // The thread's positions along M: rows m0 + r_in_tile + j rowwise, m0 + c_in_tile + (0..7) colwise.
  const int i0 = COLWISE ? c_in_tile : r_in_tile;
  const int64_t m_first = m0 + i0;
  const int rows_here = COLWISE ? 8 : static_cast<int>(max(int64_t{0}, min(int64_t{8}, p.R - m_first)));
  // Code rows: data rows m rowwise, k colwise; codes per row: K rowwise, R colwise.
  const int64_t row_bytes = (COLWISE ? p.R : p.K) * Fmt::elem_bits / 8;
  // The first code row and column of the thread's octets in tile kt along K (rowwise: rows
  // m_first + j at code column k0; colwise: code rows k0 + j at code column m_first).
  const auto first_k = [&](int64_t kt) {
    return kt * (COLWISE ? T::rows : T::cols) + (COLWISE ? r_in_tile : c_in_tile);
  };
  const auto load_octets = [&](int64_t k0, Octet<Fmt>(&o)[8]) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t code_row = COLWISE ? k0 + j : m_first + j, code_col = COLWISE ? m_first : k0;
      o[j] =
          j < rows_here ? load_octet<Fmt>(p.data + code_row * row_bytes + code_col * Fmt::elem_bits / 8) : Octet<Fmt>{};
    }
  };
  // Rowwise, the first tile's codes are on their way while the CTA walks the groups (rows of no
  // group are still inside the data: their codes are loaded and dropped). Colwise, the octets
  // held across the walk cost the third CTA per SM. (Loading each tile's codes while the one
  // before is converted cost a CTA per SM and was slower.)
  constexpr bool kEarly = !COLWISE;
  const bool here = m_first < p.R;
  Octet<Fmt> o[8];
  if (kEarly && here && first_k(blockIdx.y) < p.K) load_octets(first_k(blockIdx.y), o);
  const bool off_octets = find_strip_places<Fmt, COLWISE, kStrip>(p, m0, place, s);
  const float s_dec = Fmt::nv ? p.s_dec[0] : 1.0f;
  if constexpr (COLWISE && kMayStraddle) {
    if (off_octets) {
      colwise_strip_by_element<Fmt, Out, kStrip, T::rows>(p, m0, place, s_dec);
      return;
    }
  }
  if (!here) return;
  for (int64_t kt = blockIdx.y; kt < p.tiles_k; kt += gridDim.y) {
    const int64_t k0 = first_k(kt);
    if (k0 >= p.K) continue;
    if (!kEarly || kt != blockIdx.y) load_octets(k0, o);
    uint32_t sb[8];
    uint32_t zero = 0;  // bit j: octet j belongs to no group
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const ScalePlace& at = place[COLWISE ? i0 : i0 + j];
      if (j >= rows_here || at.base < 0) {
        zero |= 1u << j;
        o[j] = Octet<Fmt>{};
        sb[j] = kNeutralScale;
        continue;
      }
      // Colwise: code rows k0..k0+7 lie in one 32-row group, 16 bytes apart blocked.
      const int64_t offset =
          COLWISE ? at.base + colwise_row_part(p.blocked, k0, at.k_step) + j * (p.blocked ? 16 : at.k_step)
                  : at.base + scale_column_part(p.blocked, k0 / Fmt::block);
      sb[j] = __ldg(p.scales + offset);
    }
    // Rowwise: output rows m_first + j at columns k0; colwise: output rows m_first + e at columns k0.
    convert_and_store<Fmt, Out, COLWISE, compact_conversion(true, Fmt::nv)>(o, sb, s_dec, zero, p.out,
                                                                            m_first * p.K + k0, p.K, rows_here);
  }
}

}  // namespace mxq::cuda::kernels::dequantize
