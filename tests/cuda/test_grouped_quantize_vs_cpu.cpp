// Grouped quantize on the cuda backend (token groups along M for rowwise, along K for colwise,
// fused padding, both directions from one read) equals the cpu backend byte for byte, padded
// offsets included: jagged random groups with the edge sizes, G up to 1500 (several chunks of the
// device-side walk), linear and blocked scales, bad offsets (clamped alike), CUDA graph replay with
// new offsets written into the same device buffer. Every output byte is written (two poisons).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

constexpr DType kDTypes[] = {DType::bf16, DType::fp16, DType::fp32};
constexpr Format kFormats[] = {Format::mxfp8, Format::mxfp8_e5m2};
constexpr ScaleRule kRules[] = {ScaleRule::rceil, ScaleRule::floor};

struct Padding {
  int32_t rowwise, colwise;
};
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
  std::vector<int32_t> ends;
  int64_t end = 0;
  for (int64_t g = 0; g < G; ++g) {
    end += sizes[size_t(rng.uniform(0, int64_t(sizes.size()) - 1))];
    ends.push_back(int32_t(end));
  }
  *M = end + (rng.uniform(0, 1) ? rng.uniform(0, 40) : 0);  // sometimes rows past the last end
  return ends;
}

QuantizeRequest request(Format f, ScaleRule r, ScaleLayout l, const std::vector<int32_t>& ends, Padding pad) {
  QuantizeRequest q;
  q.params.format = f;
  q.params.rule = r;
  q.params.layout = l;
  q.params.direction = Direction::both;
  q.ends = ends;
  q.pad_rowwise = pad.rowwise;
  q.pad_colwise = pad.colwise;
  q.backend = Backend::cpu;
  return q;
}

std::vector<uint8_t> int_bytes(const std::vector<int32_t>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The device side of one grouped quantize call: input, offsets and outputs.
struct DeviceGroupedCall {
  DeviceTensor in;
  DeviceBuffer ends;
  QuantizeArgs args;
  QuantizeSizes sizes;
  DeviceOutputs out;
  DeviceBuffer padded_starts, padded_ends;

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
      : in(h, offset), ends(req.ends.size() * 4), args(args_of(in.view, req, nullptr)),
        sizes(sizes_of(args_of(in.view, req, req.ends.data()))), out(sizes),
        padded_starts(size_t(sizes.padded_offset_count) * 4), padded_ends(size_t(sizes.padded_offset_count) * 4) {
    ends.upload(req.ends.data(), req.ends.size() * 4);
    args.groups.groups.ends = reinterpret_cast<const int32_t*>(ends.get());
    args.out = out.outputs(req.params.direction);
    args.out.padded_starts = reinterpret_cast<int32_t*>(padded_starts.get());
    args.out.padded_ends = reinterpret_cast<int32_t*>(padded_ends.get());
  }
  void poison(uint8_t pattern) const {
    out.fill(pattern);
    padded_starts.fill(pattern);
    padded_ends.fill(pattern);
  }
  QuantizeResult download() const {
    QuantizeResult r = out.download(sizes);
    r.padded_starts.resize(size_t(sizes.padded_offset_count));
    r.padded_ends.resize(size_t(sizes.padded_offset_count));
    const std::vector<uint8_t> s = padded_starts.download(), e = padded_ends.download();
    if (!s.empty()) std::memcpy(r.padded_starts.data(), s.data(), s.size());
    if (!e.empty()) std::memcpy(r.padded_ends.data(), e.data(), e.size());
    return r;
  }
};

// Runs one direction on the device twice (two poisons): every byte written; returns the outputs.
QuantizeResult run_cuda_grouped(const HostTensor& h, const QuantizeRequest& req, size_t offset = 0) {
  DeviceGroupedCall call(h, req, offset);
  QuantizeResult r[2];
  const uint8_t patterns[2] = {kPoisonA, kPoisonB};
  for (int i = 0; i < 2; ++i) {
    call.poison(patterns[i]);
    const Status q = quantize(call.args);
    EXPECT_TRUE(q.ok()) << q.message();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    r[i] = call.download();
  }
  EXPECT_TRUE(every_byte_written(r[0].row_data, r[1].row_data, "cuda row_data"));
  EXPECT_TRUE(every_byte_written(r[0].row_scales, r[1].row_scales, "cuda row_scales"));
  EXPECT_TRUE(every_byte_written(r[0].col_data, r[1].col_data, "cuda col_data"));
  EXPECT_TRUE(every_byte_written(r[0].col_scales, r[1].col_scales, "cuda col_scales"));
  EXPECT_TRUE(every_byte_written(int_bytes(r[0].padded_starts), int_bytes(r[1].padded_starts), "cuda padded_starts"));
  EXPECT_TRUE(every_byte_written(int_bytes(r[0].padded_ends), int_bytes(r[1].padded_ends), "cuda padded_ends"));
  return r[0];
}

void expect_direction_equal(const QuantizeResult& cpu, const QuantizeResult& gpu, Direction d) {
  if (has_rowwise(d)) {
    EXPECT_TRUE(bytes_equal(cpu.row_data, gpu.row_data, "row_data"));
    EXPECT_TRUE(bytes_equal(cpu.row_scales, gpu.row_scales, "row_scales"));
  }
  if (has_colwise(d)) {
    EXPECT_TRUE(bytes_equal(cpu.col_data, gpu.col_data, "col_data"));
    EXPECT_TRUE(bytes_equal(cpu.col_scales, gpu.col_scales, "col_scales"));
  }
  EXPECT_TRUE(bytes_equal(int_bytes(cpu.padded_starts), int_bytes(gpu.padded_starts), "padded_starts"));
  EXPECT_TRUE(bytes_equal(int_bytes(cpu.padded_ends), int_bytes(gpu.padded_ends), "padded_ends"));
}

std::string describe(const HostTensor& h, const QuantizeRequest& q) {
  std::string s = "dtype " + std::to_string(int(h.dtype)) + " M " + std::to_string(h.rows) + " K " +
                  std::to_string(h.cols) + " format " + std::to_string(int(q.params.format)) + " rule " +
                  std::to_string(int(q.params.rule)) + " layout " + std::to_string(int(q.params.layout)) +
                  " pad " + std::to_string(q.pad_rowwise) + "/" + std::to_string(q.pad_colwise) + " ends";
  for (size_t i = 0; i < q.ends.size() && i < 64; ++i) s += " " + std::to_string(q.ends[i]);
  if (q.ends.size() > 64) s += " ...";
  return s;
}

// The cpu backend once with both directions; the cuda backend rowwise, colwise and both.
void expect_grouped_matches_cpu(const HostTensor& h, QuantizeRequest req, size_t offset = 0) {
  SCOPED_TRACE(describe(h, req));
  const QuantizeResult cpu = run_quantize(h, req);
  for (Direction d : {Direction::rowwise, Direction::colwise, Direction::both}) {
    SCOPED_TRACE(::testing::Message() << "cuda direction " << int(d));
    req.params.direction = d;
    req.backend = Backend::cuda;
    expect_direction_equal(cpu, run_cuda_grouped(h, req, offset), d);
  }
}

TEST(CudaGroupedQuantize, JaggedGroupsEveryDimAndGroupCount) {
  MXQ_FRESH_RNG(rng);
  const int64_t budget = quick_mode() ? 40000 : 3000000;  // elements per case
  for (int64_t K : {7, 160, 2048, 7168}) {
    for (int64_t G : {1, 4, 8, 16, 64, 256}) {
      if (quick_mode() && G > 16) continue;
      const int64_t max_rows = std::max<int64_t>(budget / K, 2 * G);
      for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
        // Dtype, format, rule and two of the paddings vary at random; the edge cases below are fixed.
        for (int rep = 0; rep < 2; ++rep) {
          int64_t M = 0;
          const std::vector<int32_t> ends = jagged_ends(rng, G, max_rows, &M);
          const DType t = kDTypes[rng.uniform(0, 2)];
          const HostTensor h = rng.uniform(0, 3) ? normal_tensor(rng, t, 1, M, K) : special_tensor(rng, t, 1, M, K, 0.01);
          const Padding pad = kPaddings[rng.uniform(0, int64_t(std::size(kPaddings)) - 1)];
          expect_grouped_matches_cpu(h, request(kFormats[rng.uniform(0, 1)], kRules[rng.uniform(0, 1)], l, ends, pad));
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
        int64_t M = 0;
        const std::vector<int32_t> ends = jagged_ends(rng, 8, 1400, &M);
        const HostTensor h = normal_tensor(rng, kDTypes[rng.uniform(0, 2)], 1, M, 288);
        expect_grouped_matches_cpu(h, request(f, kRules[rng.uniform(0, 1)], l, ends, pad));
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
      expect_grouped_matches_cpu(h, request(Format::mxfp8, ScaleRule::rceil, ScaleLayout::blocked, ends, pad));
    }
  }
}

// Enough row tiles that each CTA takes a strip of several column tiles (the launcher deals 8
// CTAs per SM).
TEST(CudaGroupedQuantize, LargeTensorsUseStripsOfColumnTiles) {
  if (quick_mode()) GTEST_SKIP() << "large shapes";
  MXQ_FRESH_RNG(rng);
  const std::vector<int32_t> ends = random_group_ends(rng, 40000, 8, 1, 77);
  const HostTensor h = normal_tensor(rng, DType::bf16, 1, 40000, 2048);
  for (Padding pad : {Padding{32, 0}, Padding{0, 32}}) {
    expect_grouped_matches_cpu(h, request(Format::mxfp8, ScaleRule::rceil, ScaleLayout::blocked, ends, pad));
  }
}

TEST(CudaGroupedQuantize, EmptyGroupsNoRowsAndAllRowsPastTheLastEnd) {
  MXQ_FRESH_RNG(rng);
  for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
    for (Padding pad : {Padding{0, 0}, Padding{32, 32}}) {
      const auto req = [&](std::vector<int32_t> ends) {
        return request(Format::mxfp8, ScaleRule::rceil, l, ends, pad);
      };
      expect_grouped_matches_cpu(normal_tensor(rng, DType::bf16, 1, 0, 64), req({0, 0, 0, 0}));
      expect_grouped_matches_cpu(normal_tensor(rng, DType::bf16, 1, 300, 96), req({0, 0, 0}));
      expect_grouped_matches_cpu(normal_tensor(rng, DType::bf16, 1, 300, 96), req({0, 0, 0, 300}));
      expect_grouped_matches_cpu(normal_tensor(rng, DType::bf16, 1, 256, 256), req({128, 256}));
    }
  }
}

// Offsets that are not monotone, negative or past M are clamped alike by both backends.
TEST(CudaGroupedQuantize, BadOffsetsAreClampedLikeTheCpu) {
  MXQ_FRESH_RNG(rng);
  const std::vector<std::vector<int32_t>> bad = {
      {40, 10, 500, 3, 200}, {-5, 100, 99, 1 << 30}, {260, 260, 7, -1}, {0x7FFFFFFF, 12}};
  for (const auto& ends : bad) {
    for (Padding pad : {Padding{0, 0}, Padding{32, 32}, Padding{0, 256}}) {
      for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
        const HostTensor h = normal_tensor(rng, DType::bf16, 1, 260, 160);
        expect_grouped_matches_cpu(h, request(Format::mxfp8_e5m2, ScaleRule::floor, l, ends, pad));
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
      const QuantizeRequest q = request(Format::mxfp8, ScaleRule::rceil, ScaleLayout::blocked, ends, pad);
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
  for (Padding pad : {Padding{32, 0}, Padding{0, 32}, Padding{32, 32}}) {
    QuantizeRequest req = request(Format::mxfp8, ScaleRule::rceil, ScaleLayout::blocked,
                                  random_group_ends(rng, M, G, 1, 5), pad);
    req.backend = Backend::cuda;
    DeviceGroupedCall call(h, req);
    cudaStream_t stream;
    MXQ_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    call.args.stream = stream;
    cudaGraph_t graph;
    MXQ_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const Status st = quantize(call.args);
    MXQ_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    ASSERT_TRUE(st.ok()) << st.message();
    cudaGraphExec_t exec;
    MXQ_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 4; ++replay) {
      SCOPED_TRACE(::testing::Message() << "pad " << pad.rowwise << "/" << pad.colwise << " replay " << replay);
      req.ends = replay == 3 ? std::vector<int32_t>{900, 10, 1 << 20, 5, 999, 0, 1000, 3}  // clamped
                             : random_group_ends(rng, M, G, replay == 0 ? 1 : 32, replay);
      call.ends.upload(req.ends.data(), req.ends.size() * 4);
      call.poison(uint8_t(kPoisonA + replay));
      MXQ_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      MXQ_CUDA_CHECK(cudaStreamSynchronize(stream));
      QuantizeRequest cpu_req = req;
      cpu_req.params.direction = Direction::both;
      cpu_req.backend = Backend::cpu;
      expect_direction_equal(run_quantize(h, cpu_req), call.download(), Direction::both);
    }
    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
    EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
}

}  // namespace
}  // namespace mxq::test
