// Token padding on the cpu backend: pad against an independent reference, unpad(pad(x)) == x, every
// dtype and row width, strided input rows, empty groups, and offsets that are out of order or out
// of range (clamped, never read or written out of bounds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <mxq/mxq.hpp>
#include <mxq/numerics.hpp>

#include "support/test_util.hpp"

namespace mxq {
namespace {

using test::Rng;

// A 2-D tensor of random bytes, rows `row_stride` elements apart (the gaps are random too).
struct Payload {
  DType dtype;
  int64_t rows, cols, row_stride;
  std::vector<uint8_t> bytes;

  Payload(Rng& rng, DType t, int64_t M, int64_t width, int64_t stride)
      : dtype(t), rows(M), cols(width), row_stride(stride), bytes(static_cast<size_t>(M * stride * dtype_size(t))) {
    for (auto& b : bytes) b = static_cast<uint8_t>(rng.bits32());
  }
  int64_t row_bytes() const { return cols * dtype_size(dtype); }
  const uint8_t* row(int64_t r) const { return bytes.data() + r * row_stride * dtype_size(dtype); }
  TensorView view() const { return {bytes.data(), dtype, 1, rows, cols, row_stride, 0}; }
};

// What pad must produce, computed directly from docs/spec.md section 6.
struct Padded {
  std::vector<uint8_t> out;
  std::vector<int32_t> starts, ends;
  int64_t last_end = 0;  // clamped end of the last group
};

Padded reference_pad(const Payload& x, const std::vector<int32_t>& ends, int64_t A) {
  const int64_t G = static_cast<int64_t>(ends.size());
  const int64_t P = (x.rows + G * A + A - 1) / A * A;
  Padded r;
  r.out.assign(static_cast<size_t>(P * x.row_bytes()), 0);
  int64_t prev = 0, pos = 0;
  for (int32_t raw : ends) {
    const int64_t e = std::min<int64_t>(std::max<int64_t>(raw, prev), x.rows);
    for (int64_t i = prev; i < e; ++i)
      std::memcpy(r.out.data() + (pos + i - prev) * x.row_bytes(), x.row(i), static_cast<size_t>(x.row_bytes()));
    r.starts.push_back(static_cast<int32_t>(pos));
    pos += (e - prev + A - 1) / A * A;
    r.ends.push_back(static_cast<int32_t>(pos));
    prev = e;
  }
  r.last_end = prev;
  return r;
}

// max |x| of a row-major buffer of dtype t as fp32 bits, NaN winning: the amax pad / unpad report.
uint32_t reference_amax_bits(const std::vector<uint8_t>& bytes, DType t) {
  uint32_t m = 0;
  const size_t esize = static_cast<size_t>(dtype_size(t));
  for (size_t i = 0; i + esize <= bytes.size(); i += esize) {
    uint32_t raw = 0;
    std::memcpy(&raw, bytes.data() + i, esize);
    const float v = t == DType::bf16   ? num::bf16_to_float(static_cast<uint16_t>(raw))
                    : t == DType::fp16 ? num::fp16_to_float(static_cast<uint16_t>(raw))
                                       : num::u2f(raw);
    m = std::max(m, num::f2u(v) & 0x7FFFFFFFu);
  }
  return m;
}

// Runs pad then unpad and checks both against the reference, with every output byte written; for
// float dtypes both also report the output's amax.
void check_round_trip(const Payload& x, const std::vector<int32_t>& ends, int32_t A) {
  const int64_t G = static_cast<int64_t>(ends.size());
  PadArgs p;
  p.input = x.view();
  p.groups = {ends.data(), G};
  p.alignment = A;
  p.backend = Backend::cpu;
  int64_t P = 0;
  ASSERT_TRUE(pad_rows(p, &P).ok());
  ASSERT_EQ(P, (x.rows + G * A + A - 1) / A * A);

  const Padded want = reference_pad(x, ends, A);
  std::vector<uint8_t> outs[2];
  std::vector<int32_t> starts[2], pends[2];
  const uint8_t poison[2] = {test::kPoisonA, test::kPoisonB};
  const bool with_amax = x.dtype != DType::u8;
  const uint32_t want_amax = with_amax ? reference_amax_bits(want.out, x.dtype) : 0;
  float amax[2] = {num::u2f(0xDEADBEEFu), num::u2f(0xDEADBEEFu)};
  for (int k = 0; k < 2; ++k) {
    p.amax = with_amax ? &amax[0] : nullptr;
    outs[k] = test::poisoned(static_cast<size_t>(P * x.row_bytes()), poison[k]);
    starts[k].assign(ends.size(), -7 - k);
    pends[k].assign(ends.size(), -7 - k);
    p.out = outs[k].data();
    p.padded_starts = starts[k].data();
    p.padded_ends = pends[k].data();
    const Status s = pad(p);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_TRUE(test::every_byte_written(outs[0], outs[1], "pad out"));
  EXPECT_TRUE(test::bytes_equal(want.out, outs[0], "pad out"));
  EXPECT_EQ(starts[0], want.starts);
  EXPECT_EQ(pends[0], want.ends);
  EXPECT_EQ(starts[1], want.starts);
  if (with_amax) {
    EXPECT_EQ(num::f2u(amax[0]), want_amax) << "pad amax";
  }

  // unpad: the padded tensor back to (M, width); rows past the last end are 0.
  UnpadArgs u;
  u.input = {outs[0].data(), x.dtype, 1, P, x.cols, 0, 0};
  u.groups = p.groups;
  u.alignment = A;
  u.rows = x.rows;
  u.backend = Backend::cpu;
  std::vector<uint8_t> back[2];
  for (int k = 0; k < 2; ++k) {
    back[k] = test::poisoned(static_cast<size_t>(x.rows * x.row_bytes()), poison[k]);
    u.out = back[k].data();
    u.amax = with_amax ? &amax[1] : nullptr;
    const Status s = unpad(u);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_TRUE(test::every_byte_written(back[0], back[1], "unpad out"));
  std::vector<uint8_t> expect_back(back[0].size(), 0);
  for (int64_t r = 0; r < want.last_end; ++r)
    std::memcpy(expect_back.data() + r * x.row_bytes(), x.row(r), static_cast<size_t>(x.row_bytes()));
  EXPECT_TRUE(test::bytes_equal(expect_back, back[0], "unpad(pad(x))"));
  if (with_amax) {
    EXPECT_EQ(num::f2u(amax[1]), want_amax) << "unpad amax (the same rows as pad's)";
  }
}

const DType kDtypes[] = {DType::bf16, DType::fp16, DType::fp32, DType::u8};
const int32_t kAlignments[] = {16, 32, 64, 128};
const int64_t kGroupCounts[] = {1, 4, 8, 16, 64, 256, 1024};

TEST(PadCpu, NarrowRowsEveryDtypeAlignmentAndGroupCount) {
  MXQ_FRESH_RNG(rng);
  for (DType t : kDtypes)
    for (int32_t A : kAlignments)
      for (int64_t G : kGroupCounts) {
        SCOPED_TRACE(::testing::Message() << "dtype " << int(t) << " A " << A << " G " << G);
        const int64_t M = rng.uniform(G, 3 * G + 200);
        const Payload x(rng, t, M, 7, 7 + rng.uniform(0, 2));  // width 7, sometimes strided rows
        // Empty groups at the front, middle and end (G >= 5), and sometimes rows after the last end.
        check_round_trip(x, test::random_group_ends(rng, M, G, 1, rng.uniform(0, 1) ? 5 : 0), A);
      }
}

TEST(PadCpu, WideRows) {
  MXQ_FRESH_RNG(rng);
  for (DType t : kDtypes)
    for (int64_t width : {160, 2048})
      for (int32_t A : {16, 128})
        for (int64_t G : {1, 4, 16}) {
          SCOPED_TRACE(::testing::Message() << "dtype " << int(t) << " width " << width << " A " << A << " G " << G);
          const int64_t M = rng.uniform(1, 150);
          const Payload x(rng, t, M, width, width + (G == 4 ? 32 : 0));
          check_round_trip(x, test::random_group_ends(rng, M, G), A);
        }
}

TEST(PadCpu, GroupsOfExactMultiplesNeedNoPaddingRows) {
  MXQ_FRESH_RNG(rng);
  const Payload x(rng, DType::bf16, 256, 7, 7);
  check_round_trip(x, {64, 128, 256}, 64);  // padded_ends[g] == ends[g]; the tail is G*A zero rows
}

TEST(PadCpu, BadOffsetsAreClampedAndStayInBounds) {
  // Decreasing, negative and > M offsets: each end is clamped to [previous end, M].
  MXQ_FRESH_RNG(rng);
  const std::vector<std::vector<int32_t>> cases = {
      {50, 10, 400, -5, 30},
      {-100, -1, 0},
      {1000000, 2000000},
      {2147483647, -2147483647 - 1, 64},
      {99, 98, 97, 96, 95, 94, 93, 92},
  };
  for (const auto& ends : cases) {
    for (int32_t A : {16, 128}) {
      SCOPED_TRACE(::testing::Message() << "first end " << ends[0] << " A " << A);
      const Payload x(rng, DType::fp32, 100, 7, 9);
      check_round_trip(x, ends, A);
    }
  }
}

TEST(PadCpu, ZeroWidthRowsNeedNoBuffers) {
  // Rows of 0 bytes: input and output may be null; the padded offsets are still written, and so
  // is the amax of the (empty) output, 0. (fuzz/fuzz_api.cpp found the null buffers reaching
  // memcpy / memset here, undefined behaviour even for 0 bytes.)
  const std::vector<int32_t> ends = {3, 3, 40};
  PadArgs p;
  p.input = {nullptr, DType::bf16, 1, 40, 0, 0, 0};
  p.groups = {ends.data(), 3};
  p.alignment = 32;
  std::vector<int32_t> starts(3, -1), pends(3, -1);
  float amax = -1.0f;
  p.padded_starts = starts.data();
  p.padded_ends = pends.data();
  p.amax = &amax;
  p.backend = Backend::cpu;
  const Status s = pad(p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(starts, (std::vector<int32_t>{0, 32, 32}));
  EXPECT_EQ(pends, (std::vector<int32_t>{32, 32, 96}));
  EXPECT_EQ(amax, 0.0f);

  UnpadArgs u;
  u.input = {nullptr, DType::bf16, 1, 160, 0, 0, 0};  // round_up(40 + 3 * 32, 32)
  u.groups = p.groups;
  u.alignment = 32;
  u.rows = 40;
  u.amax = &amax;
  u.backend = Backend::cpu;
  amax = -1.0f;
  const Status su = unpad(u);
  ASSERT_TRUE(su.ok()) << su.message();
  EXPECT_EQ(amax, 0.0f);
}

TEST(PadCpu, NoGroupsGivesAllZeroRows) {
  MXQ_FRESH_RNG(rng);
  const Payload x(rng, DType::u8, 40, 7, 7);
  check_round_trip(x, {}, 32);  // round_up(40, 32) = 64 zero rows; unpad gives 40 zero rows
}

}  // namespace
}  // namespace mxq
