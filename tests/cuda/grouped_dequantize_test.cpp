// Dequantize with token groups on the cuda backend equals the cpu backend byte for byte (NaN bits
// included): data quantized on the cpu with jagged groups (sizes 0, 1, 31, 33, 129, ...), G up to
// 64, padded and unpadded directions, linear and blocked scales, every format and output dtype,
// rowwise and colwise, by the vector kernel (whole octets) and the per-element one; rows of no
// group are 0; bad offsets are clamped alike; a captured dequantize replays with new offsets.
// Every output byte is written (two poisons).
#include <gtest/gtest.h>

#include <initializer_list>
#include <iterator>
#include <vector>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

constexpr Format kFormats[] = {Format::mxfp8, Format::mxfp8_e5m2, Format::mxfp4, Format::nvfp4};

constexpr Padding kPaddings[] = {{0, 0}, {32, 32}, {32, 0}, {0, 32}, {16, 16}, {128, 0}, {0, 128}};

bool is_fp4(Format f) { return f == Format::mxfp4 || f == Format::nvfp4; }

// G ends with sizes drawn from the edges of the block and tile arithmetic; *M adds, at times, rows
// past the last end (and keeps M even for fp4: colwise codes are packed in pairs along M).
std::vector<int32_t> jagged_ends(Rng& rng, int64_t G, Format f, int64_t* M) {
  static const std::vector<int64_t> kSizes = {0, 1, 31, 33, 129, 2, 64};
  std::vector<int32_t> ends = ends_of_random_sizes(rng, G, kSizes);
  *M = (ends.empty() ? 0 : ends.back()) + (rng.uniform(0, 1) ? rng.uniform(0, 40) : 0);
  if (is_fp4(f) && *M % 2) ++*M;
  return ends;
}

// The rule varies at random.
QuantizeRequest request(Format f, ScaleLayout l, const std::vector<int32_t>& ends, Padding pad, Rng& rng) {
  return grouped_request(f, rng.uniform(0, 1) ? ScaleRule::rceil : ScaleRule::floor, l, ends, pad);
}

// The dequantize of direction d of a quantize call made with `req` on a (M, K) input.
DequantizeArgs dequantize_args(const QuantizeRequest& req, Direction d, int64_t M, int64_t K, DType out,
                               const int32_t* ends, const void* data, const uint8_t* scales, const float* s_dec,
                               Backend b) {
  DequantizeArgs a;
  a.params = req.params;
  a.params.direction = d;
  a.rows = M;
  a.cols = K;
  a.groups.groups = {ends, int64_t(req.ends.size())};
  a.groups.pad_rowwise = req.pad_rowwise;
  a.groups.pad_colwise = req.pad_colwise;
  a.data = data;
  a.scales = scales;
  a.s_dec = s_dec;
  a.out_dtype = out;
  a.backend = b;
  return a;
}

size_t out_bytes(const DequantizeArgs& a) {
  int64_t n = 0;
  const Status st = dequantize_size(a, &n);
  EXPECT_TRUE(st.ok()) << st.message();
  return size_t(n * dtype_size(a.out_dtype));
}

std::vector<uint8_t> cpu_dequantize(const QuantizeRequest& req, Direction d, int64_t M, int64_t K, DType t,
                                    const QuantizeResult& q) {
  const bool row = d == Direction::rowwise;
  DequantizeArgs a = dequantize_args(req, d, M, K, t, req.ends.data(), row ? q.row_data.data() : q.col_data.data(),
                                     row ? q.row_scales.data() : q.col_scales.data(),
                                     q.s_dec.empty() ? nullptr : q.s_dec.data(), Backend::cpu);
  std::vector<uint8_t> out(out_bytes(a), kPoisonA);
  a.out = out.data();
  const Status st = dequantize(a);
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

// The device copies of one direction's quantized operand and its offsets.
struct DeviceOperand {
  DeviceBuffer ends, data, scales, s_dec;
  DeviceOperand(const QuantizeRequest& req, Direction d, const QuantizeResult& q)
      : ends(req.ends.size() * 4),
        data((d == Direction::rowwise ? q.row_data : q.col_data).size()),
        scales((d == Direction::rowwise ? q.row_scales : q.col_scales).size()),
        s_dec(q.s_dec.size() * 4) {
    upload(req, d, q);
  }
  void upload(const QuantizeRequest& req, Direction d, const QuantizeResult& q) const {
    const bool row = d == Direction::rowwise;
    ends.upload(req.ends.data(), req.ends.size() * 4);
    data.upload((row ? q.row_data : q.col_data).data(), data.size());
    scales.upload((row ? q.row_scales : q.col_scales).data(), scales.size());
    s_dec.upload(q.s_dec.data(), s_dec.size());
  }
  DequantizeArgs args(const QuantizeRequest& req, Direction d, int64_t M, int64_t K, DType t) const {
    return dequantize_args(req, d, M, K, t, reinterpret_cast<const int32_t*>(ends.get()), data.get(), scales.get(),
                           s_dec.size() ? reinterpret_cast<const float*>(s_dec.get()) : nullptr, Backend::cuda);
  }
};

std::vector<uint8_t> cuda_dequantize(const QuantizeRequest& req, Direction d, int64_t M, int64_t K, DType t,
                                     const QuantizeResult& q) {
  const DeviceOperand dev(req, d, q);
  DequantizeArgs a = dev.args(req, d, M, K, t);
  const DeviceBuffer out(out_bytes(a));
  a.out = out.get();
  return dequantize_poisoned_twice(a, out);
}

std::string describe(int64_t M, int64_t K, const QuantizeRequest& q) {
  std::string s = "M " + std::to_string(M) + " K " + std::to_string(K) + " format " +
                  std::to_string(int(q.params.format)) + " rule " + std::to_string(int(q.params.rule)) + " layout " +
                  std::to_string(int(q.params.layout)) + " pad " + std::to_string(q.pad_rowwise) + "/" +
                  std::to_string(q.pad_colwise) + " ends";
  for (size_t i = 0; i < q.ends.size() && i < 64; ++i) s += " " + std::to_string(q.ends[i]);
  return s;
}

// Quantizes h on the cpu (both directions), then dequantizes each direction into each dtype on
// both backends.
void expect_grouped_dequantize_matches_cpu(const HostTensor& h, const QuantizeRequest& req,
                                           std::initializer_list<Direction> directions = {Direction::rowwise,
                                                                                          Direction::colwise},
                                           std::initializer_list<DType> dtypes = {DType::bf16, DType::fp16,
                                                                                  DType::fp32}) {
  SCOPED_TRACE(describe(h.rows, h.cols, req));
  const QuantizeResult q = run_quantize(h, req);
  for (Direction d : directions) {
    for (DType t : dtypes) {
      SCOPED_TRACE(::testing::Message() << "direction " << int(d) << " out " << int(t));
      EXPECT_TRUE(bytes_equal(cpu_dequantize(req, d, h.rows, h.cols, t, q),
                              cuda_dequantize(req, d, h.rows, h.cols, t, q), "dequantize out"));
    }
  }
}

HostTensor input(Rng& rng, int64_t M, int64_t K) {
  const DType t = rng.uniform(0, 1) ? DType::bf16 : DType::fp32;
  return rng.uniform(0, 2) ? normal_tensor(rng, t, 1, M, K) : special_tensor(rng, t, 1, M, K, 0.01);
}

TEST(CudaGroupedDequantize, JaggedGroupsEveryFormatLayoutPaddingAndDtype) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats) {
    for (int64_t G : {1, 4, 16, 64}) {
      if (quick_mode() && G > 4) continue;
      for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
        // Unpadded and both padded always; two more of the paddings at random.
        const Padding pads[] = {kPaddings[0], kPaddings[1],
                                kPaddings[rng.uniform(2, int64_t(std::size(kPaddings)) - 1)],
                                kPaddings[rng.uniform(2, int64_t(std::size(kPaddings)) - 1)]};
        for (int i = 0; i < (quick_mode() ? 2 : 4); ++i) {
          int64_t M = 0;
          const std::vector<int32_t> ends = jagged_ends(rng, G, f, &M);
          // 36: not whole octets (the per-element kernel); the others the vector kernel.
          const int64_t K = std::vector<int64_t>{40, 96, 160, 36}[size_t(rng.uniform(0, 3))];
          expect_grouped_dequantize_matches_cpu(input(rng, M, K), request(f, l, ends, pads[i], rng));
        }
      }
    }
  }
}

// Wide rows: the per-element kernel's CTAs convert several tiles along K (the last one partial).
TEST(CudaGroupedDequantize, WideRowsSeveralTilesPerCta) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats) {
    for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
      for (Padding pad : {Padding{0, 0}, Padding{32, 32}, Padding{0, 128}}) {
        for (int64_t K : {1040, 1036}) {
          const std::vector<int32_t> ends = random_group_ends(rng, 700, 8, 1, 3);
          expect_grouped_dequantize_matches_cpu(input(rng, 700, K), request(f, l, ends, pad, rng));
        }
      }
    }
  }
}

// The vector kernel's CTAs convert several tiles along K (the last one partial) only where the
// launcher gives a strip fewer CTAs than tiles: rowwise one round of resident CTAs over the strips
// (at most 9 per 64-row strip at 4100 rows on 132-148 SMs with up to four CTAs each, against 10
// tiles of 256 codes), colwise at least 16 or eight rounds, or with faster memory per SM at least 4
// or four rounds (at most 23 or 12 at 26000 rows, four CTAs per SM, against 26 tiles of 128 code
// rows).
TEST(CudaGroupedDequantize, VectorKernelSeveralTilesPerCta) {
  if (quick_mode()) GTEST_SKIP() << "large shapes";
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats) {
    for (Padding pad : {Padding{0, 0}, Padding{32, 32}}) {
      const std::vector<int32_t> ends = random_group_ends(rng, 4100, 8, 1, 3);
      expect_grouped_dequantize_matches_cpu(input(rng, 4100, 2312), request(f, ScaleLayout::blocked, ends, pad, rng),
                                            {Direction::rowwise}, {DType::bf16});
    }
  }
  for (Format f : {Format::mxfp8, Format::mxfp4}) {
    const std::vector<int32_t> ends = random_group_ends(rng, 26000, 8, 1, 3);
    expect_grouped_dequantize_matches_cpu(input(rng, 26000, 3208),
                                          request(f, ScaleLayout::blocked, ends, Padding{0, 32}, rng),
                                          {Direction::colwise}, {DType::bf16});
  }
}

// Unpadded groups along K take the vector kernel when R is a multiple of 8: groups that are
// multiples of 32 (as docs/spec.md asks) or of 8 convert by octets; a strip with a group that starts or
// ends elsewhere converts element by element (also with padding to 4).
TEST(CudaGroupedDequantize, UnpaddedGroupsAlongK) {
  MXQ_FRESH_RNG(rng);
  for (Format f : kFormats) {
    for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
      for (int64_t multiple : {32, 8, 1}) {
        const int64_t M = 2048 + 256 * rng.uniform(0, 3);
        const std::vector<int32_t> ends = random_group_ends(rng, M, 12, multiple, multiple == 1 ? 5 : 0);
        expect_grouped_dequantize_matches_cpu(input(rng, M, 264), request(f, l, ends, Padding{0, 0}, rng),
                                              {Direction::colwise});
      }
      const std::vector<int32_t> ends = random_group_ends(rng, 1000, 12, 1, 3);
      expect_grouped_dequantize_matches_cpu(input(rng, 1000, 264), request(f, l, ends, Padding{0, 4}, rng),
                                            {Direction::colwise});
    }
  }
}

TEST(CudaGroupedDequantize, EmptyGroupsNoRowsAndAllRowsPastTheLastEnd) {
  MXQ_FRESH_RNG(rng);
  for (Format f : {Format::mxfp8, Format::nvfp4}) {
    for (ScaleLayout l : {ScaleLayout::linear, ScaleLayout::blocked}) {
      for (Padding pad : {Padding{0, 0}, Padding{32, 32}}) {
        for (const EmptyGroupsCase& c : kEmptyGroupsCases) {
          expect_grouped_dequantize_matches_cpu(normal_tensor(rng, DType::bf16, 1, c.rows, c.cols),
                                                request(f, l, c.ends, pad, rng));
        }
      }
    }
  }
}

// Offsets that are not monotone, negative or past M are clamped alike by both backends.
TEST(CudaGroupedDequantize, BadOffsetsAreClampedLikeTheCpu) {
  MXQ_FRESH_RNG(rng);
  for (const auto& ends : kBadGroupEnds) {
    for (Padding pad : {Padding{0, 0}, Padding{32, 32}, Padding{0, 128}}) {
      for (Format f : kFormats) {
        const ScaleLayout l = rng.uniform(0, 1) ? ScaleLayout::linear : ScaleLayout::blocked;
        expect_grouped_dequantize_matches_cpu(input(rng, 260, 96), request(f, l, ends, pad, rng));
      }
    }
  }
}

// A captured pair of dequantize calls (rowwise and colwise) replays with offsets, data and scales
// rewritten in the same device buffers; each replay equals the cpu on that replay's offsets.
TEST(CudaGroupedDequantize, GraphReplayWithNewOffsets) {
  MXQ_FRESH_RNG(rng);
  const int64_t M = 1000, K = 256, G = 8;
  const HostTensor h = normal_tensor(rng, DType::bf16, 1, M, K);
  for (Padding pad : {Padding{0, 0}, Padding{32, 0}, Padding{0, 32}}) {
    const Format f = pad.colwise ? Format::nvfp4 : Format::mxfp8;
    QuantizeRequest req = request(f, ScaleLayout::blocked, random_group_ends(rng, M, G, 1, 5), pad, rng);
    QuantizeResult q = run_quantize(h, req);
    const DeviceOperand row(req, Direction::rowwise, q), col(req, Direction::colwise, q);
    DequantizeArgs row_args = row.args(req, Direction::rowwise, M, K, DType::bf16);
    DequantizeArgs col_args = col.args(req, Direction::colwise, M, K, DType::fp16);
    const DeviceBuffer row_out(out_bytes(row_args)), col_out(out_bytes(col_args));
    row_args.out = row_out.get();
    col_args.out = col_out.get();
    CapturedGraph graph;
    row_args.stream = col_args.stream = graph.stream();
    MXQ_CUDA_CHECK(graph.begin_capture(cudaStreamCaptureModeThreadLocal));
    const Status st_row = dequantize(row_args);
    const Status st_col = dequantize(col_args);
    MXQ_CUDA_CHECK(graph.end_capture());
    ASSERT_TRUE(st_row.ok()) << st_row.message();
    ASSERT_TRUE(st_col.ok()) << st_col.message();
    for (int replay = 0; replay < 4; ++replay) {
      SCOPED_TRACE(::testing::Message() << "pad " << pad.rowwise << "/" << pad.colwise << " replay " << replay);
      req.ends = replay == 3 ? kBadGroupEndsOf1000Rows  // clamped
                             : random_group_ends(rng, M, G, replay == 0 ? 1 : 32, replay);
      q = run_quantize(h, req);
      row.upload(req, Direction::rowwise, q);
      col.upload(req, Direction::colwise, q);
      row_out.fill(uint8_t(kPoisonA + replay));
      col_out.fill(uint8_t(kPoisonB + replay));
      MXQ_CUDA_CHECK(graph.replay());
      EXPECT_TRUE(
          bytes_equal(cpu_dequantize(req, Direction::rowwise, M, K, DType::bf16, q), row_out.download(), "rowwise"));
      EXPECT_TRUE(
          bytes_equal(cpu_dequantize(req, Direction::colwise, M, K, DType::fp16, q), col_out.download(), "colwise"));
    }
  }
}

}  // namespace
}  // namespace mxq::test
