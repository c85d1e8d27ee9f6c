// The cuda quantize (MXFP8 e4m3 / e5m2) equals the cpu reference byte for byte on every shape
// class, dtype, rule, layout and direction; every output byte is written.
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

constexpr DType kDTypes[] = {DType::bf16, DType::fp16, DType::fp32};
constexpr Format kFormats[] = {Format::mxfp8, Format::mxfp8_e5m2};
constexpr ScaleRule kRules[] = {ScaleRule::rceil, ScaleRule::floor};
constexpr ScaleLayout kLayouts[] = {ScaleLayout::linear, ScaleLayout::blocked};

QuantizeParams params(Format f, ScaleRule r, ScaleLayout l) {
  QuantizeParams p;
  p.format = f;
  p.rule = r;
  p.layout = l;
  return p;
}

TEST(CudaQuantize, ShapeGridEveryDtypeAndLayout) {
  MXQ_FRESH_RNG(rng);
  const int64_t Ms[] = {0, 1, 3, 31, 33, 127, 129, 1025};
  const int64_t Ks[] = {16, 32, 48, 96, 160, 1568, 7168};
  for (int64_t M : Ms) {
    for (int64_t K : Ks) {
      if (quick_mode() && M * K > 50000) continue;
      for (DType t : kDTypes) {
        for (ScaleLayout l : kLayouts) {
          // Format and rule vary at random; SpecialValues below covers their full cross product.
          const Format f = kFormats[rng.uniform(0, 1)];
          const ScaleRule r = kRules[rng.uniform(0, 1)];
          const HostTensor h =
              rng.uniform(0, 1) ? normal_tensor(rng, t, 1, M, K) : special_tensor(rng, t, 1, M, K, 0.002);
          expect_cuda_matches_cpu(h, params(f, r, l));
        }
      }
    }
  }
}

TEST(CudaQuantize, SpecialValuesEveryFormatAndRule) {
  MXQ_FRESH_RNG(rng);
  for (DType t : kDTypes) {
    for (Format f : kFormats) {
      for (ScaleRule r : kRules) {
        for (ScaleLayout l : kLayouts) {
          // Sparse specials (mostly finite blocks with extremes) and dense ones (poisoned blocks).
          expect_cuda_matches_cpu(special_tensor(rng, t, 1, 257, 320, 0.01), params(f, r, l));
          expect_cuda_matches_cpu(special_tensor(rng, t, 1, 130, 96, 0.5), params(f, r, l));
          expect_cuda_matches_cpu(finite_special_tensor(rng, t, 1, 256, 256, 0.3), params(f, r, l));
        }
      }
    }
  }
}

TEST(CudaQuantize, StridedAndUnalignedInputs) {
  MXQ_FRESH_RNG(rng);
  for (DType t : kDTypes) {
    for (ScaleLayout l : kLayouts) {
      const QuantizeParams p = params(kFormats[rng.uniform(0, 1)], kRules[rng.uniform(0, 1)], l);
      // Full tiles with 16-byte aligned strides (fast path) and with odd strides (fallback).
      expect_cuda_matches_cpu(normal_tensor(rng, t, 1, 256, 256, 264), p, 0);
      expect_cuda_matches_cpu(normal_tensor(rng, t, 1, 256, 256, 261), p, 0);
      // Base pointer 2 bytes off alignment, with and without strides, 2-D and 3-D.
      expect_cuda_matches_cpu(normal_tensor(rng, t, 1, 256, 384), p, 2);
      expect_cuda_matches_cpu(normal_tensor(rng, t, 1, 131, 200, 213), p, 2);
      expect_cuda_matches_cpu(normal_tensor(rng, t, 3, 131, 200, 213, 131 * 213 + 7), p, 2);
      expect_cuda_matches_cpu(normal_tensor(rng, t, 2, 256, 128, 136, 256 * 136 + 8), p, 0);
    }
  }
}

TEST(CudaQuantize, ExpertWeights3D) {
  MXQ_FRESH_RNG(rng);
  for (ScaleLayout l : kLayouts) {
    expect_cuda_matches_cpu(normal_tensor(rng, DType::bf16, 3, 160, 96), params(Format::mxfp8, ScaleRule::rceil, l));
    expect_cuda_matches_cpu(normal_tensor(rng, DType::fp32, 4, 129, 257),
                            params(Format::mxfp8_e5m2, ScaleRule::floor, l));
  }
  if (quick_mode()) return;
  expect_cuda_matches_cpu(normal_tensor(rng, DType::bf16, 8, 7168, 2048),
                          params(Format::mxfp8, ScaleRule::rceil, ScaleLayout::blocked));
}

TEST(CudaQuantize, LargeTokens) {
  if (quick_mode()) GTEST_SKIP() << "MXQ_TEST_QUICK";
  MXQ_FRESH_RNG(rng);
  expect_cuda_matches_cpu(normal_tensor(rng, DType::bf16, 1, 32768, 7168),
                          params(Format::mxfp8, ScaleRule::floor, ScaleLayout::blocked));
}

}  // namespace
}  // namespace mxq::test
