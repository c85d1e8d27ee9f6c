// The SwiGLU activation and its derivative (docs/spec.md section 8) as one fixed sequence of fp32
// operations, each rounded to nearest even, so that every backend gives the same bits: exp is the
// polynomial below, not a platform's libm; multiplies are fused with adds only where written as
// ffma (on the device the _rn intrinsics keep nvcc from contracting the others).
#pragma once
#include <cmath>

#include "common.hpp"

namespace mxq::num {

MXQ_HD float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
MXQ_HD float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
MXQ_HD float fsub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
// a * b + c with one rounding (std::fma is exact on every conforming host).
MXQ_HD float ffma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

constexpr float kInf = __builtin_huge_valf();

// e^x for x <= 0 (the sigmoid's e^-|x|), without branches (the device evaluates it for every
// element of an activation): x clamped below at -104, where e^x is under half the smallest
// subnormal (a NaN takes -104 too); x = n ln2 + r with |r| <= ln2/2 (Cody-Waite, ln2 split so that
// n * ln2_hi is exact), e^r by a degree-6 polynomial in fused multiply-adds (a minimax fit of the
// relative error on |r| <= 0.3465746 with the first two coefficients 1: one multiply-add fewer than
// the Taylor polynomial of the same accuracy; the whole function is within 0.89 ulp of e^x over
// every fp32 of [-104, 0]), then scaled by 2^n as
// (p * 2^(n + 64)) * 2^-64: n in [-150, 0] keeps 2^(n + 64) normal, so the first product is exact
// and the second rounds once (where the result is subnormal). Positive x lies outside its domain.
MXQ_HD float exp_nonpositive(float x) {
  const float xc = fmaxf(x, -104.0f);  // fmaxf(NaN, -104) = -104
  const float kRound = 12582912.0f;    // 1.5 * 2^23: adding it rounds |t| < 2^22 to an integer
  const float t = ffma(xc, 1.44269502f, kRound);
  const float n = fsub(t, kRound);
  float r = ffma(n, -0.693145751953125f, xc);
  r = ffma(n, -1.42860677e-6f, r);
  float p = 0x1.6a244cp-10f;
  p = ffma(p, r, 0x1.1239d4p-7f);
  p = ffma(p, r, 0x1.5558f2p-5f);
  p = ffma(p, r, 0x1.555492p-3f);
  p = ffma(p, r, 0x1.fffffcp-2f);
  p = ffma(p, r, 1.0f);
  p = ffma(p, r, 1.0f);
  // n + 64 + 127 in [41, 191] from t's low mantissa bits (n as an integer): 2^(n + 64)'s exponent.
  const uint32_t biased = f2u(t) - f2u(kRound) + 191u;
  return fmul(fmul(p, u2f(biased << 23)), 0x1p-64f);
}

// 1 / (1 + e^-x) from e = e^-|x| in [0, 1], so that 1 + e lies in [1, 2] where the device's
// reciprocal needs no range test: 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0. 0 for x = -Inf,
// 1 for x = +Inf. A NaN x gives a number, not NaN: every use multiplies the result by x, or by a
// value computed from x, which carries the NaN.
MXQ_HD float sigmoid_f32(float x) {
  const float e = exp_nonpositive(-fabsf(x));
  const float r = rcp_rn_in_range(fadd(1.0f, e));
  return x < 0.0f ? fmul(e, r) : r;
}

// silu: a = silu(gate) * up. clamped (gpt-oss): a = (clamp(up, -L, L) + 1) * g * sigmoid(alpha g)
// with g = min(gate, L).
struct SwigluRule {
  bool clamped = false;
  float alpha = 1.0f;  // clamped only
  float limit = 0.0f;  // clamped only: L
};

// min(gate, L) and clamp(up, -L, L) as comparisons, so that NaN passes through (fminf would drop it).
MXQ_HD float clamp_gate(float gate, float L) { return gate > L ? L : gate; }
MXQ_HD float clamp_up(float up, float L) { return up > L ? L : (up < -L ? -L : up); }

// NaN as the canonical quiet NaN: hosts propagate an operand's payload, GPUs do not.
MXQ_HD float canonical_nan(float x) { return x == x ? x : u2f(kF32QuietNaN); }

// The activation of one (gate, up) pair, before any per-token weight.
MXQ_HD float swiglu_unweighted(float gate, float up, const SwigluRule& r) {
  if (!r.clamped) return fmul(fmul(gate, sigmoid_f32(gate)), up);
  const float g = clamp_gate(gate, r.limit);
  const float glu = fmul(g, sigmoid_f32(fmul(g, r.alpha)));
  return fmul(fadd(clamp_up(up, r.limit), 1.0f), glu);
}

// swiglu below with a NaN not yet made canonical, for a caller whose rounding to h's dtype writes
// the canonical NaN itself (the device's chunks), so that the check is not paid twice.
MXQ_HD float swiglu_any_nan(float gate, float up, bool weighted, float weight, const SwigluRule& r) {
  const float a = swiglu_unweighted(gate, up, r);
  return weighted ? fmul(a, weight) : a;
}

// a = swiglu(gate, up) [* weight], the value that is rounded to h's dtype and quantized.
MXQ_HD float swiglu(float gate, float up, bool weighted, float weight, const SwigluRule& r) {
  return canonical_nan(swiglu_any_nan(gate, up, weighted, weight, r));
}

// Gradients of one pair: d_gate, d_up, and the unweighted activation (the per-token weight's
// gradient sums dA * act).
struct SwigluGrad {
  float d_gate, d_up, act;
};

// silu'(x) = s (1 + x (1 - s)) with s = sigmoid(x).
MXQ_HD float dsilu(float x, float s) { return fmul(s, fadd(1.0f, fmul(x, fsub(1.0f, s)))); }

// As torch's autograd differentiates the expressions above, with dA first multiplied by the
// weight: a clamp passes the gradient where its input lies within the bounds, bounds included,
// and gives exactly 0 elsewhere (NaN included). NaN gradients are not yet canonical (as
// swiglu_any_nan); swiglu_grad below makes them so.
MXQ_HD SwigluGrad swiglu_grad_any_nan(float gate, float up, float dA, bool weighted, float weight,
                                      const SwigluRule& r) {
  const float g_out = weighted ? fmul(dA, weight) : dA;
  if (!r.clamped) {
    const float s = sigmoid_f32(gate);
    const float silu = fmul(gate, s);
    return {fmul(fmul(g_out, up), dsilu(gate, s)), fmul(g_out, silu), fmul(silu, up)};
  }
  const float L = r.limit;
  const float g = clamp_gate(gate, L);
  const float ag = fmul(g, r.alpha);
  const float s = sigmoid_f32(ag);
  const float glu = fmul(g, s);
  const float u1 = fadd(clamp_up(up, L), 1.0f);
  // d glu / d g = s + g alpha s (1 - s) = s (1 + ag (1 - s)): silu' at ag.
  const float d_gate = gate <= L ? fmul(fmul(g_out, u1), dsilu(ag, s)) : 0.0f;
  const float d_up = up >= -L && up <= L ? fmul(g_out, glu) : 0.0f;
  return {d_gate, d_up, fmul(u1, glu)};
}

MXQ_HD SwigluGrad swiglu_grad(float gate, float up, float dA, bool weighted, float weight, const SwigluRule& r) {
  const SwigluGrad d = swiglu_grad_any_nan(gate, up, dA, weighted, weight, r);
  return {canonical_nan(d.d_gate), canonical_nan(d.d_up), d.act};
}

}  // namespace mxq::num

namespace mxq::num {

// The per-token weight's gradient sums n products p (dA * activation, in column order) in a fixed
// order that a warp can follow: chunks of kSumChunk consecutive products, each summed left to
// right from its first, then the chunk sums pairwise, level by level ((0,1), (2,3), ...; an
// unpaired last sum moves up unchanged). A NaN result is the canonical quiet NaN; n = 0 gives +0.
constexpr int kSumChunk = 32;

inline float ordered_sum(const float* p, int64_t n, float* chunk_sums) {
  if (n <= 0) return 0.0f;
  int64_t chunks = 0;
  for (int64_t c = 0; c < n; c += kSumChunk, ++chunks) {
    float s = p[c];
    for (int64_t j = c + 1; j < c + kSumChunk && j < n; ++j) s = fadd(s, p[j]);
    chunk_sums[chunks] = s;
  }
  while (chunks > 1) {
    for (int64_t i = 0; i < chunks / 2; ++i) chunk_sums[i] = fadd(chunk_sums[2 * i], chunk_sums[2 * i + 1]);
    if (chunks % 2) chunk_sums[chunks / 2] = chunk_sums[chunks - 1];
    chunks = (chunks + 1) / 2;
  }
  const float s = chunk_sums[0];
  return s == s ? s : u2f(kF32QuietNaN);
}

}  // namespace mxq::num
