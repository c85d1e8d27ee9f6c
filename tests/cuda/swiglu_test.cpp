// swiglu_quantize / swiglu_backward_quantize on the cuda backend against the cpu backend, byte for
// byte: every computed element, every quantized output and the weights' gradient, for every dtype,
// layout, variant, format and direction, with and without weights, token groups (empty ones
// included, rows past the last group) and fused padding, on random values with special ones (NaN,
// Inf, huge gates), strided and unaligned inputs, with and without the computed tensor kept; every
// output byte written (two poison patterns).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "support/swiglu_runner.hpp"

namespace mxq::test {
namespace {

struct DeviceSwiglu {
  QuantizeResult quantized;
  std::vector<uint8_t> computed;
  std::vector<float> grad_weights;
};

// The op on the device, run over two poison patterns; `grad` null runs the forward.
DeviceSwiglu run_cuda(const HostTensor& h, const HostTensor* grad, const SwigluRequest& req, size_t offset) {
  DeviceTensor dh(h, offset);
  std::unique_ptr<DeviceTensor> dg = grad ? std::make_unique<DeviceTensor>(*grad, offset) : nullptr;
  const DeviceBuffer ends = device_copy(req.quantize.ends), weights = device_copy(req.weights),
                     amax = device_copy(req.quantize.tensor_amax);
  const int64_t cols = grad ? h.cols : h.cols / 2;
  DeviceBuffer computed(size_t(h.rows * cols * dtype_size(h.dtype)));
  DeviceBuffer grad_weights(grad ? req.weights.size() * sizeof(float) : 0);
  auto fill_common = [&](auto& a) {
    a.input = dh.view;
    a.swiglu = req.swiglu;
    a.weights = req.weights.empty() ? nullptr : reinterpret_cast<const float*>(weights.get());
    a.params = req.quantize.params;
    a.groups.groups = {req.quantize.ends.empty() ? nullptr : reinterpret_cast<const int32_t*>(ends.get()),
                       int64_t(req.quantize.ends.size())};
    a.groups.pad_rowwise = req.quantize.pad_rowwise;
    a.groups.pad_colwise = req.quantize.pad_colwise;
    a.tensor_amax = req.quantize.tensor_amax.empty() ? nullptr : reinterpret_cast<const float*>(amax.get());
    a.backend = Backend::cuda;
  };
  SwigluArgs fa;
  SwigluBackwardArgs ba;
  QuantizeSizes s;
  if (grad) {
    fill_common(ba);
    ba.grad = dg->view;
    ba.grad_input = req.keep_computed ? computed.get() : nullptr;
    ba.grad_weights = grad_weights.size() ? reinterpret_cast<float*>(grad_weights.get()) : nullptr;
    const Status st = swiglu_backward_quantize_sizes(ba, &s);
    EXPECT_TRUE(st.ok()) << st.message();
  } else {
    fill_common(fa);
    fa.activation = req.keep_computed ? computed.get() : nullptr;
    const Status st = swiglu_quantize_sizes(fa, &s);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  DeviceOutputs out(s);
  fa.out = ba.out = out.outputs(req.quantize.params.direction);
  const auto r = run_poisoned_twice(
      [&](uint8_t p) {
        out.fill(p);
        computed.fill(p);
        grad_weights.fill(p);
      },
      [&] { return grad ? swiglu_backward_quantize(ba) : swiglu_quantize(fa); },
      [&] {
        DeviceSwiglu d;
        d.quantized = out.download(s);
        if (req.keep_computed) d.computed = computed.download();
        const std::vector<uint8_t> gw = grad_weights.download();
        d.grad_weights.resize(gw.size() / 4);
        if (!gw.empty()) std::memcpy(d.grad_weights.data(), gw.data(), gw.size());
        return d;
      });
  expect_every_byte_written(r[0].quantized, r[1].quantized, "cuda ");
  EXPECT_TRUE(every_byte_written(r[0].computed, r[1].computed, "cuda computed"));
  EXPECT_TRUE(every_byte_written(as_bytes(r[0].grad_weights), as_bytes(r[1].grad_weights), "cuda grad_weights"));
  return r[0];
}

struct Case {
  Format format;
  Direction direction;
  ScaleLayout layout;
  int64_t groups;
  int32_t pad;
  bool amax_given;
  int32_t pad_colwise = -1;  // -1: pad
};

const Case kCases[] = {
    {Format::mxfp8, Direction::rowwise, ScaleLayout::blocked, 8, 32, false},
    {Format::mxfp8, Direction::both, ScaleLayout::blocked, 8, 128, false},
    {Format::mxfp8, Direction::both, ScaleLayout::linear, 0, 0, false},
    {Format::mxfp8_e5m2, Direction::colwise, ScaleLayout::blocked, 5, 0, false},
    {Format::mxfp4, Direction::both, ScaleLayout::blocked, 64, 32, false},
    {Format::nvfp4, Direction::rowwise, ScaleLayout::blocked, 8, 128, true},
    {Format::nvfp4, Direction::both, ScaleLayout::blocked, 0, 0, false},
    {Format::nvfp4, Direction::rowwise, ScaleLayout::linear, 0, 0, true},
};

void expect_same(const SwigluResult& cpu, const DeviceSwiglu& gpu, Direction d) {
  expect_outputs_equal(cpu.quantized, gpu.quantized, d);
  EXPECT_TRUE(bytes_equal(cpu.computed, gpu.computed, "computed"));
  EXPECT_TRUE(bytes_equal(as_bytes(cpu.grad_weights), as_bytes(gpu.grad_weights), "grad_weights"));
}

// One case on random values with special ones: the forward (unless backward_only) and the backward
// against the cpu backend. stride: h's row stride (0: contiguous).
void check_case(Rng& rng, DType t, const Case& c, SwigluVariant v, SwigluLayout l, bool weighted, int64_t M, int64_t F,
                int64_t stride, size_t offset, bool backward_only) {
  SCOPED_TRACE(::testing::Message() << to_string(t) << " " << to_string(c.format) << " " << to_string(c.direction)
                                    << " G=" << c.groups << " pad=" << c.pad << "/" << c.pad_colwise
                                    << (v == SwigluVariant::clamped ? " clamped" : " silu")
                                    << (l == SwigluLayout::interleaved ? " interleaved" : "")
                                    << (weighted ? " weighted" : "") << " M=" << M << " F=" << F << " stride=" << stride
                                    << " offset=" << offset);
  HostTensor h = special_tensor(rng, t, 1, M, 2 * F, 0.01);
  if (stride) {
    HostTensor s(t, 1, M, 2 * F, stride);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < 2 * F; ++k)
        std::memcpy(&s.bytes[s.index(0, m, k) * dtype_size(t)], &h.bytes[h.index(0, m, k) * dtype_size(t)],
                    size_t(dtype_size(t)));
    h = s;
  }
  // Huge gates: the exp overflows and underflows on both sides.
  for (int i = 0; i < 8 && M * F > 0; ++i)
    h.set(0, rng.uniform(0, M - 1), rng.uniform(0, 2 * F - 1), i % 2 ? 1e30f : -1e30f);
  SwigluRequest req;
  req.quantize.params = {c.format, ScaleRule::rceil, c.layout, c.direction};
  // Rows past the last group: quantized by no tile, but part of a kept tensor.
  if (c.groups) req.quantize.ends = random_group_ends(rng, M, c.groups, 1, rng.uniform(0, 1) ? M / 4 : 0);
  req.quantize.pad_rowwise = c.pad;
  req.quantize.pad_colwise = c.pad_colwise < 0 ? c.pad : c.pad_colwise;
  if (c.amax_given) req.quantize.tensor_amax = {std::abs(rng.normal()) * 8.0f};
  req.swiglu.variant = v;
  req.swiglu.layout = l;
  if (weighted)
    for (int64_t m = 0; m < M; ++m) req.weights.push_back(rng.normal());
  // 16-bit h quantizes a as it computes it and needs no buffer for it (nvfp4: with the
  // caller's amax); the other calls need the buffer.
  const bool fusable = t != DType::fp32 && (c.format != Format::nvfp4 || c.amax_given);
  if (!backward_only) {
    req.keep_computed = !fusable || rng.uniform(0, 1) == 1;
    SCOPED_TRACE(req.keep_computed ? "computed kept" : "computed not kept");
    expect_same(run_swiglu(h, req), run_cuda(h, nullptr, req, offset), c.direction);
  }
  const HostTensor dA = special_tensor(rng, rng.uniform(0, 1) || backward_only ? t : DType::bf16, 1, M, F, 0.01);
  req.keep_computed = !(fusable && dA.dtype == t) || rng.uniform(0, 1) == 1;
  SCOPED_TRACE(req.keep_computed ? "grad_input kept" : "grad_input not kept");
  expect_same(run_swiglu_backward(dA, h, req), run_cuda(h, &dA, req, offset), c.direction);
}

TEST(SwigluCuda, ForwardAndBackwardMatchTheCpuBackend) {
  MXQ_FRESH_RNG(rng);
  const bool quick = quick_mode();
  for (DType t : {DType::bf16, DType::fp16, DType::fp32})
    for (const Case& c : kCases)
      for (SwigluVariant v : {SwigluVariant::silu, SwigluVariant::clamped}) {
        const SwigluLayout l = rng.uniform(0, 1) ? SwigluLayout::interleaved : SwigluLayout::concatenated;
        const bool weighted = rng.uniform(0, 1) == 1;
        int64_t M = quick ? rng.uniform(1, 200) : rng.uniform(1, 1500);
        // FP4 codes pack two rows per byte in the colwise data: unpadded columns need even M.
        const bool fp4 = c.format == Format::mxfp4 || c.format == Format::nvfp4;
        if (fp4 && has_colwise(c.direction) && c.pad == 0) M += M % 2;
        const int64_t F = 2 * (quick ? rng.uniform(1, 100) : rng.uniform(1, 700));
        const int64_t stride = rng.uniform(0, 1) ? 2 * F + 2 * rng.uniform(1, 8) : 0;
        const size_t offset = rng.uniform(0, 3) == 0 ? 2 : 0;
        check_case(rng, t, c, v, l, weighted, M, F, stride, offset, false);
      }
}

// The forward with rowwise codes and token groups on 16-byte loads (F a multiple of 8, rows of
// whole 16 bytes), where the grouped rows kernel computes full tiles from whole-tile operands
// (8-bit codes: staged in shared memory) and edge tiles chunk by chunk.
TEST(SwigluCuda, GroupedRowwiseOnSixteenByteLoadsMatchesTheCpuBackend) {
  MXQ_FRESH_RNG(rng);
  const bool quick = quick_mode();
  const Case cases[] = {
      {Format::mxfp8, Direction::rowwise, ScaleLayout::blocked, 8, 32, false},
      {Format::mxfp8, Direction::rowwise, ScaleLayout::blocked, 64, 0, false},
      {Format::mxfp8_e5m2, Direction::rowwise, ScaleLayout::linear, 5, 128, false},
      {Format::nvfp4, Direction::rowwise, ScaleLayout::blocked, 8, 128, true},
      {Format::mxfp4, Direction::rowwise, ScaleLayout::blocked, 64, 32, false},
  };
  for (DType t : {DType::bf16, DType::fp16})
    for (const Case& c : cases)
      for (SwigluLayout l : {SwigluLayout::concatenated, SwigluLayout::interleaved}) {
        const int64_t M = rng.uniform(128, quick ? 400 : 1500);
        const int64_t F = 8 * rng.uniform(16, quick ? 40 : 100);
        const int64_t stride = rng.uniform(0, 1) ? 2 * F + 8 * rng.uniform(1, 4) : 0;
        const SwigluVariant v = rng.uniform(0, 1) ? SwigluVariant::clamped : SwigluVariant::silu;
        check_case(rng, t, c, v, l, rng.uniform(0, 1) == 1, M, F, stride, 0, false);
      }
}

// The backward of concatenated h whose halves are whole 128-column tiles, in both directions: one
// CTA makes the d_gate tile and the d_up tile of the same pairs (full tiles from one computation,
// the tails of tensors and groups chunk by chunk), with and without token groups, and with pads
// that split the directions into two launches (then unpaired).
TEST(SwigluCuda, BackwardOfHalvesInWholeTilesMatchesTheCpuBackend) {
  MXQ_FRESH_RNG(rng);
  const bool quick = quick_mode();
  const Case cases[] = {
      {Format::mxfp8, Direction::both, ScaleLayout::blocked, 8, 32, false},
      {Format::mxfp8, Direction::both, ScaleLayout::blocked, 0, 0, false},
      {Format::mxfp8, Direction::both, ScaleLayout::linear, 64, 0, false},
      {Format::mxfp8_e5m2, Direction::both, ScaleLayout::blocked, 5, 128, false},
      {Format::mxfp4, Direction::both, ScaleLayout::blocked, 8, 32, false},
      {Format::nvfp4, Direction::both, ScaleLayout::blocked, 8, 128, true},
      {Format::nvfp4, Direction::both, ScaleLayout::linear, 0, 0, true},
  };
  for (DType t : {DType::bf16, DType::fp16})
    for (const Case& c : cases)
      for (SwigluVariant v : {SwigluVariant::silu, SwigluVariant::clamped}) {
        int64_t M = quick ? rng.uniform(1, 400) : rng.uniform(1, 1500);
        const bool fp4 = c.format == Format::mxfp4 || c.format == Format::nvfp4;
        if (fp4 && c.pad == 0) M += M % 2;
        const int64_t F = 128 * rng.uniform(1, quick ? 3 : 6);
        const int64_t stride = rng.uniform(0, 1) ? 2 * F + 8 * rng.uniform(1, 4) : 0;  // rows of whole 16 bytes
        check_case(rng, t, c, v, SwigluLayout::concatenated, rng.uniform(0, 1) == 1, M, F, stride, 0, true);
      }
  // Pads whose tiles differ between the directions: two launches, unpaired.
  const Case split{Format::mxfp8, Direction::both, ScaleLayout::blocked, 8, 0, false, 256};
  check_case(rng, DType::bf16, split, SwigluVariant::silu, SwigluLayout::concatenated, false, 700, 256, 0, 0, true);
}

TEST(SwigluCuda, Fp32NeedsTheComputedBufferAndEmptyInputsRun) {
  DeviceBuffer h(64 * 4), data(64), scales(4096);
  SwigluArgs a;
  a.input = {h.get(), DType::fp32, 1, 1, 64, 0, 0};
  a.params.layout = ScaleLayout::linear;
  a.out.row_data = data.get();
  a.out.row_scales = scales.get();
  a.backend = Backend::cuda;
  EXPECT_TRUE(swiglu_needs_computed(a, Backend::cuda));
  EXPECT_FALSE(swiglu_needs_computed(a, Backend::cpu));
  const Status s = swiglu_quantize(a);
  EXPECT_EQ(s.code(), Code::unsupported);
  EXPECT_NE(s.message().find("needs activation"), std::string::npos) << s.message();
  SwigluArgs b = a;  // bf16 h is quantized as it is computed
  b.input.dtype = DType::bf16;
  EXPECT_FALSE(swiglu_needs_computed(b, Backend::cuda));
  b.params.format = Format::nvfp4;  // unless nvfp4 must reduce the amax of a first
  EXPECT_TRUE(swiglu_needs_computed(b, Backend::cuda));
  a.input.rows = 0;
  EXPECT_TRUE(swiglu_quantize(a).ok());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace mxq::test
