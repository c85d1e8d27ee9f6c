// TileOrder (src/cuda/quantize/tile_order.hpp), the order in which the quantize kernels' CTAs take
// their tiles: every index in [0, rows * cols) lands on a distinct tile, bands of `band` column
// tiles come one after the other, row tiles within a band, column tiles fastest; row-major order
// (band >= cols) agrees with place_row_major.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/quantize/tile_order.hpp"

namespace {

using mxq::cuda::kernels::quantize::TileOrder;
using mxq::cuda::kernels::quantize::TilePlace;

void check_order(uint32_t rows, uint32_t cols, uint32_t band) {
  SCOPED_TRACE(::testing::Message() << rows << " x " << cols << " tiles, band " << band);
  const TileOrder order(rows, cols, band);
  const uint32_t w = band < 1 ? 1 : (band > cols ? cols : band);
  std::vector<int> seen(size_t{rows} * cols, 0);
  uint32_t index = 0;
  for (uint32_t b0 = 0; b0 < cols; b0 += w) {  // the expected order, written out
    const uint32_t b1 = b0 + w < cols ? b0 + w : cols;
    for (uint32_t row = 0; row < rows; ++row) {
      for (uint32_t col = b0; col < b1; ++col, ++index) {
        const TilePlace at = order.place(index);
        ASSERT_EQ(at.row, row) << "index " << index;
        ASSERT_EQ(at.col, col) << "index " << index;
        ++seen[size_t{at.row} * cols + at.col];
        if (w == cols) {
          const TilePlace rm = order.place_row_major(index);
          ASSERT_EQ(rm.row, row);
          ASSERT_EQ(rm.col, col);
        }
      }
    }
  }
  ASSERT_EQ(index, rows * cols);
  for (int n : seen) ASSERT_EQ(n, 1);
}

TEST(TileOrder, VisitsEveryTileOnceBandByBand) {
  for (uint32_t rows : {1u, 2u, 3u, 7u, 64u, 1025u}) {
    for (uint32_t cols : {1u, 2u, 3u, 12u, 13u, 56u}) {
      for (uint32_t band : {1u, 2u, 4u, 5u, cols, cols + 3}) check_order(rows, cols, band);
    }
  }
}

TEST(TileOrder, LargeGridsAtTheEdgesOfTheirBands) {
  // 131072 x 7168 tokens: 1024 x 56 tiles; grids near the 2^31 tile bound.
  for (uint32_t band : {2u, 4u, 56u}) {
    const TileOrder order(1024, 56, band);
    const uint32_t per_band = 1024 * band;
    for (uint32_t b = 0; b < 56 / band; ++b) {
      const TilePlace first = order.place(b * per_band), last = order.place(b * per_band + per_band - 1);
      EXPECT_EQ(first.row, 0u);
      EXPECT_EQ(first.col, b * band);
      EXPECT_EQ(last.row, 1023u);
      EXPECT_EQ(last.col, b * band + band - 1);
    }
  }
  const uint32_t rows = (1u << 31) / 13 - 1, cols = 13;  // rows * cols < 2^31
  const TileOrder order(rows, cols, 2);
  const TilePlace last = order.place(rows * cols - 1);  // the last band is one column wide
  EXPECT_EQ(last.row, rows - 1);
  EXPECT_EQ(last.col, 12u);
  const TilePlace before = order.place(rows * 12 - 1);  // the end of the band of columns 10, 11
  EXPECT_EQ(before.row, rows - 1);
  EXPECT_EQ(before.col, 11u);
}

}  // namespace
