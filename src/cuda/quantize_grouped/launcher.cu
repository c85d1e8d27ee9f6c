// mxq::cuda::quantize_grouped: fills the GroupedProblem from validated arguments, writes the nvfp4
// tensor scales and hands the call to the launcher of its input type (launch_<dtype>.cu), which
// launches the kernel that tuning.hpp chooses on the caller's stream.
#include "cuda/quantize_grouped/launcher.hpp"

#include <algorithm>
#include <atomic>
#include <limits>

#include "cuda/quantize/dispatch.cuh"
#include "cuda/quantize/tensor_scale.hpp"
#include "cuda/quantize_grouped/forced_kernel.hpp"
#include "cuda/quantize_grouped/launch.hpp"

namespace mxq::cuda::kernels::quantize_grouped {
namespace {

// Both directions share the row tiles of each group only when their padded sizes need the same
// number of 128-row tiles: both pad alike, or the one alignment divides 128.
bool directions_share_tiles(const QuantizeGroups& g) {
  return g.pad_rowwise == g.pad_colwise || g.pad_rowwise + g.pad_colwise <= kTileRows;
}

GroupedProblem make_problem(const QuantizeArgs& a, const QuantizeSizes& sizes) {
  const QuantizeGroups& g = a.groups;
  const int64_t block = num::format_block(a.params.format);
  const int64_t G = g.groups.count;
  const int64_t Mc = has_colwise(a.params.direction) ? sizes.col_data_cols : 0;
  GroupedProblem p;
  // Linear colwise scales of groups along K: ceil(Mc / block) + G columns per k row.
  p.tile = kernels::quantize::make_tile_problem(a, Mc, num::ceil_div(Mc, block) + G);
  p.walk.ends = g.groups.ends;
  p.walk.G = static_cast<int32_t>(G);
  // Rows past 2^31 - 1 lie past every int32 end offset.
  p.walk.M = static_cast<int32_t>(std::min<int64_t>(a.input.rows, std::numeric_limits<int32_t>::max()));
  const int32_t pad = g.pad_rowwise > 0 ? g.pad_rowwise : g.pad_colwise;  // a power of two, or 0
  p.walk.pad_mask = pad > 0 ? pad - 1 : 0;
  p.walk.block_shift = block == 16 ? 4 : 5;
  p.walk.padded_starts = a.out.padded_starts;
  p.walk.padded_ends = a.out.padded_ends;
  p.row_padded = g.pad_rowwise > 0;
  p.col_padded = g.pad_colwise > 0;
  p.Mr = has_rowwise(a.params.direction) ? sizes.row_data_rows : 0;
  p.row_scale_bytes = sizes.row_scale_bytes;
  p.col_scale_bytes = sizes.col_scale_bytes;
  p.k_rows_padded = num::blocked_rows(a.input.cols);
  // At least one column tile, so that the offsets and the zero bytes are written when K is 0.
  p.tiles_k = a.input.cols > 0 ? num::ceil_div(a.input.cols, kTileCols) : 1;
  return p;
}

// The grid of one launch for the directions ROW / COL of p: the rows of the tile bound come from
// the directions served; the groups' tiles from their padded size when a served direction pads.
// Fails when even single-tile strips would need more than 2^31 - 1 CTAs.
Status shape_launch(bool row, bool col, GroupedProblem* p) {
  const int64_t rows = (row && col) ? std::max(p->Mr, p->tile.Mc) : row ? p->Mr : p->tile.Mc;
  p->walk.tiles_from_padded = (row && p->row_padded) || (col && p->col_padded);
  p->walk.q_from_padded = p->col_padded;
  p->tile_rows = num::ceil_div(rows, int64_t{kTileRows}) + p->walk.G;
  if (p->tile_rows * p->tiles_k > 0x7FFFFFFF)
    return Status::error(Code::unsupported, "quantize: more than 2^31 - 1 tiles");
  return {};
}

std::atomic<ColwiseKernel> forced_colwise{ColwiseKernel::automatic};
std::atomic<RowwiseKernel> forced_rowwise{RowwiseKernel::automatic};

}  // namespace

void force_colwise_kernel(ColwiseKernel kernel) { forced_colwise.store(kernel); }
ColwiseKernel forced_colwise_kernel() { return forced_colwise.load(std::memory_order_relaxed); }
void force_rowwise_kernel(RowwiseKernel kernel) { forced_rowwise.store(kernel); }
RowwiseKernel forced_rowwise_kernel() { return forced_rowwise.load(std::memory_order_relaxed); }

Status prepare_grouped(const QuantizeArgs& args, const QuantizeSizes& sizes, GroupedLaunch* l) {
  const Direction d = args.params.direction;
  // A padding alignment above 128 on one direction only: the directions need different row tiles
  // per group, one launch each (the first writes the padded offsets).
  l->split = d == Direction::both && !directions_share_tiles(args.groups);
  l->direction = d;
  l->format = args.params.format;
  l->rule = args.params.rule;
  l->first = make_problem(args, sizes);
  l->second = l->first;
  const Status shaped = shape_launch(has_rowwise(d), has_colwise(d) && !l->split, &l->first);
  if (!shaped.ok()) return shaped;
  if (l->split) {
    l->second.walk.padded_starts = l->second.walk.padded_ends = nullptr;
    const Status second_shaped = shape_launch(false, true, &l->second);
    if (!second_shaped.ok()) return second_shaped;
  }
  l->stream = as_stream(args.stream);
  return kernels::quantize::write_tensor_scales_and_amax(args, l->stream);
}

}  // namespace mxq::cuda::kernels::quantize_grouped

namespace mxq::cuda {

Status quantize_grouped(const QuantizeArgs& args, const QuantizeSizes& sizes) {
  kernels::quantize_grouped::GroupedLaunch l;
  const Status prepared = kernels::quantize_grouped::prepare_grouped(args, sizes, &l);
  if (!prepared.ok()) return prepared;
  return dispatch_input(args.input.dtype,
                        [&](auto in) { return kernels::quantize_grouped::launch_input<decltype(in)>(l); });
}

}  // namespace mxq::cuda
