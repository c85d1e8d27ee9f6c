// NVFP4 two-level scaling (docs/spec.md section 3), in TransformerEngine's operation order, all fp32 RN.
#pragma once
#include "common.hpp"
#include "minifloat.hpp"

namespace mxq::num {

constexpr uint8_t kNvfp4ScaleNaN = 0x7F;  // UE4M3 NaN: the scale byte of a poisoned block
constexpr float kNvfp4OneSixth = 1.0f / 6.0f;

struct Nvfp4TensorScale {
  float s_enc;  // encode scale 448*6 / T
  float s_dec;  // decode scale 1 / s_enc (never recompute one from the other)
};

// From the tensor amax T (fp32; may be 0, NaN or Inf). docs/spec.md section 3 gives s_enc = 1 for T = 0
// or not finite; an amax is max |x|, so a negative one (only a caller can give it) is treated like
// 0: the block scales, UE4M3, then stay non-negative on every backend.
MXQ_HD constexpr Nvfp4TensorScale nvfp4_tensor_scale(float T) {
  float s_enc = 1.0f;
  if (T > 0.0f && is_nonfinite_abs_bits(abs_bits(T)) == false) {
    s_enc = (448.0f * 6.0f) / T;
    if (s_enc > kFltMax) s_enc = kFltMax;
  }
  return {s_enc, 1.0f / s_enc};
}

// Block scale byte (UE4M3) from the block amax bits; poison (NaN/Inf in the block) gives 0x7F.
MXQ_HD constexpr uint8_t nvfp4_block_scale(uint32_t amax_bits, float s_enc) {
  if (is_nonfinite_abs_bits(amax_bits)) return kNvfp4ScaleNaN;
  const float k = s_enc * kNvfp4OneSixth;  // s_enc * fl(1/6) first
  return static_cast<uint8_t>(encode<E4M3>(u2f(amax_bits) * k));
}

// Element multiplier e = min(1 / (fp32(sf) * s_dec), FLT_MAX) for a finite block.
MXQ_HD constexpr float nvfp4_element_multiplier(uint8_t sf, float s_dec) {
  const float e = 1.0f / (decode<E4M3>(sf) * s_dec);
  return e > kFltMax ? kFltMax : e;
}

}  // namespace mxq::num
