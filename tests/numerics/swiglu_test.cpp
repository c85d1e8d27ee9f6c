// The SwiGLU numerics: exp_nonpositive and sigmoid_f32 against their correctly rounded values, the
// activation and its gradient against double precision, and the weight-gradient sum's order
// against the binary-counter form the CUDA kernel follows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <mxq/numerics/swiglu.hpp>

namespace mxq::num {
namespace {

// Distance in units in the last place between two finite floats of the same sign, or 0 when equal.
int64_t ulp_distance(float a, float b) {
  auto ordered = [](float x) {
    const int32_t i = static_cast<int32_t>(f2u(x));
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(ordered(a) - ordered(b));
}

// The largest ulp distance of f from `want` (a double evaluation, rounded once) and where it lies,
// over every 61st fp32 from 0 to `last_positive` and from -0 to -`last_negative` (tens of millions).
struct Worst {
  int64_t ulps = 0;
  float x = 0;
};
template <class F, class Want>
Worst worst_ulps(F f, Want want, float last_positive, float last_negative) {
  Worst w;
  for (uint32_t sign : {0u, 0x80000000u}) {
    const uint32_t last = sign ? f2u(last_negative) : f2u(last_positive);
    for (uint32_t u = 0; u <= last; u += 61) {
      const float x = u2f(u | sign);
      const int64_t d = ulp_distance(static_cast<float>(want(static_cast<double>(x))), f(x));
      if (d > w.ulps) w = {d, x};
    }
  }
  return w;
}

// From 0 down to the underflow threshold.
TEST(SwigluNumerics, ExpIsWithinOneUlpOfTheCorrectlyRoundedValue) {
  const Worst w = worst_ulps(
      exp_nonpositive, [](double x) { return std::exp(x); }, 0.0f, 104.0f);
  EXPECT_LE(w.ulps, 1) << "worst at x = " << w.x;
  RecordProperty("max_ulp", static_cast<int>(w.ulps));
}

// The sigmoid rounds four times (exp, 1 + e, the reciprocal and, below 0, e * r).
TEST(SwigluNumerics, SigmoidIsWithinThreeUlpsOfTheCorrectlyRoundedValue) {
  const Worst w = worst_ulps(
      sigmoid_f32, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, 104.0f, 104.0f);
  EXPECT_LE(w.ulps, 3) << "worst at x = " << w.x;
  RecordProperty("max_ulp", static_cast<int>(w.ulps));
}

TEST(SwigluNumerics, ExpSpecialValues) {
  EXPECT_EQ(exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(exp_nonpositive(-0.0f), 1.0f);
  EXPECT_EQ(f2u(exp_nonpositive(-kInf)), 0u);
  EXPECT_EQ(f2u(exp_nonpositive(-200.0f)), 0u);
  EXPECT_EQ(f2u(exp_nonpositive(-104.0f)), 0u);            // under half the smallest subnormal
  EXPECT_EQ(f2u(exp_nonpositive(u2f(kF32QuietNaN))), 0u);  // NaN takes the clamp's end
  EXPECT_GT(exp_nonpositive(-103.0f), 0.0f);               // subnormal results stay
  EXPECT_EQ(sigmoid_f32(kInf), 1.0f);
  EXPECT_EQ(sigmoid_f32(-kInf), 0.0f);
  EXPECT_EQ(sigmoid_f32(0.0f), 0.5f);
  EXPECT_EQ(sigmoid_f32(-0.0f), 0.5f);
}

TEST(SwigluNumerics, ActivationAndGradientAgreeWithDoublePrecision) {
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (bool clamped : {false, true}) {
    const SwigluRule r{clamped, 1.702f, 7.0f};
    for (int i = 0; i < 20000; ++i) {
      const float gate = dist(gen), up = dist(gen), dA = dist(gen), w = dist(gen);
      const double g = clamped ? std::min<double>(gate, 7.0) : gate;
      const double alpha = clamped ? 1.702 : 1.0;
      const double s = 1.0 / (1.0 + std::exp(-alpha * g));
      const double uc = clamped ? std::max(-7.0, std::min<double>(up, 7.0)) + 1.0 : up;
      const double act = g * s * uc;
      const float a = swiglu(gate, up, true, w, r);
      EXPECT_NEAR(a, act * w, 1e-5 * (std::fabs(act * w) + 1e-6)) << gate << " " << up;
      const SwigluGrad d = swiglu_grad(gate, up, dA, true, w, r);
      const double dsilu = s * (1.0 + alpha * g * (1.0 - s));
      const double want_gate = (clamped && gate > 7.0) ? 0.0 : dA * w * uc * dsilu;
      const double want_up = (clamped && std::fabs(up) > 7.0) ? 0.0 : dA * w * g * s;
      // silu' = s (1 + x (1 - s)) cancels near x = -1.28: the error bound is relative to its terms.
      const double terms = std::fabs(dA * w * uc) * s * (1.0 + std::fabs(alpha * g) * (1.0 - s));
      EXPECT_NEAR(d.d_gate, want_gate, 1e-5 * (std::fabs(want_gate) + terms + 1e-6));
      EXPECT_NEAR(d.d_up, want_up, 1e-5 * (std::fabs(want_up) + 1e-6));
      EXPECT_NEAR(d.act, act, 1e-5 * (std::fabs(act) + 1e-6));
    }
  }
}

TEST(SwigluNumerics, NaNComesOutCanonicalAndClampsPassNaN) {
  const float nan_payload = u2f(0x7FC12345u);
  const SwigluRule silu{};
  const SwigluRule clamped{true, 1.702f, 7.0f};
  EXPECT_EQ(f2u(swiglu(nan_payload, 1.0f, false, 0.0f, silu)), kF32QuietNaN);
  EXPECT_EQ(f2u(swiglu(1.0f, nan_payload, false, 0.0f, clamped)), kF32QuietNaN);
  EXPECT_EQ(f2u(swiglu(nan_payload, 1.0f, false, 0.0f, clamped)), kF32QuietNaN);
  // Outside the clamp the gradient is exactly 0, NaN included (as torch's clamp backward gives).
  EXPECT_EQ(f2u(swiglu_grad(1.0f, nan_payload, 1.0f, false, 0.0f, clamped).d_up), 0u);
  EXPECT_EQ(f2u(swiglu_grad(8.0f, 1.0f, 1.0f, false, 0.0f, clamped).d_gate), 0u);
  EXPECT_EQ(swiglu(kInf, 2.0f, false, 0.0f, silu), kInf);
}

// The CUDA kernel's order: chunk sums merged as a binary counter, the rest folded from the right.
float binary_counter_sum(const std::vector<float>& p) {
  std::vector<float> partial;
  std::vector<int> level;
  for (size_t c = 0; c < p.size(); c += kSumChunk) {
    float s = p[c];
    for (size_t j = c + 1; j < c + kSumChunk && j < p.size(); ++j) s = fadd(s, p[j]);
    partial.push_back(s);
    level.push_back(0);
    while (partial.size() >= 2 && level[level.size() - 1] == level[level.size() - 2]) {
      partial[partial.size() - 2] = fadd(partial[partial.size() - 2], partial.back());
      ++level[level.size() - 2];
      partial.pop_back();
      level.pop_back();
    }
  }
  if (partial.empty()) return 0.0f;
  float sum = partial.back();
  for (size_t d = partial.size() - 1; d-- > 0;) sum = fadd(partial[d], sum);
  return canonical_nan(sum);
}

TEST(SwigluNumerics, OrderedSumEqualsTheBinaryCounterForm) {
  std::mt19937 gen(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> chunk_sums(4096);
  for (int n = 0; n <= 3000; n += (n < 300 ? 1 : 37)) {
    std::vector<float> p(n);
    // Magnitudes over many octaves, so that a different order gives different bits.
    for (float& v : p) v = dist(gen) * std::ldexp(1.0f, static_cast<int>(gen() % 40) - 20);
    const float want = binary_counter_sum(p);
    const float got = ordered_sum(p.data(), n, chunk_sums.data());
    EXPECT_EQ(f2u(want), f2u(got)) << "n = " << n;
  }
}

}  // namespace
}  // namespace mxq::num
