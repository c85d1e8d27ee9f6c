// Scale swizzle / unswizzle on the cuda backend, byte for byte against the cpu backend: plain
// batches, groups along M and along K (jagged sizes, up to 1024 groups, clamped bad offsets), an
// unaligned blocked buffer, the torchao golden layouts, and a CUDA graph replayed with new offsets.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

std::vector<uint8_t> random_scales(Rng& rng, int64_t n) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (auto& b : v) b = uint8_t(rng.bits32() | 1);  // never 0, so padding is visible
  return v;
}

SwizzleArgs args_for(int64_t batch, int64_t rows, int64_t cols, ScaleGroups axis, const std::vector<int32_t>& ends) {
  SwizzleArgs a;
  a.batch = batch;
  a.rows = rows;
  a.cols = cols;
  a.group_axis = axis;
  a.groups = {ends.data(), int64_t(ends.size())};
  return a;
}

struct Swizzled {
  std::vector<uint8_t> blocked, linear;  // swizzle(in), unswizzle(blocked)
};

Swizzled run_cpu(SwizzleArgs a, const std::vector<uint8_t>& in) {
  a.backend = Backend::cpu;
  int64_t n = 0;
  EXPECT_TRUE(swizzle_size(a, &n).ok());
  Swizzled r{std::vector<uint8_t>(size_t(n)), std::vector<uint8_t>(in.size())};
  a.in = in.data();
  a.out = r.blocked.data();
  Status s = swizzle(a);
  EXPECT_TRUE(s.ok()) << s.message();
  s = unswizzle(a, r.linear.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return r;
}

// Runs swizzle then unswizzle of its output on the device, each over two poison patterns;
// `out_offset` bytes shift the blocked buffer off 16-byte alignment.
Swizzled run_cuda(SwizzleArgs a, const std::vector<uint8_t>& in, size_t out_offset = 0) {
  a.backend = Backend::cuda;
  int64_t n = 0;
  EXPECT_TRUE(swizzle_size(a, &n).ok());
  DeviceBuffer d_in(in.size()), d_ends(size_t(a.groups.count * 4)), d_out(size_t(n) + out_offset), d_lin(in.size());
  d_in.upload(in.data(), in.size());
  d_ends.upload(a.groups.ends, size_t(a.groups.count * 4));
  a.in = d_in.get();
  a.groups.ends = reinterpret_cast<const int32_t*>(d_ends.get());
  a.out = d_out.get() + out_offset;
  Swizzled r[2];
  const uint8_t poison[2] = {kPoisonA, kPoisonB};
  for (int k = 0; k < 2; ++k) {
    d_out.fill(poison[k]);
    d_lin.fill(poison[k]);
    Status s = swizzle(a);
    EXPECT_TRUE(s.ok()) << s.message();
    s = unswizzle(a, d_lin.get());
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    r[k] = {d_out.download(out_offset), d_lin.download()};
  }
  EXPECT_TRUE(every_byte_written(r[0].blocked, r[1].blocked, "swizzle out"));
  EXPECT_TRUE(every_byte_written(r[0].linear, r[1].linear, "unswizzle out"));
  return r[0];
}

void expect_cuda_matches_cpu(const SwizzleArgs& a, const std::vector<uint8_t>& in, size_t out_offset = 0) {
  SCOPED_TRACE(::testing::Message() << "axis " << int(a.group_axis) << " batch " << a.batch << " rows " << a.rows
                                    << " cols " << a.cols << " G " << a.groups.count << " out offset " << out_offset);
  const Swizzled cpu = run_cpu(a, in), gpu = run_cuda(a, in, out_offset);
  EXPECT_TRUE(bytes_equal(cpu.blocked, gpu.blocked, "swizzle"));
  EXPECT_TRUE(bytes_equal(cpu.linear, gpu.linear, "unswizzle"));
}

TEST(SwizzleCuda, PlainBatchesMatchCpu) {
  MXQ_FRESH_RNG(rng);
  for (int64_t batch : {1, 3})
    for (int64_t rows : {1, 31, 127, 128, 129, 300, 1000})
      for (int64_t cols : {1, 3, 4, 5, 9, 64, 257}) {
        const auto in = random_scales(rng, batch * rows * cols);
        expect_cuda_matches_cpu(args_for(batch, rows, cols, ScaleGroups::none, {}), in, rows == 129 ? 1 : 0);
      }
}

// Jagged group sizes with the padding edges (0, 1, 31, 33, 127, 129, multiples of 128).
std::vector<int32_t> jagged_ends(Rng& rng, int64_t G, int64_t max_size, int64_t* total) {
  static const std::vector<int64_t> kSizes = {0, 1, 31, 33, 127, 129, 128, 256, 3, 4, 5};
  std::vector<int32_t> ends;
  int64_t end = 0;
  for (int64_t g = 0; g < G; ++g) {
    int64_t s = kSizes[size_t(rng.uniform(0, int64_t(kSizes.size()) - 1))];
    end += s > max_size ? s % (max_size + 1) : s;
    ends.push_back(int32_t(end));
  }
  *total = end + rng.uniform(0, 2);  // sometimes rows (columns) past the last end
  return ends;
}

const int64_t kGroupCounts[] = {1, 4, 8, 16, 64, 256, 1024};

TEST(SwizzleCuda, GroupsAlongMMatchCpu) {
  MXQ_FRESH_RNG(rng);
  for (int64_t G : kGroupCounts)
    for (int64_t cols : {1, 4, 5, 57}) {
      int64_t M = 0;
      const auto ends = jagged_ends(rng, G, G > 64 ? 33 : 1000, &M);
      expect_cuda_matches_cpu(args_for(1, M, cols, ScaleGroups::along_m, ends), random_scales(rng, M * cols),
                              cols == 5 ? 3 : 0);
    }
}

TEST(SwizzleCuda, GroupsAlongKMatchCpu) {
  MXQ_FRESH_RNG(rng);
  for (int64_t G : kGroupCounts)
    for (int64_t rows : {1, 127, 300}) {
      int64_t C = 0;
      const auto ends = jagged_ends(rng, G, G > 64 ? 33 : 1000, &C);
      expect_cuda_matches_cpu(args_for(1, rows, C, ScaleGroups::along_k, ends), random_scales(rng, rows * C),
                              rows == 127 ? 1 : 0);
    }
}

TEST(SwizzleCuda, BadOffsetsAreClampedLikeCpu) {
  MXQ_FRESH_RNG(rng);
  const std::vector<std::vector<int32_t>> cases = {
      {50, 10, 400, -5, 30}, {-100, -1, 0}, {1000000, 2000000}, {2147483647, -2147483647 - 1, 64}, {99, 98, 97, 96}};
  for (const auto& ends : cases) {
    expect_cuda_matches_cpu(args_for(1, 100, 7, ScaleGroups::along_m, ends), random_scales(rng, 700));
    expect_cuda_matches_cpu(args_for(1, 7, 100, ScaleGroups::along_k, ends), random_scales(rng, 700));
  }
}

// ---- torchao golden layouts (tests/data/golden/manifest.json) --------------------------------

std::vector<uint8_t> golden_bytes(const nlohmann::json& tensor) {
  const std::string path = golden_dir() + "/" + tensor.at("file").get<std::string>();
  std::vector<uint8_t> bytes = read_file_bytes(path);
  EXPECT_FALSE(bytes.empty()) << "cannot read " << path;
  return bytes;
}

TEST(SwizzleCuda, GoldenLayouts) {
  std::ifstream f(golden_dir() + "/manifest.json");
  ASSERT_TRUE(f.good()) << "missing " << golden_dir() << "/manifest.json";
  const nlohmann::json manifest = nlohmann::json::parse(f);
  int checked = 0;
  for (const nlohmann::json& c : manifest.at("cases")) {
    const std::string op = c.at("op");
    const ScaleGroups axis = op == "swizzle"            ? ScaleGroups::none
                             : op == "swizzle_groups_m" ? ScaleGroups::along_m
                             : op == "swizzle_groups_k" ? ScaleGroups::along_k
                                                        : ScaleGroups(-1);
    if (int(axis) < 0) continue;
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto shape = c.at("input").at("shape").get<std::vector<int64_t>>();
    const std::vector<uint8_t> in = golden_bytes(c.at("input")), want = golden_bytes(c.at("output"));
    std::vector<int32_t> ends;
    if (axis != ScaleGroups::none) {
      const std::vector<uint8_t> e = golden_bytes(c.at("ends"));
      ends.resize(e.size() / 4);
      std::memcpy(ends.data(), e.data(), ends.size() * 4);
    }
    const Swizzled gpu = run_cuda(args_for(1, shape[0], shape[1], axis, ends), in);
    EXPECT_TRUE(bytes_equal(want, gpu.blocked, "swizzle vs golden"));
    EXPECT_TRUE(bytes_equal(in, gpu.linear, "unswizzle vs input"));
    ++checked;
  }
  EXPECT_GE(checked, 9);
}

// swizzle + unswizzle with groups along M captured once; replays read new offsets from the buffer.
TEST(SwizzleCuda, GraphReplayReadsNewOffsets) {
  MXQ_FRESH_RNG(rng);
  constexpr int64_t M = 1000, C = 9, G = 8;
  const auto in = random_scales(rng, M * C);
  std::vector<int32_t> ends(G);
  SwizzleArgs a = args_for(1, M, C, ScaleGroups::along_m, ends);
  int64_t n = 0;
  ASSERT_TRUE(swizzle_size(a, &n).ok());
  DeviceBuffer d_in(in.size()), d_ends(G * 4), d_out(static_cast<size_t>(n)), d_lin(in.size());
  d_in.upload(in.data(), in.size());
  CapturedGraph graph;
  SwizzleArgs d = a;
  d.in = d_in.get();
  d.groups.ends = reinterpret_cast<const int32_t*>(d_ends.get());
  d.out = d_out.get();
  d.backend = Backend::cuda;
  d.stream = graph.stream();
  MXQ_CUDA_CHECK(graph.begin_capture(cudaStreamCaptureModeGlobal));
  const Status ss = swizzle(d);
  const Status us = unswizzle(d, d_lin.get());
  MXQ_CUDA_CHECK(graph.end_capture());
  ASSERT_TRUE(ss.ok()) << ss.message();
  ASSERT_TRUE(us.ok()) << us.message();
  for (int replay = 0; replay < 3; ++replay) {
    SCOPED_TRACE(::testing::Message() << "replay " << replay);
    ends = random_group_ends(rng, M, G, 1, replay * 7);
    d_ends.upload(ends.data(), ends.size() * 4);
    d_out.fill(uint8_t(kPoisonA + replay));
    d_lin.fill(kPoisonB);
    MXQ_CUDA_CHECK(graph.replay());
    a.groups.ends = ends.data();
    const Swizzled cpu = run_cpu(a, in);
    EXPECT_TRUE(bytes_equal(cpu.blocked, d_out.download(), "swizzle"));
    EXPECT_TRUE(bytes_equal(cpu.linear, d_lin.download(), "unswizzle"));
  }
}

}  // namespace
}  // namespace mxq::test
