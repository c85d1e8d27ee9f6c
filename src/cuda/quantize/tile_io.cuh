// Moving a quantize tile's bytes: input loads into registers or shared memory (cp.async), the
// guarded paths of edge tiles and unaligned inputs, vector stores of codes and staged scales, and
// the widening of 16-byte input chunks to fp32.
#pragma once
#include <cstdint>
#include <cstring>

#include "cuda/quantize/tile_problem.cuh"

namespace mxq::cuda::kernels::quantize {

// The low NB (2, 4 or 8) bytes of v at dst, aligned to NB: one store.
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

// A computed input's chunk at row m, column k, for the edge tiles' paths.
template <class T>
__device__ __forceinline__ uint4 computed_chunk(const typename T::Input::View v, bool vec, int64_t m, int64_t k) {
  using In = typename T::Input;
  return vec && k + T::vec <= v.K ? In::compute(v, m, k, In::load(v, m, k)) : In::compute_guarded(v, m, k);
}

// The 16 bytes of input (T::vec elements) at tile row `row`, column k of the tile's batch;
// elements outside the tile's input rows or the tensor read as zeros. For tiles that are not full
// or not 16-byte aligned. A computed input produces them (In::compute, In::compute_guarded).
template <class T>
__device__ __forceinline__ uint4 load_chunk_guarded(const Problem& p, const TileCoord& c, const typename T::Raw* in,
                                                    int row, int64_t k) {
  using Raw = typename T::Raw;
  using In = typename T::Input;
  if (row >= c.in_rows) return make_uint4(0, 0, 0, 0);
  if constexpr (In::computed) return computed_chunk<T>(In::view(p), p.vec_in, c.m0 + row, k);
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
// The copies are committed (started) as groups, then waited for, so that work can go between.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most n of this thread's commit groups are pending (n in 0..3, known at compile
// time once the caller's loop is unrolled: one instruction).
__device__ __forceinline__ void cp_async_wait_pending(int n) {
  switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
  }
}

// A computed input's chunks of a full tile for passes 0..kPasses-1 (rows m0 + i * rows_per_pass,
// column k), handed to put(i, chunk): In::loads_in_flight passes' loads are issued before the
// first is computed (on an H100, loads issued pass by pass ahead of the computation instead made
// the SwiGLU kernels 10-21 % slower). kPair: put(i, pair) gets In::compute_pair's chunks of
// columns k and k + K / 2.
template <class T, int kPasses, bool kPair = false, class Put>
__device__ __forceinline__ void compute_passes(const Problem& p, int64_t m0, int64_t k, Put&& put) {
  using In = typename T::Input;
  constexpr int kGroup = In::loads_in_flight;
  const typename In::View v = In::view(p);
#pragma unroll
  for (int g = 0; g < kPasses; g += kGroup) {
    typename In::Loaded loaded[kGroup];
#pragma unroll
    for (int j = 0; j < kGroup; ++j)
      if (g + j < kPasses) loaded[j] = In::load(v, m0 + (g + j) * T::rows_per_pass, k);
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      if (g + j >= kPasses) continue;
      if constexpr (kPair) {
        put(g + j, In::compute_pair(v, m0 + (g + j) * T::rows_per_pass, k, loaded[j]));
      } else {
        put(g + j, In::compute(v, m0 + (g + j) * T::rows_per_pass, k, loaded[j]));
      }
    }
  }
}

// Whether the grouped rows kernel stages In's operands (In::stages_operands) rather than its chunks,
// for codes of elem_bits.
template <class In>
constexpr bool stages_operands(int elem_bits) {
  if constexpr (In::computed) {
    return In::stages_operands(elem_bits);
  } else {
    return false;
  }
}

// Where the operands of a staged tile lie: row r's a chunks, then its b chunks (In::Loaded), and
// the chunk computed from them in place of its a.
template <class T>
__device__ __forceinline__ int operand_slot(int row, int operand, int chunk) {
  return (2 * row + operand) * T::chunks_per_row + chunk;
}

// A full tile's operands into shared memory (operand_slot) with cp.async, as kCommits groups of
// consecutive passes; compute_staged_passes makes the chunks once a group has landed.
template <class T, int kCommits>
__device__ __forceinline__ void stage_operands(const Problem& p, const TileCoord& c, int chunk, int row0,
                                               uint4* staged) {
  using In = typename T::Input;
  static_assert(T::passes % kCommits == 0, "whole passes per commit group");
  const typename In::Sources first = In::sources(In::view(p), c.m0 + row0, c.k0 + chunk * T::vec);
  const int64_t pass_stride = T::rows_per_pass * p.row_stride;
#pragma unroll
  for (int i = 0; i < T::passes; ++i) {
    const int row = row0 + i * T::rows_per_pass;
    cp_async_16(&staged[operand_slot<T>(row, 0, chunk)], first.a + i * pass_stride);
    cp_async_16(&staged[operand_slot<T>(row, 1, chunk)], first.b + i * pass_stride);
    if ((i + 1) % (T::passes / kCommits) == 0) cp_async_commit();
  }
}

// The chunks of passes [first, first + count) from their staged operands, in place.
template <class T>
__device__ __forceinline__ void compute_staged_passes(const Problem& p, const TileCoord& c, int chunk, int row0,
                                                      int first, int count, uint4* staged) {
  using In = typename T::Input;
  const typename In::View v = In::view(p);
  const int64_t k = c.k0 + chunk * T::vec;
#pragma unroll
  for (int i = first; i < first + count; ++i) {
    const int row = row0 + i * T::rows_per_pass;
    const typename In::Loaded l{staged[operand_slot<T>(row, 0, chunk)], staged[operand_slot<T>(row, 1, chunk)], {}};
    staged[operand_slot<T>(row, 0, chunk)] = In::compute(v, c.m0 + row, k, l);
  }
}

// A paired input's tile c (columns k0 < K / 2) and its partner `up` (columns k0 + K / 2) into
// shared memory, both from one computation of each chunk's pairs where the tile is full (edge
// tiles compute each chunk on its own). The caller synchronises the CTA before reading them.
template <class T>
__device__ __forceinline__ void stage_tile_pair(const Problem& p, const TileCoord& c, const TileCoord& up, int chunk,
                                                int row0, uint4* staged, uint4* staged_up) {
  static_assert(T::Input::paired_halves, "a paired input");
  const int64_t k = c.k0 + chunk * T::vec;
  const auto at = [&](int i) { return (row0 + i * T::rows_per_pass) * T::chunks_per_row + chunk; };
  if (in_full(c) && p.vec_in) {
    compute_passes<T, T::passes, true>(p, c.m0 + row0, k, [&](int i, const typename T::Input::Pair& d) {
      staged[at(i)] = d.gate;
      staged_up[at(i)] = d.up;
    });
  } else {
    const auto* in = static_cast<const typename T::Raw*>(p.in);
#pragma unroll 1
    for (int i = 0; i < T::passes; ++i) {
      staged[at(i)] = load_chunk_guarded<T>(p, c, in, row0 + i * T::rows_per_pass, k);
      staged_up[at(i)] = load_chunk_guarded<T>(p, up, in, row0 + i * T::rows_per_pass, up.k0 + chunk * T::vec);
    }
  }
}

// Loads this thread's chunks of the tile into registers (row0 + i * rows_per_pass, chunk).
template <class T>
__device__ __forceinline__ void load_tile_regs(const Problem& p, const TileCoord& c, int chunk, int row0,
                                               uint4 (&regs)[T::passes]) {
  using Raw = typename T::Raw;
  const Raw* in = static_cast<const Raw*>(p.in) + c.b * p.batch_stride;
  const int64_t k = c.k0 + chunk * T::vec;
  if (in_full(c) && p.vec_in) {
    if constexpr (T::Input::computed) {
      compute_passes<T, T::passes>(p, c.m0 + row0, k, [&](int i, uint4 v) { regs[i] = v; });
    } else {
      // One address computation, then a constant stride: per load, a 64-bit multiply chain and a
      // branch to the guarded path cost about as many instructions as the load's codes.
      const Raw* src = in + (c.m0 + row0) * p.row_stride + k;
      const int64_t pass_stride = T::rows_per_pass * p.row_stride;
#pragma unroll
      for (int i = 0; i < T::passes; ++i) regs[i] = __ldg(reinterpret_cast<const uint4*>(src + i * pass_stride));
    }
  } else {
#pragma unroll
    for (int i = 0; i < T::passes; ++i) regs[i] = load_chunk_guarded<T>(p, c, in, row0 + i * T::rows_per_pass, k);
  }
}

struct NoWork {
  __device__ void operator()() const {}
};

// Copies the raw tile into shared memory, row-major with kTileCols elements per row (zeros
// outside the tensor); the caller synchronises the CTA before reading it. The coordinates are read
// once, before the copies: `c` may live in shared memory, and every cp.async clobbers memory.
// kWait false: the caller waits for the copies before reading them. kCommits: the copies go out as
// that many commit groups of consecutive passes (the caller may wait for them one at a time with
// cp_async_wait_pending). kFetch256: cp_async_16's L2 prefetch hint. kRows: rows staged (the
// grouped colwise windows stage more than a tile). while_copying() runs after the copies are
// issued, before the wait. A computed input's chunks are produced in registers and stored: there
// are no copies, and the caller's waits for them return at once.
template <class T, bool kWait = true, bool kFetch256 = false, int kCommits = 1, int kRows = kTileRows,
          class Work = NoWork>
__device__ __forceinline__ void stage_tile(const Problem& p, const TileCoord& c, int chunk, int row0, uint4* staged,
                                           Work&& while_copying = {}) {
  static_assert(kRows % T::rows_per_pass == 0, "whole passes");
  constexpr int kPasses = kRows / T::rows_per_pass;
  static_assert(kPasses % kCommits == 0 && kCommits <= 4,
                "whole passes per commit group, at most cp_async_wait_pending's 3 pending + 1");
  using Raw = typename T::Raw;
  const Raw* in = static_cast<const Raw*>(p.in) + c.b * p.batch_stride;
  const int64_t k = c.k0 + chunk * T::vec;
  const int in_rows = c.in_rows;
  const Raw* src = in + (c.m0 + row0) * p.row_stride + k;  // pass i reads src + i * pass_stride
  const int64_t pass_stride = T::rows_per_pass * p.row_stride;
  if constexpr (T::Input::computed) {  // produced in registers, stored to shared memory
    if (in_full<kRows>(c) && p.vec_in) {
      compute_passes<T, kPasses>(p, c.m0 + row0, k, [&](int i, uint4 v) {
        staged[(row0 + i * T::rows_per_pass) * T::chunks_per_row + chunk] = v;
      });
    } else {
#pragma unroll 1
      for (int i = 0; i < kPasses; ++i) {
        const int row = row0 + i * T::rows_per_pass;
        staged[row * T::chunks_per_row + chunk] = load_chunk_guarded<T>(p, c, in, row, k);
      }
    }
    while_copying();
  } else if (in_full<kRows>(c) && p.vec_in) {
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int row = row0 + i * T::rows_per_pass;
      cp_async_16<kFetch256>(&staged[row * T::chunks_per_row + chunk], src + i * pass_stride);
      if ((i + 1) % (kPasses / kCommits) == 0) cp_async_commit();
    }
    while_copying();
    if constexpr (kWait) cp_async_wait_pending(0);
  } else if (p.vec_in && k + T::vec <= p.K) {  // whole chunks: rows past in_rows are zero-filled
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int row = row0 + i * T::rows_per_pass;
      uint4* dst = &staged[row * T::chunks_per_row + chunk];
      if (row < in_rows) {
        cp_async_16<kFetch256>(dst, src + i * pass_stride);
      } else {
        *dst = make_uint4(0, 0, 0, 0);
      }
      if ((i + 1) % (kPasses / kCommits) == 0) cp_async_commit();
    }
    while_copying();
    if constexpr (kWait) cp_async_wait_pending(0);
  } else {
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int row = row0 + i * T::rows_per_pass;
      staged[row * T::chunks_per_row + chunk] = load_chunk_guarded<T>(p, c, in, row, k);
    }
    while_copying();
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

// The inputs of one 16-byte chunk widened to fp32 for their codes (In::to_float_for_codes), as
// pairs (low address first).
template <class In, int N>
__device__ __forceinline__ void chunk_to_float(const uint4& raw, float (&x)[N]) {
  using Raw = typename In::Raw;
  using Pair = typename PairOf<Raw>::type;
  static_assert(N * sizeof(Raw) == sizeof(raw), "one chunk");
  Pair pairs[N / 2];
  memcpy(pairs, &raw, sizeof(raw));
#pragma unroll
  for (int j = 0; j < N / 2; ++j) {
    x[2 * j] = In::to_float_for_codes(pair_half<Raw>(pairs[j], 0));
    x[2 * j + 1] = In::to_float_for_codes(pair_half<Raw>(pairs[j], 1));
  }
}

}  // namespace mxq::cuda::kernels::quantize
