// Output sizes of docs/layouts.md; every formula comes from include/mxq/numerics/layout.hpp.
#include "quantize_layout.hpp"

#include <mxq/numerics/formats.hpp>
#include <mxq/numerics/layout.hpp>

#include <string>

#include "check.hpp"

namespace mxq::api {

Status quantize_layout(const char* op, const QuantizeShape& shape, QuantizeSizes* sizes) {
  const std::string dims = shape.dims_prefix;
  const QuantizeParams& p = shape.params;
  const QuantizeGroups& qg = shape.groups;
  MXQ_TRY(check_params(op, "params", p));
  MXQ_TRY(check_dim(op, (dims + "batch").c_str(), shape.batch));
  MXQ_TRY(check_dim(op, (dims + "rows").c_str(), shape.rows));
  MXQ_TRY(check_dim(op, (dims + "cols").c_str(), shape.cols));
  MXQ_REQUIRE(__int128(shape.batch) * shape.rows * shape.cols <= kMaxElements, dims, "batch x ", dims, "rows x ", dims,
              "cols must be <= ", kMaxElements, " elements");
  MXQ_TRY(check_groups(op, "groups.groups", qg.groups, shape.batch));
  MXQ_TRY(check_optional_alignment(op, "groups.pad_rowwise", qg.pad_rowwise));
  MXQ_TRY(check_optional_alignment(op, "groups.pad_colwise", qg.pad_colwise));
  const int64_t G = qg.groups.count;
  const bool pads = qg.pad_rowwise != 0 || qg.pad_colwise != 0;
  MXQ_REQUIRE(!pads || G > 0, "groups.pad_rowwise (", qg.pad_rowwise, ") / groups.pad_colwise (", qg.pad_colwise,
              ") pad token groups but groups.groups.count is 0");
  MXQ_REQUIRE(qg.pad_rowwise == 0 || qg.pad_colwise == 0 || qg.pad_rowwise == qg.pad_colwise, "groups.pad_rowwise (",
              qg.pad_rowwise, ") and groups.pad_colwise (", qg.pad_colwise, ") must be equal when both pad");

  const bool rowwise = has_rowwise(p.direction), colwise = has_colwise(p.direction);
  const int64_t B = shape.batch, M = shape.rows, K = shape.cols;
  const int64_t block = num::format_block(p.format), bits = num::format_elem_bits(p.format);
  const bool fp4 = bits == 4;
  const bool blocked = p.layout == ScaleLayout::blocked;

  QuantizeSizes s;
  if (rowwise) {
    int64_t Mr = M;
    if (qg.pad_rowwise) MXQ_TRY(padded_rows(op, M, G, qg.pad_rowwise, &Mr));
    MXQ_REQUIRE(!fp4 || K % 2 == 0, dims, "cols (", K, ") must be even for fp4 formats (two codes per byte)");
    MXQ_REQUIRE(__int128(B) * Mr * K <= kMaxElements, "the rowwise output (", B, " x ", Mr, " padded rows x ", K,
                ") must be <= ", kMaxElements, " elements");
    const int64_t scale_cols = num::ceil_div(K, block);
    s.row_data_rows = Mr;
    s.row_data_bytes = B * Mr * (K * bits / 8);
    if (!blocked)
      s.row_scale_bytes = B * Mr * scale_cols;
    else if (G > 0)  // groups along M: each group's scales start on their own 128-row tile
      s.row_scale_bytes = num::group_m_scale_rows_bound(Mr, G) * num::blocked_cols(scale_cols);
    else
      s.row_scale_bytes = B * num::blocked_bytes(Mr, scale_cols);
  }
  if (colwise) {
    int64_t Mc = M;
    if (qg.pad_colwise) MXQ_TRY(padded_rows(op, M, G, qg.pad_colwise, &Mc));
    MXQ_REQUIRE(!fp4 || Mc % 2 == 0, "colwise data rows (", Mc, qg.pad_colwise ? ", padded" : ", = ", dims,
                "rows) must be even for fp4 formats (codes are packed in pairs along rows)");
    // Alignment 1 pads nothing: a group of odd size would share a byte with the next one.
    MXQ_REQUIRE(!fp4 || qg.pad_colwise != 1,
                "groups.pad_colwise (1) must be 0 or at least 2 for fp4 formats "
                "(codes are packed in pairs along rows: a padded group must start on a byte)");
    MXQ_REQUIRE(__int128(B) * Mc * K <= kMaxElements, "the colwise output (", B, " x ", K, " x ", Mc,
                " padded rows) must be <= ", kMaxElements, " elements");
    const int64_t scale_cols = num::ceil_div(Mc, block);
    s.col_data_cols = Mc;
    s.col_data_bytes = B * K * (Mc * bits / 8);
    if (G > 0)  // groups along K: each group's scale columns are padded separately
      s.col_scale_bytes =
          blocked ? num::blocked_rows(K) * num::group_k_scale_cols_bound(Mc, G, block) : K * (scale_cols + G);
    else
      s.col_scale_bytes = blocked ? B * num::blocked_bytes(K, scale_cols) : B * K * scale_cols;
  }
  s.tensor_scale_count = p.format == Format::nvfp4 ? B : 0;
  s.padded_offset_count = pads ? G : 0;
  *sizes = s;
  return {};
}

}  // namespace mxq::api
