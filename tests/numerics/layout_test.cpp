// Scale layouts (docs/spec.md section 5) and token-group arithmetic (section 6): the spec's offset checks,
// the blocked swizzle against a constructive enumeration of the 128x4 tiles, inverse and bijection,
// and the group helpers on hand-computed cases and as upper bounds on random groups.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "mxq/numerics/layout.hpp"

namespace num = mxq::num;

TEST(BlockedLayout, SpecChecks) {
  EXPECT_EQ(num::blocked_offset(0, 0, 1), 0);
  EXPECT_EQ(num::blocked_offset(0, 1, 1), 1);
  EXPECT_EQ(num::blocked_offset(32, 0, 1), 4);
  EXPECT_EQ(num::blocked_offset(1, 0, 1), 16);
  EXPECT_EQ(num::blocked_offset(127, 3, 1), 511);
  EXPECT_EQ(num::blocked_offset(127, 3, 2), 511);
  EXPECT_EQ(num::blocked_offset(0, 4, 2), 512);
  EXPECT_EQ(num::blocked_offset(128, 0, 2), 1024);
  EXPECT_EQ(num::blocked_offset(200, 5, 2), 1673);
}

TEST(BlockedLayout, PaddedShape) {
  EXPECT_EQ(num::blocked_rows(0), 0);
  EXPECT_EQ(num::blocked_rows(1), 128);
  EXPECT_EQ(num::blocked_rows(128), 128);
  EXPECT_EQ(num::blocked_rows(129), 256);
  EXPECT_EQ(num::blocked_cols(1), 4);
  EXPECT_EQ(num::blocked_cols(4), 4);
  EXPECT_EQ(num::blocked_cols(5), 8);
  EXPECT_EQ(num::blocked_bytes(200, 5), 256 * 8);
  EXPECT_EQ(num::blocked_bytes(1, 1), 512);
}

// The cuBLAS description, built byte by byte: tiles of 128 rows x 4 columns in row-major tile
// order; inside a tile, byte 16*i + 4*j + k holds row 32*j + i, column k.
TEST(BlockedLayout, MatchesConstructiveTileOrder) {
  for (int64_t nc : {1, 2, 3, 7}) {
    const int64_t tile_rows = 3;
    int64_t off = 0;
    for (int64_t tr = 0; tr < tile_rows; ++tr)
      for (int64_t tc = 0; tc < nc; ++tc)
        for (int64_t i = 0; i < 32; ++i)
          for (int64_t j = 0; j < 4; ++j)
            for (int64_t k = 0; k < 4; ++k, ++off) {
              const int64_t r = tr * 128 + j * 32 + i, c = tc * 4 + k;
              ASSERT_EQ(num::blocked_offset(r, c, nc), off) << r << "," << c << " nc " << nc;
            }
  }
}

TEST(BlockedLayout, PositionInvertsOffset) {
  for (int64_t nc : {1, 2, 3, 7}) {
    for (int64_t r = 0; r < 512; ++r) {
      for (int64_t c = 0; c < 4 * nc; ++c) {
        const num::RowCol p = num::blocked_position(num::blocked_offset(r, c, nc), nc);
        ASSERT_EQ(p.r, r) << "c " << c << " nc " << nc;
        ASSERT_EQ(p.c, c) << "r " << r << " nc " << nc;
      }
    }
  }
}

TEST(BlockedLayout, BijectionOntoPaddedMatrix) {
  const int64_t shapes[][2] = {{1, 1}, {128, 4}, {129, 5}, {300, 9}, {513, 17}, {32, 2}};
  for (const auto& s : shapes) {
    const int64_t Rp = num::blocked_rows(s[0]), Cp = num::blocked_cols(s[1]), nc = Cp / 4;
    ASSERT_EQ(num::blocked_bytes(s[0], s[1]), Rp * Cp);
    std::vector<int> hits(static_cast<size_t>(Rp * Cp), 0);
    for (int64_t r = 0; r < Rp; ++r) {
      for (int64_t c = 0; c < Cp; ++c) {
        const int64_t off = num::blocked_offset(r, c, nc);
        ASSERT_GE(off, 0);
        ASSERT_LT(off, Rp * Cp) << r << "," << c;
        ++hits[static_cast<size_t>(off)];
      }
    }
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << "offset " << i;
  }
}

TEST(TokenGroups, ClampGroupEnd) {
  EXPECT_EQ(num::clamp_group_end(5, 0, 10), 5);
  EXPECT_EQ(num::clamp_group_end(-3, 0, 10), 0);   // negative end: empty group
  EXPECT_EQ(num::clamp_group_end(3, 5, 10), 5);    // decreasing end: empty group
  EXPECT_EQ(num::clamp_group_end(12, 5, 10), 10);  // past M: clamped
  EXPECT_EQ(num::clamp_group_end(10, 10, 10), 10);
  EXPECT_EQ(num::clamp_group_end(0, 0, 0), 0);
}

TEST(TokenGroups, HandComputedSizes) {
  EXPECT_EQ(num::padded_rows_bound(100, 3, 32), 224);  // round_up(196, 32)
  EXPECT_EQ(num::padded_rows_bound(64, 2, 32), 128);
  EXPECT_EQ(num::padded_rows_bound(0, 0, 32), 0);
  EXPECT_EQ(num::padded_rows_bound(5, 1, 1), 6);
  EXPECT_EQ(num::group_m_scale_rows(0), 0);
  EXPECT_EQ(num::group_m_scale_rows(1), 128);
  EXPECT_EQ(num::group_m_scale_rows(128), 128);
  EXPECT_EQ(num::group_m_scale_rows(129), 256);
  EXPECT_EQ(num::group_m_scale_rows_bound(1000, 4), 1512);
  EXPECT_EQ(num::group_k_scale_cols(0, 32), 0);
  EXPECT_EQ(num::group_k_scale_cols(32, 32), 4);
  EXPECT_EQ(num::group_k_scale_cols(128, 32), 4);
  EXPECT_EQ(num::group_k_scale_cols(160, 32), 8);
  EXPECT_EQ(num::group_k_scale_cols(33, 32), 4);
  EXPECT_EQ(num::group_k_scale_cols(512, 32), 16);
  EXPECT_EQ(num::group_k_scale_cols(16, 16), 4);
  EXPECT_EQ(num::group_k_scale_cols_bound(256, 2, 32), 16);
  EXPECT_EQ(num::group_k_scale_cols_bound(100, 3, 32), 16);  // ceil(100/32) + 12
}

// Random offsets (unordered, negative, past M), clamped as the kernels do: every per-group
// total stays within its host-known bound.
TEST(TokenGroups, BoundsHoldForRandomGroups) {
  std::mt19937 rng(2024);
  for (int it = 0; it < 20000; ++it) {
    const int64_t M = rng() % 3000;
    const int64_t G = 1 + rng() % 9;
    std::vector<int64_t> sizes;
    int64_t prev = 0;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t raw = static_cast<int64_t>(rng() % (M + 200)) - 50;
      const int64_t end = num::clamp_group_end(raw, prev, M);
      ASSERT_GE(end, prev);
      ASSERT_LE(end, M);
      sizes.push_back(end - prev);
      prev = end;
    }
    for (int64_t A : {1, 2, 8, 32, 128, 256}) {
      int64_t padded = 0;
      for (int64_t s : sizes) padded += num::round_up(s, A);
      ASSERT_LE(padded, num::padded_rows_bound(M, G, A)) << "M " << M << " G " << G << " A " << A;
      ASSERT_EQ(num::padded_rows_bound(M, G, A) % A, 0);
    }
    int64_t m_rows = 0;
    for (int64_t s : sizes) m_rows += num::group_m_scale_rows(s);
    ASSERT_LE(m_rows, num::group_m_scale_rows_bound(M, G));
    for (int64_t block : {16, 32}) {
      int64_t k_cols = 0;
      for (int64_t s : sizes) k_cols += num::group_k_scale_cols(s, block);
      ASSERT_LE(k_cols, num::group_k_scale_cols_bound(M, G, block)) << "M " << M << " G " << G;
    }
  }
}

static_assert(mxq::num::blocked_offset(200, 5, 2) == 1673, "constexpr blocked offset");
static_assert(mxq::num::blocked_position(1673, 2).r == 200 && mxq::num::blocked_position(1673, 2).c == 5,
              "constexpr blocked position");
static_assert(mxq::num::group_k_scale_cols(160, 32) == 8, "constexpr group columns");
