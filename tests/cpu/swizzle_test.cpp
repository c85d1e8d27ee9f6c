// Scale swizzle on the cpu backend: the docs/spec.md section 5 offsets through the op, zero padding,
// per-group layouts (section 6), unswizzle(swizzle(x)) == x, and clamped bad offsets.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include <mxq/mxq.hpp>
#include <mxq/numerics/layout.hpp>

#include "support/test_util.hpp"

namespace mxq {
namespace {

using test::Rng;

SwizzleArgs args_for(const std::vector<uint8_t>& in, int64_t batch, int64_t rows, int64_t cols,
                     ScaleGroups axis = ScaleGroups::none, const std::vector<int32_t>* ends = nullptr) {
  SwizzleArgs a;
  a.in = in.data();
  a.batch = batch;
  a.rows = rows;
  a.cols = cols;
  a.group_axis = axis;
  if (ends) a.groups = {ends->data(), static_cast<int64_t>(ends->size())};
  a.backend = Backend::cpu;
  return a;
}

// Swizzles twice over two poison patterns and checks that every byte was written.
std::vector<uint8_t> run_swizzle(SwizzleArgs a) {
  int64_t bytes = 0;
  EXPECT_TRUE(swizzle_size(a, &bytes).ok());
  std::vector<uint8_t> out[2] = {test::poisoned(bytes, test::kPoisonA), test::poisoned(bytes, test::kPoisonB)};
  for (auto& o : out) {
    a.out = o.data();
    const Status s = swizzle(a);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  EXPECT_TRUE(test::every_byte_written(out[0], out[1], "swizzle out"));
  return out[0];
}

std::vector<uint8_t> run_unswizzle(SwizzleArgs a, std::vector<uint8_t>& blocked) {
  a.out = blocked.data();
  const size_t n = static_cast<size_t>(a.batch * a.rows * a.cols);
  std::vector<uint8_t> lin[2] = {test::poisoned(n, test::kPoisonA), test::poisoned(n, test::kPoisonB)};
  for (auto& l : lin) {
    const Status s = unswizzle(a, l.data());
    EXPECT_TRUE(s.ok()) << s.message();
  }
  EXPECT_TRUE(test::every_byte_written(lin[0], lin[1], "unswizzle out"));
  return lin[0];
}

std::vector<uint8_t> random_bytes(Rng& rng, int64_t n) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (auto& b : v) b = static_cast<uint8_t>(rng.bits32() | 1);  // never 0, so padding is visible
  return v;
}

TEST(SwizzleCpu, SpecOffsets) {
  // docs/spec.md section 5 checks, through the op: a single 1 at (r, c) of a 256 x 8 matrix (nc = 2).
  struct Case {
    int64_t r, c, off;
  };
  for (const Case& k : {Case{0, 0, 0}, Case{0, 1, 1}, Case{32, 0, 4}, Case{1, 0, 16}, Case{127, 3, 511},
                        Case{0, 4, 512}, Case{128, 0, 1024}, Case{200, 5, 1673}}) {
    SCOPED_TRACE(::testing::Message() << "(" << k.r << ", " << k.c << ")");
    std::vector<uint8_t> in(256 * 8, 0);
    in[static_cast<size_t>(k.r * 8 + k.c)] = 1;
    const std::vector<uint8_t> out = run_swizzle(args_for(in, 1, 256, 8));
    ASSERT_EQ(out.size(), 2048u);
    EXPECT_EQ(std::find(out.begin(), out.end(), 1) - out.begin(), k.off);
    EXPECT_EQ(std::count(out.begin(), out.end(), 1), 1);
  }
}

TEST(SwizzleCpu, PaddingIsZeroAndRoundTrips) {
  MXQ_FRESH_RNG(rng);
  for (int64_t batch : {1, 3})
    for (int64_t rows : {1, 31, 128, 129, 300})
      for (int64_t cols : {1, 3, 4, 5, 9}) {
        SCOPED_TRACE(::testing::Message() << batch << " x " << rows << " x " << cols);
        const std::vector<uint8_t> in = random_bytes(rng, batch * rows * cols);
        const SwizzleArgs a = args_for(in, batch, rows, cols);
        std::vector<uint8_t> out = run_swizzle(a);
        const int64_t per_batch = (rows + 127) / 128 * 128 * ((cols + 3) / 4 * 4);
        ASSERT_EQ(static_cast<int64_t>(out.size()), batch * per_batch);
        EXPECT_EQ(std::count(out.begin(), out.end(), 0), batch * per_batch - batch * rows * cols);
        for (int64_t b = 0; b < batch; ++b)  // batch b's matrix starts at b * Rp * Cp
          EXPECT_EQ(out[static_cast<size_t>(b * per_batch)], in[static_cast<size_t>(b * rows * cols)]);
        EXPECT_EQ(run_unswizzle(a, out), in);
      }
}

// Clamped group spans [begin, end) of the ends over n entries.
std::vector<std::pair<int64_t, int64_t>> spans(const std::vector<int32_t>& ends, int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> s;
  int64_t prev = 0;
  for (int32_t e : ends) {
    const int64_t end = std::min<int64_t>(std::max<int64_t>(e, prev), n);
    s.push_back({prev, end});
    prev = end;
  }
  return s;
}

// Checks the per-group layout of docs/spec.md section 6 element by element, then the round trip.
void check_groups_m(const std::vector<uint8_t>& in, int64_t rows, int64_t cols, const std::vector<int32_t>& ends) {
  const SwizzleArgs a = args_for(in, 1, rows, cols, ScaleGroups::along_m, &ends);
  std::vector<uint8_t> out = run_swizzle(a);
  const int64_t Cp = (cols + 3) / 4 * 4, G = static_cast<int64_t>(ends.size());
  ASSERT_EQ(static_cast<int64_t>(out.size()), (rows + 128 * G) * Cp);
  int64_t start_row = 0, placed = 0;
  std::vector<uint8_t> expect_back(in.size(), 0);
  for (auto [b, e] : spans(ends, rows)) {
    for (int64_t i = 0; i < e - b; ++i)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t off = start_row * Cp + num::blocked_offset(i, c, Cp / 4);
        ASSERT_EQ(out[static_cast<size_t>(off)], in[static_cast<size_t>((b + i) * cols + c)])
            << "row " << b + i << " col " << c;
        expect_back[static_cast<size_t>((b + i) * cols + c)] = in[static_cast<size_t>((b + i) * cols + c)];
        ++placed;
      }
    start_row += (e - b + 127) / 128 * 128;
  }
  EXPECT_EQ(std::count(out.begin(), out.end(), 0), static_cast<int64_t>(out.size()) - placed);
  EXPECT_EQ(run_unswizzle(a, out), expect_back);  // rows past the last end come back as 0
}

void check_groups_k(const std::vector<uint8_t>& in, int64_t rows, int64_t cols, const std::vector<int32_t>& ends) {
  const SwizzleArgs a = args_for(in, 1, rows, cols, ScaleGroups::along_k, &ends);
  std::vector<uint8_t> out = run_swizzle(a);
  const int64_t Rp = (rows + 127) / 128 * 128, G = static_cast<int64_t>(ends.size());
  ASSERT_EQ(static_cast<int64_t>(out.size()), Rp * (cols + 4 * G));
  int64_t start_col = 0, placed = 0;
  std::vector<uint8_t> expect_back(in.size(), 0);
  for (auto [b, e] : spans(ends, cols)) {
    const int64_t q = (e - b + 3) / 4 * 4;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t l = 0; l < e - b; ++l) {
        const int64_t off = Rp * start_col + num::blocked_offset(r, l, q / 4);
        ASSERT_EQ(out[static_cast<size_t>(off)], in[static_cast<size_t>(r * cols + b + l)])
            << "row " << r << " col " << b + l;
        expect_back[static_cast<size_t>(r * cols + b + l)] = in[static_cast<size_t>(r * cols + b + l)];
        ++placed;
      }
    start_col += q;
  }
  EXPECT_EQ(std::count(out.begin(), out.end(), 0), static_cast<int64_t>(out.size()) - placed);
  EXPECT_EQ(run_unswizzle(a, out), expect_back);
}

TEST(SwizzleCpu, GroupsAlongM) {
  MXQ_FRESH_RNG(rng);
  for (int64_t G : {1, 3, 8, 40}) {
    for (int64_t cols : {1, 4, 6}) {
      const int64_t rows = rng.uniform(1, 700);
      SCOPED_TRACE(::testing::Message() << "G " << G << " rows " << rows << " cols " << cols);
      const std::vector<uint8_t> in = random_bytes(rng, rows * cols);
      check_groups_m(in, rows, cols, test::random_group_ends(rng, rows, G, 1, rows > 10 ? 3 : 0));
    }
  }
}

TEST(SwizzleCpu, GroupsAlongK) {
  MXQ_FRESH_RNG(rng);
  for (int64_t G : {1, 3, 8, 40}) {
    for (int64_t rows : {1, 128, 200}) {
      const int64_t cols = rng.uniform(1, 90);
      SCOPED_TRACE(::testing::Message() << "G " << G << " rows " << rows << " cols " << cols);
      const std::vector<uint8_t> in = random_bytes(rng, rows * cols);
      check_groups_k(in, rows, cols, test::random_group_ends(rng, cols, G, 1, cols > 10 ? 2 : 0));
    }
  }
}

TEST(SwizzleCpu, BadOffsetsAreClamped) {
  MXQ_FRESH_RNG(rng);
  const std::vector<std::vector<int32_t>> cases = {{50, 10, 400, -5, 30}, {-1, -1}, {2147483647, 3}, {7, 6, 5, 4}};
  for (const auto& ends : cases) {
    check_groups_m(random_bytes(rng, 100 * 5), 100, 5, ends);
    check_groups_k(random_bytes(rng, 130 * 40), 130, 40, ends);
  }
}

}  // namespace
}  // namespace mxq
