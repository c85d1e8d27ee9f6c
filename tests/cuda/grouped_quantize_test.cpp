// Grouped quantize on the cuda backend (token groups along M for rowwise, along K for colwise,
// fused padding, both directions from one read) equals the cpu backend byte for byte, padded
// offsets included: jagged random groups with the edge sizes, G up to 1500 (several chunks of the
// device-side walk), linear and blocked scales, bad offsets (clamped alike), CUDA graph replay with
// new offsets written into the same device buffer. Every output byte is written (two poisons).
// FP4 formats pack two codes per byte along the grouped dimension of the colwise data, so their
// cases keep every group size and M even (docs/spec.md: groups along K are multiples of 32 unless padded).
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

constexpr DType kDTypes[] = {DType::bf16, DType::fp16, DType::fp32};
constexpr Format kFormats[] = {Format::mxfp8, Format::mxfp8_e5m2, Format::mxfp4, Format::nvfp4};
constexpr ScaleRule kRules[] = {ScaleRule::rceil, ScaleRule::floor};

// Unpadded; fused pad + rowwise; colwise padded to the block (weight gradient); both padded; an
// alignment that is not a multiple of the block; one above 128 on one direction only (the
// directions then need different row tiles per group).
constexpr Padding kPaddings[] = {{0, 0}, {32, 0}, {0, 32}, {32, 32}, {16, 16}, {128, 0}, {0, 256}, {64, 64}};

// Group sizes with every edge of the block and tile arithmetic, scaled down to fit max_rows.
std::vector<int32_t> jagged_ends(Rng& rng, int64_t G, int64_t max_rows, int64_t* M) {
  static const std::vector<int64_t> kFull = {0, 1, 31, 33, 127, 129, 128, 256, 384, 32, 200};
  static const std::vector<int64_t> kMedium = {0, 1, 31, 33, 127, 129, 128, 64};
  static const std::vector<int64_t> kSmall = {0, 1, 3, 31, 32, 33};
  static const std::vector<int64_t> kTiny = {0, 1, 2};
  const int64_t per_group = max_rows / G;
  const auto& sizes = per_group >= 250 ? kFull : per_group >= 90 ? kMedium : per_group >= 20 ? kSmall : kTiny;
  std::vector<int32_t> ends = ends_of_random_sizes(rng, G, sizes);
  // Sometimes rows past the last end.
  *M = (ends.empty() ? 0 : ends.back()) + (rng.uniform(0, 1) ? rng.uniform(0, 40) : 0);
  return ends;
}

bool is_fp4(Format f) { return f == Format::mxfp4 || f == Format::nvfp4; }

// For the fp4 formats: every group size and M rounded up to even, K too (pairs along both).
void fit_to_format(Format f, std::vector<int32_t>* ends, int64_t* M, int64_t* K) {
  if (!is_fp4(f)) return;
  int32_t shift = 0, prev = 0;
  for (int32_t& e : *ends) {
    const int32_t size = e - prev;
    prev = e;
    shift += size % 2;
    e += shift;
  }
  *M += shift + (*M + shift) % 2;
  *K += *K % 2;
}

// The device side of one grouped quantize call: input, offsets and outputs.
struct DeviceGroupedCall {
  DeviceTensor in;
  DeviceBuffer ends;
  QuantizeArgs args;
  QuantizeSizes sizes;
  DeviceOutputs out;

  static QuantizeSizes sizes_of(const QuantizeArgs& a) {
    QuantizeSizes s;
    const Status st = quantize_sizes(a, &s);
    EXPECT_TRUE(st.ok()) << st.message();
    return s;
  }
  static QuantizeArgs args_of(const TensorView& v, const QuantizeRequest& req, const int32_t* ends) {
    QuantizeArgs a;
    a.input = v;
    a.params = req.params;
    a.groups = {{ends, int64_t(req.ends.size())}, req.pad_rowwise, req.pad_colwise};
    a.backend = Backend::cuda;
    return a;
  }
  DeviceGroupedCall(const HostTensor& h, const QuantizeRequest& req, size_t offset = 0)
      : in(h, offset),
        ends(device_copy(req.ends)),
        args(args_of(in.view, req, reinterpret_cast<const int32_t*>(ends.get()))),
        sizes(sizes_of(args_of(in.view, req, req.ends.data()))),
        out(sizes) {
    args.out = out.outputs(req.params.direction);
  }
};

// Runs one direction on the device twice (two poisons): every byte written; returns the outputs.
QuantizeResult run_cuda_grouped(const HostTensor& h, const QuantizeRequest& req, size_t offset = 0) {
  const DeviceGroupedCall call(h, req, offset);
  return quantize_poisoned_twice(call.args, call.out, call.sizes);
}

std::string describe(const HostTensor& h, const QuantizeRequest& q) {
  std::string s = "dtype " + std::to_string(int(h.dtype)) + " M " + std::to_string(h.rows) + " K " +
                  std::to_string(h.cols) + " format " + std::to_string(int(q.params.format)) + " rule " +
                  std::to_string(int(q.params.rule)) + " layout " + std::to_string(int(q.params.layout)) + " pad " +
                  std::to_string(q.pad_rowwise) + "/" + std::to_string(q.pad_colwise) + " ends";
  for (size_t i = 0; i < q.ends.size() && i < 64; ++i) s += " " + std::to_string(q.ends[i]);
  if (q.ends.size() > 64) s += " ...";
  return s;
}

constexpr Direction kAllDirections[] = {Direction::rowwise, Direction::colwise, Direction::both};

// The cpu backend once with both directions; the cuda backend in each of `directions`.
template <size_t N = 3>
void expect_grouped_matches_cpu(const HostTensor& h, QuantizeRequest req, size_t offset = 0,
                                const Direction (&directions)[N] = kAllDirections) {
  SCOPED_TRACE(describe(h, req));
  const QuantizeResult cpu = run_quantize(h, req);
  for (Direction d : directions) {
    SCOPED_TRACE(::testing::Message() << "cuda direction " << int(d));
    req.params.direction = d;
    req.backend = Backend::cuda;
    expect_outputs_equal(cpu, run_cuda_grouped(h, req, offset), d);
  }
}

TEST(CudaGroupedQuantize, JaggedGroupsEveryDimAndGroupCount) {
  MXQ_FRESH_RNG(rng);
  const int64_t budget = quick_mode() ? 40000 : 3000000;  // elements per case
  for (int64_t K : {7, 160, 2048, 7168}) {
    // 40 and 64: the one-warp walk (two groups per lane) on part of its lanes and on all of them;
    // 65 and 256: the block walk (group_tiles.cuh).
    for (int64_t G : {1, 4, 8, 16, 40, 64, 65, 256}) {
      if (quick_mode() && G > 16 && G != 40 && G != 65) continue;
      const int64_t max_rows = std::max<int64_t>(budget / K, 2 * G);
      for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
        // Dtype, format, rule and two of the paddings vary at random; the edge cases below are fixed.
        for (int rep = 0; rep < 2; ++rep) {
          int64_t M = 0, cols = K;
          std::vector<int32_t> ends = jagged_ends(rng, G, max_rows, &M);
          const Format f = kFormats[rng.uniform(0, int64_t(std::size(kFormats)) - 1)];
          fit_to_format(f, &ends, &M, &cols);
          const DType t = kDTypes[rng.uniform(0, 2)];
          const HostTensor h =
              rng.uniform(0, 3) ? normal_tensor(rng, t, 1, M, cols) : special_tensor(rng, t, 1, M, cols, 0.01);
          const Padding pad = kPaddings[rng.uniform(0, int64_t(std::size(kPaddings)) - 1)];
          const QuantizeRequest req = grouped_request(f, kRules[rng.uniform(0, 1)], l, ends, pad);
          expect_grouped_matches_cpu(h, req);
        }
      }
    }
  }
}

TEST(CudaGroupedQuantize, EveryPaddingFormatAndLayout) {
  MXQ_FRESH_RNG(rng);
  for (Padding pad : kPaddings) {
    for (Format f : kFormats) {
      for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
        int64_t M = 0, K = 288;
        std::vector<int32_t> ends = jagged_ends(rng, 8, 1400, &M);
        fit_to_format(f, &ends, &M, &K);
        const HostTensor h = normal_tensor(rng, kDTypes[rng.uniform(0, 2)], 1, M, K);
        expect_grouped_matches_cpu(h, grouped_request(f, kRules[rng.uniform(0, 1)], l, ends, pad));
      }
    }
  }
}

TEST(CudaGroupedQuantize, ManyGroupsSpanSeveralChunksOfTheWalk) {
  MXQ_FRESH_RNG(rng);
  for (int64_t G : {1024, 1500}) {
    if (quick_mode() && G > 1024) continue;
    int64_t M = 0;
    const std::vector<int32_t> ends = jagged_ends(rng, G, 3 * G, &M);
    for (Padding pad : {Padding{0, 0}, Padding{32, 32}, Padding{0, 32}}) {
      const HostTensor h = normal_tensor(rng, DType::bf16, 1, M, 160);
      expect_grouped_matches_cpu(h, grouped_request(Format::mxfp8, ScaleRule::rceil, ScaleLayout::blocked, ends, pad));
    }
  }
}

// Many row tiles: with 8 groups CTAs take one row tile each (the one-tile kernel; FP4 colwise
// alone takes strips at this size), with 96 groups (more than the one-warp walk takes) colwise
// CTAs take strips of several row tiles; rowwise alone takes tiles of the input rows.
TEST(CudaGroupedQuantize, LargeTensorsUseOneTileOrStripsOfRowTiles) {
  if (quick_mode()) GTEST_SKIP() << "large shapes";
  MXQ_FRESH_RNG(rng);
  const HostTensor h = normal_tensor(rng, DType::bf16, 1, 40000, 2048);
  for (int64_t G : {8, 96}) {
    const std::vector<int32_t> ends = random_group_ends(rng, 40000, G, 2, 78);
    for (Format f : kFormats) {
      for (Padding pad : {Padding{32, 0}, Padding{0, 32}}) {
        expect_grouped_matches_cpu(h, grouped_request(f, ScaleRule::rceil, ScaleLayout::blocked, ends, pad));
      }
    }
  }
}

// Colwise alone with groups along K padded to a multiple of 32 (8-bit codes, 16-bit input, up to
// 64 groups) runs on windows of input rows (col_windows_kernel.cuh) when the groups are small
// (on GPUs with slow memory per SM also long groups in small grids; one group, G = 1 here, on
// windows of 128 rows in small grids), as most are here (every case with
// MXQ_GROUPED_COLWISE=windows, the _windows ctest): groups of a few rows put many blocks, padding
// blocks and group boundaries into one window (several rounds of its output tile); partial column
// tiles, rows past the last end, special values.
TEST(CudaGroupedQuantize, ColwiseWindowsEveryBoundaryAndPadding) {
  MXQ_FRESH_RNG(rng);
  const Direction colwise[] = {Direction::colwise};
  for (int64_t G : {1, 5, 64}) {
    for (int64_t K : {7, 160, 300}) {
      for (int32_t pad : {32, 64, 128, 256}) {
        for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
          int64_t M = 0;
          const std::vector<int32_t> ends = jagged_ends(rng, G, G == 64 ? 64 * 40 : 1500, &M);
          const DType t = rng.uniform(0, 1) ? DType::bf16 : DType::fp16;
          const HostTensor h =
              rng.uniform(0, 3) ? normal_tensor(rng, t, 1, M, K) : special_tensor(rng, t, 1, M, K, 0.01);
          const Format f = rng.uniform(0, 1) ? Format::mxfp8 : Format::mxfp8_e5m2;
          expect_grouped_matches_cpu(h, grouped_request(f, kRules[rng.uniform(0, 1)], l, ends, {0, pad}), 0, colwise);
        }
      }
    }
  }
}

// Few groups for the rows (one row tile per CTA) but more than the one-warp walk takes: the
// one-tile kernel behind the CTA's block walk; a partial column tile.
TEST(CudaGroupedQuantize, OneTilePerCtaWithTheBlockWalk) {
  MXQ_FRESH_RNG(rng);
  const int64_t M = 65536, G = 100;
  const HostTensor h = normal_tensor(rng, DType::bf16, 1, M, 72);
  const std::vector<int32_t> ends = random_group_ends(rng, M, G, 32, 40);
  for (Format f : {Format::mxfp8, Format::nvfp4}) {
    for (Padding pad : {Padding{0, 0}, Padding{32, 32}}) {
      expect_grouped_matches_cpu(h, grouped_request(f, ScaleRule::rceil, ScaleLayout::blocked, ends, pad));
    }
  }
}

// Rowwise alone with more tiles than 16 rounds of CTAs on GPUs of up to 160 SMs: the strips of
// group-local tiles (fewer tiles take tiles of the input rows, as every other test here does).
TEST(CudaGroupedQuantize, LargeRowwiseUsesStripsOfGroupTiles) {
  if (quick_mode()) GTEST_SKIP() << "large shapes";
  MXQ_FRESH_RNG(rng);
  const std::vector<int32_t> ends = random_group_ends(rng, 12288, 16, 2, 78);
  const HostTensor h = normal_tensor(rng, DType::bf16, 1, 12288, 14336);
  const Direction rowwise[] = {Direction::rowwise};
  for (Format f : {Format::mxfp8, Format::nvfp4}) {
    for (Padding pad : {Padding{0, 0}, Padding{32, 0}}) {
      expect_grouped_matches_cpu(h, grouped_request(f, ScaleRule::rceil, ScaleLayout::blocked, ends, pad), 0, rowwise);
    }
  }
}

TEST(CudaGroupedQuantize, EmptyGroupsNoRowsAndAllRowsPastTheLastEnd) {
  MXQ_FRESH_RNG(rng);
  for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
    for (Padding pad : {Padding{0, 0}, Padding{32, 32}}) {
      for (const EmptyGroupsCase& c : kEmptyGroupsCases) {
        expect_grouped_matches_cpu(normal_tensor(rng, DType::bf16, 1, c.rows, c.cols),
                                   grouped_request(Format::mxfp8, ScaleRule::rceil, l, c.ends, pad));
      }
    }
  }
}

// Offsets that are not monotone, negative or past M are clamped alike by both backends.
TEST(CudaGroupedQuantize, BadOffsetsAreClampedLikeTheCpu) {
  MXQ_FRESH_RNG(rng);
  for (const auto& ends : kBadGroupEnds) {
    for (Padding pad : {Padding{0, 0}, Padding{32, 32}, Padding{0, 256}}) {
      for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
        const HostTensor h = normal_tensor(rng, DType::bf16, 1, 260, 160);
        expect_grouped_matches_cpu(h, grouped_request(Format::mxfp8_e5m2, ScaleRule::floor, l, ends, pad));
      }
    }
  }
}

TEST(CudaGroupedQuantize, StridedAndUnalignedInputs) {
  MXQ_FRESH_RNG(rng);
  int64_t M = 0;
  const std::vector<int32_t> ends = jagged_ends(rng, 6, 900, &M);
  for (DType t : kDTypes) {
    for (Padding pad : {Padding{0, 0}, Padding{32, 32}}) {
      const QuantizeRequest q = grouped_request(Format::mxfp8, ScaleRule::rceil, ScaleLayout::blocked, ends, pad);
      expect_grouped_matches_cpu(normal_tensor(rng, t, 1, M, 256, 264), q, 0);
      expect_grouped_matches_cpu(normal_tensor(rng, t, 1, M, 200, 213), q, 2);
    }
  }
}

// A captured grouped quantize replays with offsets rewritten in the same device buffer; each
// replay equals the cpu backend on the offsets of that replay.
TEST(CudaGroupedQuantize, GraphReplayWithNewOffsets) {
  MXQ_FRESH_RNG(rng);
  const int64_t M = 1000, K = 256, G = 8;
  const HostTensor h = normal_tensor(rng, DType::bf16, 1, M, K);
  struct Case {
    Format format;
    Padding pad;
  };
  // nvfp4 also captures the device-side tensor amax; padded both ways, any group size is legal.
  for (const Case& c : {Case{Format::mxfp8, {32, 0}}, Case{Format::mxfp8, {0, 32}}, Case{Format::mxfp8, {32, 32}},
                        Case{Format::nvfp4, {32, 32}}}) {
    const Padding pad = c.pad;
    QuantizeRequest req =
        grouped_request(c.format, ScaleRule::rceil, ScaleLayout::blocked, random_group_ends(rng, M, G, 1, 5), pad);
    req.backend = Backend::cuda;
    DeviceGroupedCall call(h, req);
    CapturedGraph graph;
    call.args.stream = graph.stream();
    MXQ_CUDA_CHECK(graph.begin_capture(cudaStreamCaptureModeThreadLocal));
    const Status st = quantize(call.args);
    MXQ_CUDA_CHECK(graph.end_capture());
    ASSERT_TRUE(st.ok()) << st.message();
    for (int replay = 0; replay < 4; ++replay) {
      SCOPED_TRACE(::testing::Message() << "pad " << pad.rowwise << "/" << pad.colwise << " replay " << replay);
      req.ends = replay == 3 ? kBadGroupEndsOf1000Rows  // clamped
                             : random_group_ends(rng, M, G, replay == 0 ? 1 : 32, replay);
      call.ends.upload(req.ends.data(), req.ends.size() * 4);
      call.out.fill(uint8_t(kPoisonA + replay));
      MXQ_CUDA_CHECK(graph.replay());
      QuantizeRequest cpu_req = req;
      cpu_req.params.direction = Direction::both;
      cpu_req.backend = Backend::cpu;
      expect_outputs_equal(run_quantize(h, cpu_req), call.out.download(call.sizes), Direction::both);
    }
  }
}

}  // namespace
}  // namespace mxq::test
