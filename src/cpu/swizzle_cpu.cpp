// Scale-matrix swizzle on the host: linear (batch, rows, cols) <-> the blocked 128x4 layout of
// docs/spec.md section 5, plain or per token group (section 6, docs/layouts.md).
#include <mxq/numerics/layout.hpp>

#include <cstring>

#include "backend.hpp"
#include "cpu/element_io_internal.hpp"

namespace mxq::cpu {
namespace {

// Bytes of the blocked buffer (docs/layouts.md), the same bound src/api reports from swizzle_size.
int64_t blocked_buffer_bytes(const SwizzleArgs& a) {
  switch (a.group_axis) {
    case ScaleGroups::along_m: return num::group_m_scale_rows_bound(a.rows, a.groups.count) * num::blocked_cols(a.cols);
    case ScaleGroups::along_k:
      return num::blocked_rows(a.rows) * num::group_k_scale_cols_bound(a.cols, a.groups.count, 1);
    default: return a.batch * num::blocked_bytes(a.rows, a.cols);
  }
}

// Calls fn(linear_index, blocked_offset) for every element of the linear matrix that has a place
// in the blocked buffer; the bytes of the buffer that fn never touches are padding.
template <class Fn>
void for_each_placement(const SwizzleArgs& a, Fn&& fn) {
  const int64_t R = a.rows, C = a.cols;
  switch (a.group_axis) {
    case ScaleGroups::along_m: {
      // Group g owns rows [begin, end); its blocked matrix starts at scale row sum of Rp(size_h).
      const int64_t nc = num::blocked_cols(C) / 4;
      int64_t end = 0, start_row = 0;
      for (int64_t g = 0; g < a.groups.count; ++g) {
        const int64_t begin = end;
        end = num::clamp_group_end(load_at(a.groups.ends, g), begin, R);
        const int64_t base = start_row * num::blocked_cols(C);
        for (int64_t i = 0; i < end - begin; ++i)
          for (int64_t c = 0; c < C; ++c) fn((begin + i) * C + c, base + num::blocked_offset(i, c, nc));
        start_row += num::group_m_scale_rows(end - begin);
      }
      return;
    }
    case ScaleGroups::along_k: {
      // Group g owns scale columns [begin, end); its Rp x Cp(size) matrix follows the previous ones.
      const int64_t Rp = num::blocked_rows(R);
      int64_t end = 0, start_col = 0;
      for (int64_t g = 0; g < a.groups.count; ++g) {
        const int64_t begin = end;
        end = num::clamp_group_end(load_at(a.groups.ends, g), begin, C);
        const int64_t q = num::blocked_cols(end - begin);
        const int64_t base = Rp * start_col;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t l = 0; l < end - begin; ++l) fn(r * C + begin + l, base + num::blocked_offset(r, l, q / 4));
        start_col += q;
      }
      return;
    }
    default: {
      const int64_t nc = num::blocked_cols(C) / 4, per_batch = num::blocked_bytes(R, C);
      for (int64_t b = 0; b < a.batch; ++b)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < C; ++c) fn((b * R + r) * C + c, b * per_batch + num::blocked_offset(r, c, nc));
    }
  }
}

}  // namespace

Status swizzle(const SwizzleArgs& args) {
  const int64_t bytes = blocked_buffer_bytes(args);
  if (bytes > 0) std::memset(args.out, 0, static_cast<size_t>(bytes));
  for_each_placement(args, [&](int64_t lin, int64_t blk) { args.out[blk] = args.in[lin]; });
  return {};
}

Status unswizzle(const SwizzleArgs& args, uint8_t* linear_out) {
  const int64_t bytes = args.batch * args.rows * args.cols;
  if (bytes > 0) std::memset(linear_out, 0, static_cast<size_t>(bytes));
  for_each_placement(args, [&](int64_t lin, int64_t blk) { linear_out[lin] = args.out[blk]; });
  return {};
}

}  // namespace mxq::cpu
