// Token padding on the cuda backend: pad and unpad byte for byte against the cpu backend (random
// jagged groups, every dtype size, narrow and wide rows, alignments, up to 1024 groups, strided
// and unaligned inputs), with the amax of the output for float dtypes; clamped bad offsets,
// validate_group_ends messages, CUDA graph replay with new offsets in the same buffer. Speed is measured by mxq_bench
// (docs/performance.md), not here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

// Group sizes that hit every edge of the padding arithmetic, scaled down when rows are wide.
std::vector<int32_t> jagged_ends(Rng& rng, int64_t G, int64_t max_rows, int64_t* M) {
  static const std::vector<int64_t> kFull = {0, 1, 31, 33, 127, 129, 128, 256, 384};
  static const std::vector<int64_t> kMedium = {0, 1, 31, 33, 127, 129};
  static const std::vector<int64_t> kSmall = {0, 1, 3, 31, 33};
  static const std::vector<int64_t> kTiny = {0, 1, 2};
  const int64_t per_group = max_rows / G;
  const auto& sizes = per_group >= 200 ? kFull : per_group >= 60 ? kMedium : per_group >= 16 ? kSmall : kTiny;
  std::vector<int32_t> ends = ends_of_random_sizes(rng, G, sizes);
  *M = (ends.empty() ? 0 : ends.back()) + rng.uniform(0, 3);  // sometimes rows past the last end
  return ends;
}

HostTensor random_payload(Rng& rng, DType t, int64_t M, int64_t cols, int64_t row_stride) {
  HostTensor h(t, 1, M, cols, row_stride);
  for (size_t i = 0; i < h.bytes.size(); i += 4) {
    const uint32_t bits = rng.bits32();
    for (size_t k = 0; k < 4 && i + k < h.bytes.size(); ++k) h.bytes[i + k] = uint8_t(bits >> (8 * k));
  }
  return h;
}

struct PadResult {
  std::vector<uint8_t> out;
  std::vector<uint8_t> starts, ends;  // int32 bytes
  std::vector<uint8_t> amax;          // fp32 bytes; empty for u8 payloads (no amax)
};

bool has_amax(DType t) { return t != DType::u8; }

PadResult cpu_pad(const HostTensor& x, const std::vector<int32_t>& ends, int32_t A, int64_t P) {
  PadResult r;
  r.out.assign(size_t(P * x.cols * dtype_size(x.dtype)), 0);
  r.starts.assign(ends.size() * 4, 0);
  r.ends.assign(ends.size() * 4, 0);
  if (has_amax(x.dtype)) r.amax.assign(4, 0);
  PadArgs p;
  p.input = x.view();
  p.groups = {ends.data(), int64_t(ends.size())};
  p.alignment = A;
  p.out = r.out.data();
  p.padded_starts = reinterpret_cast<int32_t*>(r.starts.data());
  p.padded_ends = reinterpret_cast<int32_t*>(r.ends.data());
  p.amax = r.amax.empty() ? nullptr : reinterpret_cast<float*>(r.amax.data());
  p.backend = Backend::cpu;
  const Status s = pad(p);
  EXPECT_TRUE(s.ok()) << s.message();
  return r;
}

std::vector<uint8_t> cpu_unpad(const std::vector<uint8_t>& padded, DType t, int64_t P, int64_t cols,
                               const std::vector<int32_t>& ends, int32_t A, int64_t M) {
  std::vector<uint8_t> out(size_t(M * cols * dtype_size(t)), 0);
  UnpadArgs u;
  u.input = {padded.data(), t, 1, P, cols, 0, 0};
  u.groups = {ends.data(), int64_t(ends.size())};
  u.alignment = A;
  u.rows = M;
  u.out = out.data();
  u.backend = Backend::cpu;
  const Status s = unpad(u);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// The unpad of the output of pad `p` (P padded rows) back to `rows` rows, into `out`.
UnpadArgs unpad_of(const PadArgs& p, int64_t P, int64_t rows, void* out) {
  UnpadArgs u;
  u.input = {p.out, p.input.dtype, 1, P, p.input.cols, 0, 0};
  u.groups = p.groups;
  u.alignment = p.alignment;
  u.rows = rows;
  u.out = out;
  u.amax = p.amax;
  u.backend = p.backend;
  u.stream = p.stream;
  return u;
}

// pad and unpad on the device, each run over two poison patterns, compared with the cpu backend.
// `offset` bytes shift the input off its allocation's alignment.
void expect_pad_unpad_match_cpu(const HostTensor& x, const std::vector<int32_t>& ends, int32_t A, size_t offset) {
  SCOPED_TRACE(::testing::Message() << "dtype " << int(x.dtype) << " M " << x.rows << " cols " << x.cols << " stride "
                                    << x.rstride() << " G " << ends.size() << " A " << A << " offset " << offset);
  const int64_t G = int64_t(ends.size()), row_bytes = x.cols * dtype_size(x.dtype);
  DeviceTensor in(x, offset);
  const DeviceBuffer d_ends = device_copy(ends);
  PadArgs p;
  p.input = in.view;
  p.groups = {reinterpret_cast<const int32_t*>(d_ends.get()), G};
  p.alignment = A;
  p.backend = Backend::cuda;
  int64_t P = 0;
  ASSERT_TRUE(pad_rows(p, &P).ok());
  const PadResult want = cpu_pad(x, ends, A, P);

  DeviceBuffer out(size_t(P * row_bytes)), starts(ends.size() * 4), pends(ends.size() * 4), amax(4);
  p.out = out.get();
  p.padded_starts = reinterpret_cast<int32_t*>(starts.get());
  p.padded_ends = reinterpret_cast<int32_t*>(pends.get());
  p.amax = has_amax(x.dtype) ? reinterpret_cast<float*>(amax.get()) : nullptr;
  const auto got = run_poisoned_twice(
      [&](uint8_t pattern) {
        out.fill(pattern);
        starts.fill(pattern);
        pends.fill(pattern);
        amax.fill(pattern);
      },
      [&] { return pad(p); },
      [&] {
        return PadResult{out.download(), starts.download(), pends.download(),
                         p.amax ? amax.download() : std::vector<uint8_t>{}};
      });
  EXPECT_TRUE(every_byte_written(got[0].out, got[1].out, "pad out"));
  EXPECT_TRUE(every_byte_written(got[0].starts, got[1].starts, "padded_starts"));
  EXPECT_TRUE(every_byte_written(got[0].ends, got[1].ends, "padded_ends"));
  EXPECT_TRUE(bytes_equal(want.out, got[0].out, "pad out"));
  EXPECT_TRUE(bytes_equal(want.starts, got[0].starts, "padded_starts"));
  EXPECT_TRUE(bytes_equal(want.ends, got[0].ends, "padded_ends"));
  if (p.amax) {
    EXPECT_TRUE(every_byte_written(got[0].amax, got[1].amax, "pad amax"));
    EXPECT_TRUE(bytes_equal(want.amax, got[0].amax, "pad amax"));
  }

  // unpad reads the padded tensor (here the device's own pad output) back to M rows.
  // Its amax is pad's: the same rows, other zeros.
  DeviceBuffer back(size_t(x.rows * row_bytes));
  const UnpadArgs u = unpad_of(p, P, x.rows, back.get());
  const auto unpadded = run_poisoned_twice(
      [&](uint8_t pattern) {
        back.fill(pattern);
        amax.fill(pattern);
      },
      [&] { return unpad(u); },
      [&] {
        std::vector<uint8_t> bytes = back.download();
        if (p.amax) {
          const std::vector<uint8_t> a = amax.download();
          bytes.insert(bytes.end(), a.begin(), a.end());
        }
        return bytes;
      });
  EXPECT_TRUE(every_byte_written(unpadded[0], unpadded[1], "unpad out and amax"));
  std::vector<uint8_t> want_back = cpu_unpad(want.out, x.dtype, P, x.cols, ends, A, x.rows);
  want_back.insert(want_back.end(), want.amax.begin(), want.amax.end());
  EXPECT_TRUE(bytes_equal(want_back, unpadded[0], "unpad out and amax"));
}

const DType kDtypes[] = {DType::u8, DType::bf16, DType::fp16, DType::fp32};  // sizes 1, 2, 2, 4; amax but u8
const int32_t kAlignments[] = {16, 32, 64, 128};

TEST(PadCuda, MatchesCpuOnJaggedGroups) {
  MXQ_FRESH_RNG(rng);
  const bool quick = quick_mode();
  const int64_t max_bytes = quick ? (int64_t(1) << 18) : (int64_t(1) << 21);
  const std::vector<int64_t> counts =
      quick ? std::vector<int64_t>{1, 8, 64, 1024} : std::vector<int64_t>{1, 4, 8, 16, 64, 256, 1024};
  const std::vector<int64_t> widths = quick ? std::vector<int64_t>{7, 160} : std::vector<int64_t>{7, 160, 2048, 7168};
  int n = 0;
  for (DType t : kDtypes)
    for (int64_t width : widths)
      for (int64_t G : counts) {
        const int32_t A = kAlignments[n % 4];
        const int64_t row_bytes = width * dtype_size(t);
        int64_t M = 0;
        const std::vector<int32_t> ends = jagged_ends(rng, G, std::max<int64_t>(max_bytes / row_bytes, G), &M);
        const int64_t stride = width + (n % 3 == 1 ? 8 : n % 3 == 2 ? 1 : 0);  // contiguous, aligned gap, odd gap
        const HostTensor x = random_payload(rng, t, M, width, stride);
        expect_pad_unpad_match_cpu(x, ends, A, (n % 5 == 4) ? 1 : 0);  // some inputs off 16-byte alignment
        ++n;
      }
}

TEST(PadCuda, ExactMultiplesNoGroupsAndZeroWidth) {
  MXQ_FRESH_RNG(rng);
  expect_pad_unpad_match_cpu(random_payload(rng, DType::bf16, 256, 2048, 0), {64, 128, 256}, 64, 0);
  expect_pad_unpad_match_cpu(random_payload(rng, DType::u8, 40, 7, 0), {}, 32, 0);
  expect_pad_unpad_match_cpu(random_payload(rng, DType::fp32, 300, 160, 0), {300}, 128, 0);
  // Rows of 0 bytes: only the padded offsets and the amax (0) are written.
  expect_pad_unpad_match_cpu(random_payload(rng, DType::bf16, 40, 0, 0), {3, 3, 40}, 32, 0);
}

// Ends that decrease, are negative or exceed M: clamped exactly like the cpu backend, so both give
// the same bytes (and compute-sanitizer sees no access out of bounds).
const std::vector<std::vector<int32_t>> kBadEnds = {
    {50, 10, 400, -5, 30},
    {-100, -1, 0},
    {1000000, 2000000},
    {2147483647, -2147483647 - 1, 64},
    {99, 98, 97, 96, 95, 94, 93, 92},
    {0, 0, 0, 100, 100},
};

TEST(PadCuda, BadOffsetsAreClampedLikeCpu) {
  MXQ_FRESH_RNG(rng);
  for (const auto& ends : kBadEnds)
    for (int32_t A : {16, 128}) {
      expect_pad_unpad_match_cpu(random_payload(rng, DType::fp32, 100, 7, 9), ends, A, 0);
      expect_pad_unpad_match_cpu(random_payload(rng, DType::bf16, 100, 2048, 0), ends, A, 0);
    }
}

Status validate_on(Backend b, const std::vector<int32_t>& ends, int64_t M) {
  if (b == Backend::cpu) return validate_group_ends({ends.data(), int64_t(ends.size())}, M, b);
  const DeviceBuffer d = device_copy(ends);
  return validate_group_ends({reinterpret_cast<const int32_t*>(d.get()), int64_t(ends.size())}, M, b);
}

TEST(PadCuda, ValidateReportsTheFirstBadEndLikeCpu) {
  std::vector<std::vector<int32_t>> cases = kBadEnds;  // {0, 0, 0, 100, 100} is valid for M = 100
  std::vector<int32_t> long_bad(3000);
  for (size_t i = 0; i < long_bad.size(); ++i) long_bad[i] = int32_t(i / 4);
  long_bad[2500] = 10;  // decreasing, far past the first chunk of threads
  cases.push_back(long_bad);
  for (const auto& ends : cases) {
    for (int64_t M : {100, 2000}) {
      const Status cpu = validate_on(Backend::cpu, ends, M);
      const Status gpu = validate_on(Backend::cuda, ends, M);
      EXPECT_EQ(gpu.code(), cpu.code());
      EXPECT_EQ(gpu.message(), cpu.message());
    }
  }
  const Status dec = validate_on(Backend::cuda, {5, 50, 10}, 100);
  EXPECT_EQ(dec.code(), Code::invalid_offsets);
  EXPECT_EQ(dec.message(),
            "validate_group_ends: groups.ends[2] (10) is less than groups.ends[1] (50): ends must not decrease");
  EXPECT_EQ(validate_on(Backend::cuda, long_bad, 2000).message(),
            "validate_group_ends: groups.ends[2500] (10) is less than groups.ends[2499] (624): ends must not decrease");
  EXPECT_EQ(validate_on(Backend::cuda, {0, -1}, 100).message(), "validate_group_ends: groups.ends[1] (-1) is negative");
  EXPECT_EQ(validate_on(Backend::cuda, {0, 101}, 100).message(),
            "validate_group_ends: groups.ends[1] (101) is greater than M (100)");
  std::vector<int32_t> good(3000);
  for (size_t i = 0; i < good.size(); ++i) good[i] = int32_t(i / 4);
  for (const auto& ends : {good, std::vector<int32_t>{0, 0, 100}, std::vector<int32_t>{}}) {
    const Status gpu = validate_on(Backend::cuda, ends, 750);
    EXPECT_TRUE(gpu.ok()) << gpu.message();
  }
}

// pad then unpad captured in a graph; each replay reads new offsets written into the same buffer.
TEST(PadCuda, GraphReplayReadsNewOffsets) {
  MXQ_FRESH_RNG(rng);
  constexpr int64_t M = 1000, K = 160, G = 16;
  constexpr int32_t A = 32;
  const HostTensor x = random_payload(rng, DType::bf16, M, K, 0);
  DeviceTensor in(x);
  DeviceBuffer d_ends(G * 4);
  CapturedGraph graph;
  PadArgs p;
  p.input = in.view;
  p.groups = {reinterpret_cast<const int32_t*>(d_ends.get()), G};
  p.alignment = A;
  p.backend = Backend::cuda;
  p.stream = graph.stream();
  int64_t P = 0;
  ASSERT_TRUE(pad_rows(p, &P).ok());
  DeviceBuffer out(size_t(P * K * 2)), starts(G * 4), pends(G * 4), back(size_t(M * K * 2)), amax(4);
  p.out = out.get();
  p.padded_starts = reinterpret_cast<int32_t*>(starts.get());
  p.padded_ends = reinterpret_cast<int32_t*>(pends.get());
  p.amax = reinterpret_cast<float*>(amax.get());  // cleared and raised in the graph (unpad writes it again)
  const UnpadArgs u = unpad_of(p, P, M, back.get());

  MXQ_CUDA_CHECK(graph.begin_capture(cudaStreamCaptureModeGlobal));
  const Status ps = pad(p);
  const Status us = unpad(u);
  MXQ_CUDA_CHECK(graph.end_capture());
  ASSERT_TRUE(ps.ok()) << ps.message();
  ASSERT_TRUE(us.ok()) << us.message();
  for (int replay = 0; replay < 4; ++replay) {
    SCOPED_TRACE(::testing::Message() << "replay " << replay);
    std::vector<int32_t> ends = replay == 3 ? kBadEnds[0] : random_group_ends(rng, M, G, 1, replay);
    ends.resize(G, ends.back());
    d_ends.upload(ends.data(), ends.size() * 4);
    out.fill(uint8_t(kPoisonA + replay));
    back.fill(kPoisonB);
    amax.fill(0xFF);  // above any amax: a replay that did not clear the slot would keep it
    MXQ_CUDA_CHECK(graph.replay());
    const PadResult want = cpu_pad(x, ends, A, P);
    EXPECT_TRUE(bytes_equal(want.out, out.download(), "pad out"));
    EXPECT_TRUE(bytes_equal(want.starts, starts.download(), "padded_starts"));
    EXPECT_TRUE(bytes_equal(want.ends, pends.download(), "padded_ends"));
    EXPECT_TRUE(bytes_equal(cpu_unpad(want.out, DType::bf16, P, K, ends, A, M), back.download(), "unpad out"));
    EXPECT_TRUE(bytes_equal(want.amax, amax.download(), "amax"));
  }
}

}  // namespace
}  // namespace mxq::test
