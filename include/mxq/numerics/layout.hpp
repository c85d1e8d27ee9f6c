// Scale layouts (docs/spec.md section 5) and token-group arithmetic (section 6).
#pragma once
#include "common.hpp"

namespace mxq::num {

// ---- blocked "32_4_4" swizzle: 128-row x 4-column tiles of 512 bytes ----------------------------

MXQ_HD constexpr int64_t blocked_rows(int64_t rows) { return round_up(rows, 128); }
MXQ_HD constexpr int64_t blocked_cols(int64_t cols) { return round_up(cols, 4); }
MXQ_HD constexpr int64_t blocked_bytes(int64_t rows, int64_t cols) { return blocked_rows(rows) * blocked_cols(cols); }

// Byte offset of logical scale (r, c) in a blocked matrix whose padded width is 4 * nc columns.
MXQ_HD constexpr int64_t blocked_offset(int64_t r, int64_t c, int64_t nc) {
  return ((r / 128) * nc + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
}

struct RowCol {
  int64_t r, c;
};

// Inverse of blocked_offset.
MXQ_HD constexpr RowCol blocked_position(int64_t off, int64_t nc) {
  const int64_t tile = off / 512, in = off % 512;
  return {(tile / nc) * 128 + ((in % 16) / 4) * 32 + in / 16, (tile % nc) * 4 + in % 4};
}

// ---- token groups --------------------------------------------------------------------------------

// End offset of group g clamped to [previous end, M] (prev_end is the clamped end of g - 1).
MXQ_HD constexpr int64_t clamp_group_end(int64_t raw_end, int64_t prev_end, int64_t M) {
  return raw_end < prev_end ? prev_end : (raw_end > M ? M : raw_end);
}

// Rows of a padded token tensor: round_up(M + G*A, A), an upper bound on sum(A*ceil(size_g/A)).
MXQ_HD constexpr int64_t padded_rows_bound(int64_t M, int64_t G, int64_t A) { return round_up(M + G * A, A); }

// Scale rows of a per-group blocked buffer, groups along M: each group starts on a 128-row tile.
MXQ_HD constexpr int64_t group_m_scale_rows_bound(int64_t M, int64_t G) { return M + 128 * G; }
MXQ_HD constexpr int64_t group_m_scale_rows(int64_t size) { return round_up(size, 128); }

// Scale columns of a group along K: ceil(rows/block) columns, padded to a multiple of 4.
MXQ_HD constexpr int64_t group_k_scale_cols(int64_t size_rows, int64_t block) {
  return round_up(ceil_div(size_rows, block), 4);
}
// Upper bound on the sum of group_k_scale_cols over G groups that share M rows.
MXQ_HD constexpr int64_t group_k_scale_cols_bound(int64_t M, int64_t G, int64_t block) {
  return ceil_div(M, block) + 4 * G;
}

}  // namespace mxq::num
