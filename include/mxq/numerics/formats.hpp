// Per-format traits and the block quantization rules shared by every backend. A backend computes
// a block's amax (max over abs_bits of its elements, so NaN wins), asks `block_scale` for the scale
// byte and `element_multiplier` for the fp32 multiplier, then encodes each element with
// `encode_element`. Poisoned blocks (scale byte NaN) encode every element as the NaN code.
#pragma once
#include "../types.hpp"
#include "e8m0.hpp"
#include "minifloat.hpp"
#include "nvfp4.hpp"

namespace mxq::num {

template <class ElemT, int BLOCK, bool NV>
struct FormatTraits {
  using Elem = ElemT;
  static constexpr int block = BLOCK;           // elements per scale
  static constexpr int elem_bits = Elem::bits;  // 8 or 4
  static constexpr bool nv = NV;                // UE4M3 scales + fp32 tensor scale
  static constexpr uint8_t scale_nan = NV ? kNvfp4ScaleNaN : kE8M0NaN;
  static constexpr float max_value = decode<Elem>(Elem::max_code);
  static constexpr float inv_max = 1.0f / max_value;  // fl(1 / max_elem) for rceil
};

using MXFP8 = FormatTraits<E4M3, 32, false>;
using MXFP8_E5M2 = FormatTraits<E5M2, 32, false>;
using MXFP4 = FormatTraits<E2M1, 32, false>;
using NVFP4 = FormatTraits<E2M1, 16, true>;

static_assert(f2u(MXFP8::inv_max) == 0x3B124925u, "docs/spec.md: e4m3 reciprocal 0x3B124925");
static_assert(MXFP8::max_value == 448.0f && MXFP8_E5M2::max_value == 57344.0f && MXFP4::max_value == 6.0f,
              "format maxima");

// Calls f(Traits{}) with the traits type of a runtime format.
template <class Fn>
constexpr decltype(auto) dispatch_format(Format f, Fn&& fn) {
  switch (f) {
    case Format::mxfp8_e5m2: return fn(MXFP8_E5M2{});
    case Format::mxfp4: return fn(MXFP4{});
    case Format::nvfp4: return fn(NVFP4{});
    default: return fn(MXFP8{});
  }
}

constexpr int format_block(Format f) { return f == Format::nvfp4 ? 16 : 32; }
constexpr int format_elem_bits(Format f) { return f == Format::mxfp4 || f == Format::nvfp4 ? 4 : 8; }

// Scale byte of one block. MX formats use `rule`; NVFP4 uses s_enc.
template <class T>
MXQ_HD constexpr uint8_t block_scale(uint32_t amax_bits, ScaleRule rule, float s_enc) {
  if constexpr (T::nv) {
    return nvfp4_block_scale(amax_bits, s_enc);
  } else {
    return rule == ScaleRule::floor ? e8m0_floor(amax_bits, T::Elem::emax) : e8m0_rceil(amax_bits, T::inv_max);
  }
}

// fp32 multiplier applied to each element of a block with scale byte `sb` (finite blocks only).
template <class T>
MXQ_HD constexpr float element_multiplier(uint8_t sb, float s_dec) {
  if constexpr (T::nv) {
    return nvfp4_element_multiplier(sb, s_dec);
  } else {
    return e8m0_reciprocal(sb);
  }
}

// Code of one element: poisoned blocks give the NaN code, others encode x * multiplier.
template <class T>
MXQ_HD constexpr uint32_t encode_element(float x, float multiplier, bool poisoned) {
  return poisoned ? T::Elem::nan_code : encode<typename T::Elem>(x * multiplier);
}

// Dequantized fp32 value of a code with scale byte `sb` (docs/spec.md section 7).
// A NaN result is always the canonical quiet NaN: the NaN that arithmetic produces differs between
// CPUs (which propagate the payload) and GPUs (which give 0x7FFFFFFF).
template <class T>
MXQ_HD constexpr float dequantize_element(uint32_t code, uint8_t sb, float s_dec) {
  float v = 0.0f;
  if constexpr (T::nv) {
    if (sb == kNvfp4ScaleNaN) return u2f(kF32QuietNaN);
    v = decode<typename T::Elem>(code) * decode<E4M3>(sb) * s_dec;
  } else {
    v = decode<typename T::Elem>(code) * e8m0_to_float(sb);
  }
  return v != v ? u2f(kF32QuietNaN) : v;
}

}  // namespace mxq::num
