// TileOrder: which tile of a matrix of tiles CTA i takes (host and device; tests/cpu/
// tests/cpu/tile_order_test.cpp checks that it is a bijection in the documented order).
#pragma once
#include <cstdint>

#include <mxq/numerics/common.hpp>

#include "cuda/fast_div.hpp"

namespace mxq::cuda::kernels::quantize {

// The order in which CTAs take the (row tile, column tile) pairs of one matrix: bands of `band`
// column tiles, row tiles within a band, column tiles fastest. With band = all column tiles
// (plain row-major order) the CTAs resident together cover a few whole row strips: long input
// rows, but each transposed output row gets only a few 128-byte pieces at a time, 128 KB apart at
// large M. Colwise alone therefore takes narrow bands (tuning.hpp: kColwiseBandBytes); both
// directions keep row-major order, where the rowwise output rows are long too. Built on the host;
// 32-bit: the launchers keep the tile count below 2^31.
struct TilePlace {
  uint32_t row, col;
};
struct TileOrder {
  uint32_t band = 1, cols = 1;
  FastDiv per_band, width, last_width;  // rows * band; band; the last band's width

  TileOrder() = default;
  // rows x cols tiles (rows * cols < 2^31), bands of band_ column tiles (clamped to [1, cols]).
  TileOrder(uint32_t rows, uint32_t cols_, uint32_t band_)
      : band(band_ < cols_ ? (band_ < 1 ? 1 : band_) : (cols_ < 1 ? 1 : cols_)),
        cols(cols_),
        per_band(rows * band),
        width(band),
        last_width(cols_ < 1 ? 1 : cols_ - (cols_ - 1) / band * band) {}

  MXQ_HD TilePlace place(uint32_t index) const {
    const uint32_t b = per_band.div(index);
    const uint32_t r = index - b * per_band.d;
    const FastDiv& w = (b + 1) * band <= cols ? width : last_width;
    const uint32_t row = w.div(r);
    return {row, b * band + (r - row * w.d)};
  }
  // place() when the order is plain row-major (band = cols), with one division.
  MXQ_HD TilePlace place_row_major(uint32_t index) const {
    const uint32_t row = width.div(index);
    return {row, index - row * width.d};
  }
};

}  // namespace mxq::cuda::kernels::quantize
