// SwiGLU as a computed input of the quantize tile kernels (In::computed, ../quantize/tile_io.cuh):
// each 16-byte chunk of a (M, F), or of dh (M, 2F), is made in registers from h (and dA) with the
// numerics core's operations, rounded to h's dtype as the CPU reference rounds it, stored to the
// caller's copy when it asked for one, and quantized by the unchanged tile code. The tensor is
// never written and read back: one read of h (and dA) for all of it.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <mxq/numerics/halfprec.hpp>
#include <mxq/numerics/swiglu.hpp>

#include "cuda/quantize/tile_problem.cuh"
#include "cuda/swiglu/tuning.hpp"

namespace mxq::cuda::kernels::swiglu {

// x rounded to nearest even into In's storage, as the CPU reference's store_float rounds it: one
// conversion instruction; any NaN as the canonical NaN the reference writes, where the
// instruction would write its own.
template <class In>
__device__ __forceinline__ typename In::Raw to_raw(float x) {
  if constexpr (std::is_same_v<In, Fp32In>) {
    return x;
  } else {
    uint16_t r;
    if constexpr (std::is_same_v<In, Bf16In>) {
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
    } else {
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
    }
    constexpr uint16_t kNaN = std::is_same_v<In, Bf16In> ? num::float_to_bf16_rne(num::u2f(num::kF32QuietNaN))
                                                         : num::float_to_fp16_rne(num::u2f(num::kF32QuietNaN));
    return x == x ? r : kNaN;
  }
}

// A 16-byte chunk of In's eight 16-bit values from eight floats, each rounded as to_raw rounds it:
// one conversion instruction per pair (cvt's first operand goes to the upper half). A NaN, which
// is rare, sends the warp once through to_raw's per-value path for the whole chunk, so that the
// common path pays one unordered compare per pair rather than a predicated fix-up.
template <class In>
__device__ __forceinline__ uint4 to_raw_chunk(const float (&x)[8]) {
  static_assert(sizeof(typename In::Raw) == 2, "a 16-bit dtype");
  uint32_t w[4];
  bool any_nan = false;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float lo = x[2 * i], hi = x[2 * i + 1];
    if constexpr (std::is_same_v<In, Bf16In>) {
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w[i]) : "f"(hi), "f"(lo));
    } else {
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w[i]) : "f"(hi), "f"(lo));
    }
    any_nan |= lo != lo || hi != hi;
  }
  if (__builtin_expect(__any_sync(__activemask(), any_nan), 0)) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      w[i] = static_cast<uint32_t>(to_raw<In>(x[2 * i])) | static_cast<uint32_t>(to_raw<In>(x[2 * i + 1])) << 16;
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// The eight values of a 16-byte chunk of In, widened as In::to_float widens them; bf16 by a shift
// and a mask per pair, where widening each half on its own costs the upper half two instructions.
template <class In>
__device__ __forceinline__ void chunk_floats(const uint4 v, float (&f)[8]) {
  static_assert(sizeof(typename In::Raw) == 2, "a 16-bit dtype");
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<In, Bf16In>) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
    } else {
      f[2 * i] = In::to_float(static_cast<typename In::Raw>(w[i] & 0xFFFFu));
      f[2 * i + 1] = In::to_float(static_cast<typename In::Raw>(w[i] >> 16));
    }
  }
}

// kBackward false: a = swiglu(gate, up) [* w], Problem::K = F. true: dh in h's layout, K = 2F.
// quantize::Problem::in is h with h's row stride; quantize::Problem::swiglu says the rest. The launcher takes the
// 16-byte path (quantize::Problem::vec_in) only where every chunk of h, dA and the copy is 16-byte aligned
// and lies within one half of a concatenated h.
template <class Base>
struct SwigluPairedInput;
template <class Base, bool kBackward>
struct SwigluInput {
  using Raw = typename Base::Raw;
  using Plain = Base;
  static constexpr bool computed = true;
  static constexpr bool paired_halves = false;
  static constexpr bool backward = kBackward;
  using Paired = SwigluPairedInput<Base>;  // backward only
  static constexpr int vec = 16 / static_cast<int>(sizeof(Raw));
  static constexpr int loads_in_flight = kLoadsInFlight;  // tuning.hpp
  static constexpr int ctas_per_sm(bool col) { return col ? kCtasPerSmColwise : kCtasPerSmRowwise; }  // tuning.hpp
  // Whether the grouped rows kernel stages the forward's operands rather than the computed chunks
  // for codes of elem_bits (tuning.hpp).
  static constexpr bool stages_operands(int elem_bits) { return !kBackward && rows_stage_operands(elem_bits); }
  static constexpr int staged_rows_ctas_per_sm = kCtasPerSmStagedRows;

  // What the functions below read, from the tile kernel's Problem (by value: the edge tiles' call
  // to a function that is not inlined takes it in registers, not a copy of the whole Problem).
  struct View {
    const Raw* h;
    int64_t h_row_stride, K;  // K: the computed tensor's columns
    quantize::SwigluSource s;
  };
  static __device__ __forceinline__ View view(const quantize::Problem& p) {
    return {static_cast<const Raw*>(p.in), p.row_stride, p.K, p.swiglu};
  }

  static __device__ __forceinline__ float to_float(Raw r) { return Base::to_float(r); }
  static __device__ __forceinline__ float to_float_for_codes(Raw r) { return Base::to_float_for_codes(r); }

  // One chunk's inputs. Forward: concatenated, a = gate and b = up of columns [k, k + vec);
  // interleaved, a and b = h's columns [2k, 2k + 2 vec). Backward, for dh's columns [k, k + vec):
  // concatenated, a = gate, b = up and g = dA of the pairs [f, f + vec) of the chunk's half;
  // interleaved, a = h's columns [k, k + vec) (vec / 2 pairs) and g's low 8 bytes their dA.
  struct Loaded {
    uint4 a, b, g;
  };

  static __device__ __forceinline__ const Raw* h_row(const View& p, int64_t m) { return p.h + m * p.h_row_stride; }
  static __device__ __forceinline__ const Raw* grad_row(const View& p, int64_t m) {
    return static_cast<const Raw*>(p.s.grad) + m * p.s.grad_row_stride;
  }
  static __device__ __forceinline__ uint4 ldg16(const Raw* x) { return __ldg(reinterpret_cast<const uint4*>(x)); }

  // Forward: where a chunk's a and b (as Loaded) start in h's row m.
  struct Sources {
    const Raw *a, *b;
  };
  static __device__ __forceinline__ Sources sources(const View& p, int64_t m, int64_t k) {
    static_assert(!kBackward, "the forward's operands");
    const Raw* h = h_row(p, m);
    return p.s.interleaved ? Sources{h + 2 * k, h + 2 * k + vec} : Sources{h + k, h + p.s.F + k};
  }

  static __device__ __forceinline__ Loaded load(const View& p, int64_t m, int64_t k) {
    Loaded l;
    if constexpr (!kBackward) {
      const Sources src = sources(p, m, k);
      l.a = ldg16(src.a);
      l.b = ldg16(src.b);
      l.g = make_uint4(0, 0, 0, 0);
    } else {
      const quantize::SwigluSource& s = p.s;
      const Raw* h = h_row(p, m);
      if (s.interleaved) {
        l.a = ldg16(h + k);
        l.b = make_uint4(0, 0, 0, 0);
        const uint2 g = __ldg(reinterpret_cast<const uint2*>(grad_row(p, m) + k / 2));
        l.g = make_uint4(g.x, g.y, 0, 0);
      } else {
        const int64_t f = k < s.F ? k : k - s.F;
        l.a = ldg16(h + f);
        l.b = ldg16(h + s.F + f);
        l.g = ldg16(grad_row(p, m) + f);
      }
    }
    return l;
  }

  // The row's weight; 1 without weights, where the chunks skip the multiply.
  static __device__ __forceinline__ float weight(const View& p, int64_t m) {
    return p.s.weights ? __ldg(p.s.weights + m) : 1.0f;
  }

  // The chunk at row m, columns [k, k + vec) (whole, 16-byte path) from its loaded inputs.
  static __device__ __forceinline__ uint4 compute(const View& p, int64_t m, int64_t k, const Loaded& l) {
    const quantize::SwigluSource& s = p.s;
    const bool weighted = s.weights != nullptr;
    if constexpr (kBackward) {
      return finish(p, m, k, backward_chunk(l.a, l.b, l.g, weight(p, m), weighted, s.interleaved, k < s.F, s.rule));
    } else {
      return finish(p, m, k, forward_chunk(l.a, l.b, weight(p, m), weighted, s.interleaved, s.rule));
    }
  }

  // f(std::bool_constant<flag>...) for run-time flags: f compiled once per combination.
  template <class F>
  static __device__ __forceinline__ auto on_constants(const F& f) {
    return f();
  }
  template <class F, class... Rest>
  static __device__ __forceinline__ auto on_constants(const F& f, bool flag, Rest... rest) {
    if (flag) return on_constants([&](auto... c) { return f(std::true_type{}, c...); }, rest...);
    return on_constants([&](auto... c) { return f(std::false_type{}, c...); }, rest...);
  }

  // The arithmetic of one chunk, not inlined: a copy of its eight activations at every pass of every
  // tile kernel made the kernels' code, and their compile time, many times larger. It takes only
  // what it computes with, by value, so that the call passes few registers and no local memory, and
  // branches once to a loop compiled for its layout, rule and weights. The loops take the numerics
  // core's values with any NaN as it comes: to_raw_chunk writes the canonical one.
  static __device__ __noinline__ uint4 forward_chunk(const uint4 la, const uint4 lb, float w, bool weighted,
                                                     bool interleaved, const num::SwigluRule rule) {
    return on_constants(
        [&](auto interleaved_c, auto clamped_c, auto weighted_c) {
          return forward_pairs<decltype(interleaved_c)::value, decltype(clamped_c)::value,
                               decltype(weighted_c)::value>(la, lb, w, rule);
        },
        interleaved, rule.clamped, weighted);
  }
  template <bool kInterleaved, bool kClamped, bool kWeighted>
  static __device__ __forceinline__ uint4 forward_pairs(const uint4 la, const uint4 lb, float w,
                                                        const num::SwigluRule rule) {
    const num::SwigluRule r{kClamped, rule.alpha, rule.limit};
    float a[vec], b[vec], out[vec];
    chunk_floats<Base>(la, a);
    chunk_floats<Base>(lb, b);
#pragma unroll
    for (int j = 0; j < vec; ++j) {
      const int i = 2 * j % vec;  // interleaved: pair j at a[i], a[i + 1] (b past the first half)
      const float gate = kInterleaved ? (j < vec / 2 ? a[i] : b[i]) : a[j];
      const float up = kInterleaved ? (j < vec / 2 ? a[i + 1] : b[i + 1]) : b[j];
      out[j] = num::swiglu_any_nan(gate, up, kWeighted, w, r);
    }
    return to_raw_chunk<Base>(out);
  }
  // What a backward chunk holds: both gradients of vec / 2 interleaved pairs, or one half's
  // gradients of vec concatenated pairs.
  enum class Grads { interleaved, gate_half, up_half };
  // gate_half: the chunk's columns are in the gate half of a concatenated dh.
  static __device__ __noinline__ uint4 backward_chunk(const uint4 la, const uint4 lb, const uint4 lg, float w,
                                                      bool weighted, bool interleaved, bool gate_half,
                                                      const num::SwigluRule rule) {
    const auto grads = [&](auto what) {
      return on_constants(
          [&](auto clamped_c, auto weighted_c) {
            return backward_pairs<decltype(what)::value, decltype(clamped_c)::value, decltype(weighted_c)::value>(
                la, lb, lg, w, rule);
          },
          rule.clamped, weighted);
    };
    if (interleaved) return grads(std::integral_constant<Grads, Grads::interleaved>{});
    if (gate_half) return grads(std::integral_constant<Grads, Grads::gate_half>{});
    return grads(std::integral_constant<Grads, Grads::up_half>{});
  }
  template <Grads kWhat, bool kClamped, bool kWeighted>
  static __device__ __forceinline__ uint4 backward_pairs(const uint4 la, const uint4 lb, const uint4 lg, float w,
                                                         const num::SwigluRule rule) {
    float out[vec];
    if constexpr (kWhat == Grads::interleaved) {
      const num::SwigluRule r{kClamped, rule.alpha, rule.limit};
      float a[vec], g[vec];  // g: the first vec / 2 values are the pairs' dA
      chunk_floats<Base>(la, a);
      chunk_floats<Base>(lg, g);
#pragma unroll
      for (int j = 0; j < vec / 2; ++j) {
        const num::SwigluGrad d = num::swiglu_grad_any_nan(a[2 * j], a[2 * j + 1], g[j], kWeighted, w, r);
        out[2 * j] = d.d_gate;
        out[2 * j + 1] = d.d_up;
      }
    } else {
      float other[vec];  // the other half's gradients: not computed once inlined
      if constexpr (kWhat == Grads::gate_half) {
        concatenated_grads<kClamped, kWeighted>(la, lb, lg, w, rule, out, other);
      } else {
        concatenated_grads<kClamped, kWeighted>(la, lb, lg, w, rule, other, out);
      }
    }
    return to_raw_chunk<Base>(out);
  }
  // Both gradients of vec concatenated pairs: a = gate, b = up, g = dA.
  template <bool kClamped, bool kWeighted>
  static __device__ __forceinline__ void concatenated_grads(const uint4 la, const uint4 lb, const uint4 lg, float w,
                                                            const num::SwigluRule rule, float (&d_gate)[vec],
                                                            float (&d_up)[vec]) {
    const num::SwigluRule r{kClamped, rule.alpha, rule.limit};
    float a[vec], b[vec], g[vec];
    chunk_floats<Base>(la, a);
    chunk_floats<Base>(lb, b);
    chunk_floats<Base>(lg, g);
#pragma unroll
    for (int j = 0; j < vec; ++j) {
      const num::SwigluGrad d = num::swiglu_grad_any_nan(a[j], b[j], g[j], kWeighted, w, r);
      d_gate[j] = d.d_gate;
      d_up[j] = d.d_up;
    }
  }

  // The chunk at row m, columns [k, k + vec) element by element; columns past K are zero.
  static __device__ __noinline__ uint4 compute_guarded(const View p, int64_t m, int64_t k) {
    const quantize::SwigluSource& s = p.s;
    const float w = weight(p, m);
    const Raw* h = h_row(p, m);
    Raw out[vec];
#pragma unroll
    for (int j = 0; j < vec; ++j) {
      const int64_t col = k + j;
      out[j] = Raw(0);
      if (col >= p.K) continue;
      // The pair of this column and whether it is the gate's (backward) or the pair's (forward).
      const int64_t f = kBackward ? (s.interleaved ? col / 2 : (col < s.F ? col : col - s.F)) : col;
      const bool is_gate = s.interleaved ? col % 2 == 0 : col < s.F;
      const float gate = to_float(h[s.interleaved ? 2 * f : f]);
      const float up = to_float(h[s.interleaved ? 2 * f + 1 : s.F + f]);
      if constexpr (!kBackward) {
        out[j] = to_raw<Base>(num::swiglu(gate, up, true, w, s.rule));
      } else {
        const num::SwigluGrad d = num::swiglu_grad(gate, up, to_float(grad_row(p, m)[f]), true, w, s.rule);
        out[j] = to_raw<Base>(is_gate ? d.d_gate : d.d_up);
      }
    }
    uint4 v;
    memcpy(&v, out, sizeof v);
    return finish(p, m, k, v);
  }

  // The chunk, after its columns inside the tensor went to the caller's copy.
  static __device__ __forceinline__ uint4 finish(const View& p, int64_t m, int64_t k, const uint4 v) {
    if (p.s.copy) {
      Raw* dst = static_cast<Raw*>(p.s.copy) + m * p.K + k;
      if (p.s.copy_vec && k + vec <= p.K) {
        *reinterpret_cast<uint4*>(dst) = v;
      } else {
        Raw out[vec];
        memcpy(out, &v, sizeof v);
#pragma unroll
        for (int j = 0; j < vec; ++j)
          if (k + j < p.K) dst[j] = out[j];
      }
    }
    return v;
  }
};

// The backward of concatenated h (F a multiple of the tile width) whose CTAs make the d_gate tile
// at column k and the d_up tile at k + F of the same pairs together (In::paired_halves), the pairs
// computed once for both (compute_pair) instead of once for each tile.
template <class Base>
struct SwigluPairedInput : SwigluInput<Base, true> {
  using Unpaired = SwigluInput<Base, true>;
  using typename Unpaired::Loaded;
  using typename Unpaired::View;
  using Unpaired::finish;
  using Unpaired::on_constants;
  using Unpaired::vec;
  using Unpaired::weight;
  static constexpr bool paired_halves = true;
  static constexpr int ctas_per_sm(bool) { return kCtasPerSmPaired; }  // tuning.hpp: colwise always

  struct Pair {
    uint4 gate, up;
  };
  // The chunks of d_gate at columns [k, k + vec) (k < F) and of d_up at [k + F, k + F + vec), from
  // one computation of their pairs (l: Unpaired::load at k).
  static __device__ __forceinline__ Pair compute_pair(const View& p, int64_t m, int64_t k, const Loaded& l) {
    const quantize::SwigluSource& s = p.s;
    const Pair d = backward_pair_chunk(l.a, l.b, l.g, weight(p, m), s.weights != nullptr, s.rule);
    return {finish(p, m, k, d.gate), finish(p, m, k + s.F, d.up)};
  }
  // Both gradients of vec pairs, not inlined (as Unpaired::backward_chunk).
  static __device__ __noinline__ Pair backward_pair_chunk(const uint4 la, const uint4 lb, const uint4 lg, float w,
                                                          bool weighted, const num::SwigluRule rule) {
    const auto both = [&](auto clamped_c, auto weighted_c) {
      float d_gate[vec], d_up[vec];
      Unpaired::template concatenated_grads<decltype(clamped_c)::value, decltype(weighted_c)::value>(la, lb, lg, w, rule,
                                                                                                   d_gate, d_up);
      return Pair{to_raw_chunk<Base>(d_gate), to_raw_chunk<Base>(d_up)};
    };
    return on_constants(both, rule.clamped, weighted);
  }
};

}  // namespace mxq::cuda::kernels::swiglu
