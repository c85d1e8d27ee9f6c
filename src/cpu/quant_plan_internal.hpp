// Where one direction of a quantize call puts its data and scales (docs/layouts.md), shared by the
// CPU quantize and dequantize. A direction is a list of segments: the whole tensor, or one token
// group each. A segment maps input rows onto consecutive data rows of the output (rowwise rows, or
// colwise columns of the transposed data), followed by zero rows when the direction pads.
#pragma once
#include <cstdint>
#include <vector>

#include <mxq/numerics.hpp>
#include <mxq/quantize.hpp>

#include "element_io_internal.hpp"

namespace mxq::cpu {

// Byte offset of logical scale (r, c) of a segment inside one batch's scale buffer. Rowwise: r is
// the row inside the segment, c the block along K. Colwise: r is k, c the block inside the segment.
struct ScaleMap {
  bool blocked = false;
  int64_t base = 0;   // first byte of the segment's scales
  int64_t pitch = 0;  // linear: bytes per scale row
  int64_t nc = 0;     // blocked: padded columns / 4 of the segment's matrix

  int64_t offset(int64_t r, int64_t c) const {
    return blocked ? base + num::blocked_offset(r, c, nc) : base + r * pitch + c;
  }
};

struct Segment {
  int64_t in_row = 0;     // first input row
  int64_t real_rows = 0;  // rows read from the input; the remaining rows are zeros (padding)
  int64_t out_row = 0;    // first data row of this direction
  int64_t rows = 0;       // data rows of the segment (>= real_rows)
  ScaleMap scales;
};

struct DirectionPlan {
  std::vector<Segment> segments;
  int64_t data_rows = 0;          // Mr (rowwise) or Mc (colwise) per batch
  int64_t data_batch_bytes = 0;   // bytes of one batch of data
  int64_t scale_batch_bytes = 0;  // bytes of one batch of scales
};

// Token-group ends clamped to [previous end, M] (docs/spec.md section 6), so any offsets are safe.
inline std::vector<int64_t> clamped_group_ends(const TokenGroups& groups, int64_t M) {
  std::vector<int64_t> ends(static_cast<size_t>(groups.count));
  int64_t prev = 0;
  for (int64_t g = 0; g < groups.count; ++g) {
    prev = num::clamp_group_end(load_at(groups.ends, g), prev, M);
    ends[static_cast<size_t>(g)] = prev;
  }
  return ends;
}

// Data rows of a direction: M, or the padded bound round_up(M + G*A, A) when it pads.
inline int64_t direction_data_rows(int64_t M, const QuantizeGroups& g, bool rowwise) {
  const int64_t A = rowwise ? g.pad_rowwise : g.pad_colwise;
  return g.groups.count > 0 && A > 0 ? num::padded_rows_bound(M, g.groups.count, A) : M;
}

// First padded row of each group with alignment A: ps_g = sum_{h<g} A*ceil(n_h/A).
inline std::vector<int64_t> padded_group_starts(const std::vector<int64_t>& ends, int64_t A) {
  std::vector<int64_t> starts(ends.size());
  int64_t prev_end = 0, at = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    starts[g] = at;
    at += num::round_up(ends[g] - prev_end, A);
    prev_end = ends[g];
  }
  return starts;
}

// The segments of one direction of input rows M, columns K (see docs/layouts.md).
inline DirectionPlan plan_direction(bool rowwise, const QuantizeParams& p, const QuantizeGroups& g, int64_t M,
                                    int64_t K) {
  const int64_t block = num::format_block(p.format);
  const int bits = num::format_elem_bits(p.format);
  const bool blocked = p.layout == ScaleLayout::blocked;
  const bool grouped = g.groups.count > 0;
  const int64_t A = grouped ? (rowwise ? g.pad_rowwise : g.pad_colwise) : 0;

  DirectionPlan plan;
  plan.data_rows = direction_data_rows(M, g, rowwise);
  const int64_t Mx = plan.data_rows;
  const int64_t k_blocks = num::ceil_div(K, block);

  // Row ranges of the segments.
  if (!grouped) {
    plan.segments.push_back({0, M, 0, M, {}});
  } else {
    const std::vector<int64_t> ends = clamped_group_ends(g.groups, M);
    const std::vector<int64_t> starts = A > 0 ? padded_group_starts(ends, A) : std::vector<int64_t>{};
    int64_t prev = 0;
    for (size_t i = 0; i < ends.size(); ++i) {
      const int64_t n = ends[i] - prev;
      if (A > 0) {
        plan.segments.push_back({prev, n, starts[i], num::round_up(n, A), {}});
      } else {
        plan.segments.push_back({prev, n, prev, n, {}});
      }
      prev = ends[i];
    }
  }

  if (rowwise) {
    plan.data_batch_bytes = Mx * code_bytes(K, bits);
    const int64_t cp = num::blocked_cols(k_blocks);
    plan.scale_batch_bytes = blocked ? num::blocked_bytes(Mx, k_blocks) : Mx * k_blocks;
    int64_t group_row = 0;  // groups along M: each group's blocked matrix starts on a 128-row tile
    for (Segment& s : plan.segments) {
      if (!blocked) {
        s.scales = {false, s.out_row * k_blocks, k_blocks, 0};
      } else if (!grouped) {
        s.scales = {true, 0, 0, cp / 4};
      } else {
        s.scales = {true, group_row * cp, 0, cp / 4};
        group_row += num::group_m_scale_rows(s.rows);
      }
    }
  } else {
    plan.data_batch_bytes = K * code_bytes(Mx, bits);
    const int64_t m_blocks = num::ceil_div(Mx, block);
    const int64_t L = m_blocks + (grouped ? g.groups.count : 0);  // linear scale columns
    const int64_t rp = num::blocked_rows(K);
    plan.scale_batch_bytes = blocked ? num::blocked_bytes(K, m_blocks) : K * m_blocks;
    int64_t col = 0;  // groups along K: first scale column (linear) or byte (blocked) of a group
    for (Segment& s : plan.segments) {
      const int64_t q = num::ceil_div(s.rows, block);
      if (!blocked) {
        s.scales = {false, col, L, 0};
        col += grouped ? q : 0;
      } else {
        const int64_t cp = num::blocked_cols(grouped ? q : m_blocks);
        s.scales = {true, col * rp, 0, cp / 4};
        col += grouped ? cp : 0;
      }
    }
  }
  return plan;
}

}  // namespace mxq::cpu
