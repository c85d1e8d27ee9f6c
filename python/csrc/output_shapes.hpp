// The package's output shapes (python/README.md, docs/layouts.md) for eager calls of the torch
// operators: the same rules as python/mxq/_shapes.py, which the fake functions evaluate on symbolic
// sizes. The operators check every shape against the library's byte counts on each call, and the
// tests compare eager outputs with the fake ones.
#pragma once
#include <mxq/mxq.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace mxq::torch_shapes {

using Shape = std::vector<int64_t>;

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }
inline int64_t padded_rows(int64_t M, int64_t G, int64_t A) { return round_up(M + G * A, A); }

inline Shape batched_shape(bool batched, int64_t B, Shape dims) {
  if (batched) dims.insert(dims.begin(), B);
  return dims;
}

// row_data, row_scales, col_data, col_scales, s_enc, s_dec, padded_starts, padded_ends; empty
// where the call does not produce that output. Data shapes count bytes (two fp4 codes per byte).
struct QuantizeShapes {
  std::array<std::optional<Shape>, 8> outputs;
};

inline QuantizeShapes quantize_shapes(const QuantizeParams& p, bool batched, int64_t B, int64_t M, int64_t K, int64_t G,
                                      int64_t pad_rowwise, int64_t pad_colwise) {
  const int64_t block = p.format == Format::nvfp4 ? 16 : 32;
  const int64_t bits = p.format == Format::mxfp4 || p.format == Format::nvfp4 ? 4 : 8;
  const bool blocked = p.layout == ScaleLayout::blocked;
  QuantizeShapes s;
  if (has_rowwise(p.direction)) {
    const int64_t Mr = pad_rowwise ? padded_rows(M, G, pad_rowwise) : M, sc = cdiv(K, block);
    s.outputs[0] = batched_shape(batched, B, {Mr, K * bits / 8});
    if (!blocked)
      s.outputs[1] = batched_shape(batched, B, {Mr, sc});
    else if (G)  // groups along M: each group starts on its own 128-row tile
      s.outputs[1] = Shape{(Mr + 128 * G) * round_up(sc, 4)};
    else
      s.outputs[1] = batched_shape(batched, B, {round_up(Mr, 128) * round_up(sc, 4)});
  }
  if (has_colwise(p.direction)) {
    const int64_t Mc = pad_colwise ? padded_rows(M, G, pad_colwise) : M, sc = cdiv(Mc, block);
    s.outputs[2] = batched_shape(batched, B, {K, Mc * bits / 8});
    if (G)  // groups along K: each group's scale columns stand apart
      s.outputs[3] = blocked ? Shape{round_up(K, 128) * (sc + 4 * G)} : Shape{K, sc + G};
    else if (!blocked)
      s.outputs[3] = batched_shape(batched, B, {K, sc});
    else
      s.outputs[3] = batched_shape(batched, B, {round_up(K, 128) * round_up(sc, 4)});
  }
  if (p.format == Format::nvfp4) s.outputs[4] = s.outputs[5] = Shape{B};
  if (pad_rowwise || pad_colwise) s.outputs[6] = s.outputs[7] = Shape{G};
  return s;
}

// ([B,] rows', K): rows' = the padded rows of that direction, else M.
inline Shape dequantize_shape(Direction d, bool batched, int64_t B, int64_t M, int64_t K, int64_t G,
                              int64_t pad_rowwise, int64_t pad_colwise) {
  const int64_t pad = d == Direction::rowwise ? pad_rowwise : pad_colwise;
  return batched_shape(batched, B, {pad ? padded_rows(M, G, pad) : M, K});
}

// The blocked scale bytes: flat, per batch when batched.
inline Shape swizzle_shape(bool batched, int64_t B, int64_t R, int64_t C, ScaleGroups axis, int64_t G) {
  if (axis == ScaleGroups::along_m) return {(R + 128 * G) * round_up(C, 4)};
  if (axis == ScaleGroups::along_k) return {round_up(R, 128) * (C + 4 * G)};
  return batched_shape(batched, B, {round_up(R, 128) * round_up(C, 4)});
}

}  // namespace mxq::torch_shapes
