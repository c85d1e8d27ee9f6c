// swiglu_quantize / swiglu_backward_quantize on the CPU backend: the quantized outputs are exactly
// quantize() of the computed tensor for every format, direction, layout and grouping; the computed
// tensor follows the numerics core; interleaved and concatenated halves agree; errors name the rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mxq/mxq.hpp>
#include <mxq/numerics/swiglu.hpp>

#include "support/swiglu_runner.hpp"

namespace mxq::test {
namespace {

struct Case {
  Format format;
  Direction direction;
  ScaleLayout layout;
  int64_t groups;
  int32_t pad;
};

const Case kCases[] = {
    {Format::mxfp8, Direction::rowwise, ScaleLayout::blocked, 0, 0},
    {Format::mxfp8, Direction::both, ScaleLayout::linear, 0, 0},
    {Format::mxfp8, Direction::both, ScaleLayout::blocked, 5, 32},
    {Format::mxfp8_e5m2, Direction::colwise, ScaleLayout::blocked, 3, 0},
    {Format::mxfp4, Direction::both, ScaleLayout::blocked, 4, 64},
    {Format::nvfp4, Direction::rowwise, ScaleLayout::blocked, 0, 0},
    {Format::nvfp4, Direction::both, ScaleLayout::linear, 4, 32},
};

SwigluRequest request(Rng& rng, const Case& c, int64_t M, SwigluVariant v, SwigluLayout l, bool weighted) {
  SwigluRequest r;
  r.quantize.params.format = c.format;
  r.quantize.params.direction = c.direction;
  r.quantize.params.layout = c.layout;
  if (c.groups) r.quantize.ends = random_group_ends(rng, M, c.groups);
  r.quantize.pad_rowwise = r.quantize.pad_colwise = c.pad;
  r.swiglu.variant = v;
  r.swiglu.layout = l;
  if (weighted)
    for (int64_t m = 0; m < M; ++m) r.weights.push_back(rng.normal());
  return r;
}

std::string describe(DType t, const Case& c, SwigluVariant v, SwigluLayout l, bool w, int64_t M, int64_t F) {
  return std::string(to_string(t)) + " " + to_string(c.format) + " " + to_string(c.direction) + " " +
         to_string(c.layout) + " G=" + std::to_string(c.groups) + " pad=" + std::to_string(c.pad) +
         (v == SwigluVariant::clamped ? " clamped" : " silu") +
         (l == SwigluLayout::interleaved ? " interleaved" : " concatenated") + (w ? " weighted" : "") +
         " M=" + std::to_string(M) + " F=" + std::to_string(F);
}

TEST(SwigluCpu, QuantizedOutputsAreQuantizeOfTheActivation) {
  MXQ_FRESH_RNG(rng);
  for (DType t : {DType::bf16, DType::fp16, DType::fp32})
    for (const Case& c : kCases)
      for (SwigluVariant v : {SwigluVariant::silu, SwigluVariant::clamped}) {
        const SwigluLayout l = rng.uniform(0, 1) ? SwigluLayout::interleaved : SwigluLayout::concatenated;
        const bool weighted = rng.uniform(0, 1) == 1;
        const int64_t M = rng.uniform(1, 150), F = 2 * rng.uniform(1, 80);
        SCOPED_TRACE(describe(t, c, v, l, weighted, M, F));
        const HostTensor h = special_tensor(rng, t, 1, M, 2 * F, 0.02);
        SwigluRequest req = request(rng, c, M, v, l, weighted);
        const SwigluResult got = run_swiglu(h, req);
        const HostTensor a = computed_tensor(got, t, M, F);
        expect_outputs_equal(run_quantize(a, req.quantize), got.quantized, c.direction);
        // Without the activation buffer the reference computes it into memory of its own.
        req.keep_computed = false;
        expect_outputs_equal(got.quantized, run_swiglu(h, req).quantized, c.direction);
      }
}

TEST(SwigluCpu, BackwardQuantizesTheGradient) {
  MXQ_FRESH_RNG(rng);
  for (DType t : {DType::bf16, DType::fp16, DType::fp32})
    for (const Case& c : kCases)
      for (SwigluVariant v : {SwigluVariant::silu, SwigluVariant::clamped}) {
        const SwigluLayout l = rng.uniform(0, 1) ? SwigluLayout::interleaved : SwigluLayout::concatenated;
        const bool weighted = rng.uniform(0, 1) == 1;
        const int64_t M = rng.uniform(1, 150), F = 2 * rng.uniform(1, 80);
        SCOPED_TRACE(describe(t, c, v, l, weighted, M, F));
        const HostTensor h = special_tensor(rng, t, 1, M, 2 * F, 0.02);
        const HostTensor dA = normal_tensor(rng, rng.uniform(0, 1) ? t : DType::fp32, 1, M, F);
        SwigluRequest req = request(rng, c, M, v, l, weighted);
        const SwigluResult got = run_swiglu_backward(dA, h, req);
        const HostTensor dh = computed_tensor(got, t, M, 2 * F);
        expect_outputs_equal(run_quantize(dh, req.quantize), got.quantized, c.direction);
        EXPECT_EQ(got.grad_weights.size(), weighted ? size_t(M) : 0u);
      }
}

// fp32 h: a and dh are the numerics core's values, unrounded.
TEST(SwigluCpu, ComputedTensorsFollowTheNumericsCore) {
  MXQ_FRESH_RNG(rng);
  const int64_t M = 33, F = 70;
  for (SwigluVariant v : {SwigluVariant::silu, SwigluVariant::clamped})
    for (SwigluLayout l : {SwigluLayout::concatenated, SwigluLayout::interleaved}) {
      const HostTensor h = normal_tensor(rng, DType::fp32, 1, M, 2 * F);
      const HostTensor dA = normal_tensor(rng, DType::fp32, 1, M, F);
      SwigluRequest req = request(rng, kCases[0], M, v, l, true);
      req.quantize.params.layout = ScaleLayout::linear;
      const HostTensor a = computed_tensor(run_swiglu(h, req), DType::fp32, M, F);
      const SwigluResult back = run_swiglu_backward(dA, h, req);
      const HostTensor dh = computed_tensor(back, DType::fp32, M, 2 * F);
      const num::SwigluRule rule{v == SwigluVariant::clamped, req.swiglu.alpha, req.swiglu.limit};
      for (int64_t m = 0; m < M; ++m) {
        std::vector<float> products(F), chunk_sums(F);
        for (int64_t f = 0; f < F; ++f) {
          const int64_t gc = l == SwigluLayout::interleaved ? 2 * f : f;
          const int64_t uc = l == SwigluLayout::interleaved ? 2 * f + 1 : F + f;
          const float gate = h.get(0, m, gc), up = h.get(0, m, uc), w = req.weights[m];
          ASSERT_EQ(num::f2u(a.get(0, m, f)), num::f2u(num::swiglu(gate, up, true, w, rule)));
          const num::SwigluGrad g = num::swiglu_grad(gate, up, dA.get(0, m, f), true, w, rule);
          ASSERT_EQ(num::f2u(dh.get(0, m, gc)), num::f2u(g.d_gate));
          ASSERT_EQ(num::f2u(dh.get(0, m, uc)), num::f2u(g.d_up));
          products[f] = num::fmul(dA.get(0, m, f), g.act);
        }
        ASSERT_EQ(num::f2u(back.grad_weights[m]), num::f2u(num::ordered_sum(products.data(), F, chunk_sums.data())));
      }
    }
}

TEST(SwigluCpu, InterleavedAndConcatenatedHalvesAgree) {
  MXQ_FRESH_RNG(rng);
  const int64_t M = 40, F = 48;
  const HostTensor cat = special_tensor(rng, DType::bf16, 1, M, 2 * F, 0.05);
  HostTensor inter(DType::bf16, 1, M, 2 * F);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t f = 0; f < F; ++f) {
      std::memcpy(&inter.bytes[2 * inter.index(0, m, 2 * f)], &cat.bytes[2 * cat.index(0, m, f)], 2);
      std::memcpy(&inter.bytes[2 * inter.index(0, m, 2 * f + 1)], &cat.bytes[2 * cat.index(0, m, F + f)], 2);
    }
  SwigluRequest req = request(rng, kCases[2], M, SwigluVariant::clamped, SwigluLayout::concatenated, true);
  const SwigluResult a = run_swiglu(cat, req);
  req.swiglu.layout = SwigluLayout::interleaved;
  const SwigluResult b = run_swiglu(inter, req);
  EXPECT_TRUE(bytes_equal(a.computed, b.computed, "activation"));
  expect_outputs_equal(a.quantized, b.quantized, req.quantize.params.direction);
}

TEST(SwigluCpu, StridedInputAndEmptyShapes) {
  MXQ_FRESH_RNG(rng);
  const HostTensor strided = normal_tensor(rng, DType::bf16, 1, 20, 64, 100);
  SwigluRequest req = request(rng, kCases[1], 20, SwigluVariant::silu, SwigluLayout::concatenated, false);
  const SwigluResult a = run_swiglu(strided, req);
  const SwigluResult b = run_swiglu(strided.contiguous_copy(), req);
  EXPECT_TRUE(bytes_equal(a.computed, b.computed, "activation"));
  expect_outputs_equal(a.quantized, b.quantized, req.quantize.params.direction);
  // M = 0 writes nothing and fails nothing.
  const HostTensor empty(DType::bf16, 1, 0, 64);
  SwigluRequest none = request(rng, kCases[0], 0, SwigluVariant::silu, SwigluLayout::concatenated, false);
  run_swiglu(empty, none);
}

Status forward_error(const std::function<void(SwigluArgs&)>& edit) {
  static std::vector<uint16_t> h(8 * 64), act(8 * 32);
  static std::vector<uint8_t> data(8 * 32), scales(4096);
  SwigluArgs a;
  a.input = {h.data(), DType::bf16, 1, 8, 64, 0, 0};
  a.params.layout = ScaleLayout::linear;
  a.out.row_data = data.data();
  a.out.row_scales = scales.data();
  a.activation = act.data();
  a.backend = Backend::cpu;
  edit(a);
  return swiglu_quantize(a);
}

void expect_error(const Status& s, const std::string& text) {
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
}

TEST(SwigluCpu, ErrorsNameTheArgumentAndRule) {
  EXPECT_TRUE(forward_error([](SwigluArgs&) {}).ok());
  expect_error(forward_error([](SwigluArgs& a) { a.input.cols = 63; }), "input.cols (63) must be even");
  expect_error(forward_error([](SwigluArgs& a) { a.input.batch = 2; }), "batch must be 1");
  expect_error(forward_error([](SwigluArgs& a) { a.swiglu.variant = static_cast<SwigluVariant>(5); }),
               "swiglu.variant");
  expect_error(forward_error([](SwigluArgs& a) { a.swiglu.layout = static_cast<SwigluLayout>(-1); }), "swiglu.layout");
  expect_error(forward_error([](SwigluArgs& a) {
                 a.swiglu.variant = SwigluVariant::clamped;
                 a.swiglu.limit = 0.0f;
               }),
               "swiglu.limit");
  expect_error(forward_error([](SwigluArgs& a) { a.activation = const_cast<void*>(a.input.data); }),
               "activation overlaps input.data");
  expect_error(forward_error([](SwigluArgs& a) {
                 a.params.format = Format::mxfp4;
                 a.input.cols = 2 * 31;
               }),
               "activation.cols");
  expect_error(forward_error([](SwigluArgs& a) { a.out.row_data = nullptr; }), "out.row_data is null");

  std::vector<uint16_t> h(8 * 64), dA(8 * 32), dh(8 * 64);
  std::vector<uint8_t> data(8 * 64), scales(4096);
  std::vector<float> w(8), gw(8);
  SwigluBackwardArgs b;
  b.input = {h.data(), DType::bf16, 1, 8, 64, 0, 0};
  b.grad = {dA.data(), DType::bf16, 1, 8, 32, 0, 0};
  b.params.layout = ScaleLayout::linear;
  b.out.row_data = data.data();
  b.out.row_scales = scales.data();
  b.grad_input = dh.data();
  b.backend = Backend::cpu;
  EXPECT_TRUE(swiglu_backward_quantize(b).ok());
  b.weights = w.data();
  expect_error(swiglu_backward_quantize(b), "grad_weights is null but weights are given");
  b.grad_weights = gw.data();
  EXPECT_TRUE(swiglu_backward_quantize(b).ok());
  b.grad.cols = 31;
  expect_error(swiglu_backward_quantize(b), "grad must be (M, F) = (8, 32)");
  b.grad.cols = 32;
  b.weights = nullptr;
  expect_error(swiglu_backward_quantize(b), "grad_weights is given but weights are not");
}

}  // namespace
}  // namespace mxq::test
