// mxq::cuda::quantize_grouped: fills the GroupedProblem from validated arguments and launches the
// grouped tile kernel for (input dtype, format, directions) on the caller's stream.
#include "launcher.hpp"

#include "../common.cuh"
#include "kernel.cuh"

namespace mxq::cuda {
namespace {

using qgroup::GroupedProblem;

// Both directions share the row tiles of each group only when their padded sizes need the same
// number of 128-row tiles: both pad alike, or the one alignment divides 128.
bool directions_share_tiles(const QuantizeGroups& g) {
  return g.pad_rowwise == g.pad_colwise || g.pad_rowwise + g.pad_colwise <= qgroup::kTileRows;
}

GroupedProblem make_problem(const QuantizeArgs& a, const QuantizeSizes& sizes, int block) {
  const TensorView& t = a.input;
  const QuantizeGroups& g = a.groups;
  const int64_t esize = dtype_size(t.dtype);
  GroupedProblem p;
  p.in = t.data;
  p.M = t.rows;
  p.K = t.cols;
  p.row_stride = t.rstride();
  p.rule = a.params.rule;
  p.blocked = a.params.layout == ScaleLayout::blocked;
  p.walk.ends = g.groups.ends;
  p.walk.G = g.groups.count;
  p.walk.M = t.rows;
  p.walk.pad = g.pad_rowwise > 0 ? g.pad_rowwise : g.pad_colwise;
  p.walk.padded_starts = a.out.padded_starts;
  p.walk.padded_ends = a.out.padded_ends;
  p.row_padded = g.pad_rowwise > 0;
  p.col_padded = g.pad_colwise > 0;
  p.row_data = static_cast<uint8_t*>(a.out.row_data);
  p.row_scales = a.out.row_scales;
  p.col_data = static_cast<uint8_t*>(a.out.col_data);
  p.col_scales = a.out.col_scales;
  p.Mr = has_rowwise(a.params.direction) ? sizes.row_data_rows : 0;
  p.Mc = has_colwise(a.params.direction) ? sizes.col_data_cols : 0;
  p.row_scale_bytes = sizes.row_scale_bytes;
  p.col_scale_bytes = sizes.col_scale_bytes;
  p.k_blocks = num::ceil_div(p.K, block);
  p.col_scale_pitch = num::ceil_div(p.Mc, block) + p.walk.G;
  p.k_rows_padded = num::blocked_rows(p.K);
  // At least one column tile, so that the offsets and the zero bytes are written when K is 0.
  p.tiles_k = p.K > 0 ? num::ceil_div(p.K, qgroup::kTileCols) : 1;
  p.vec_in = aligned_to(t.data, 16) && (p.row_stride * esize) % 16 == 0;
  p.vec_row_out = aligned_to(p.row_data, 8) && p.K % 8 == 0;
  p.vec_col_out = aligned_to(p.col_data, 16) && p.Mc % 16 == 0;
  p.vec_scales = aligned_to(p.row_scales, 16) && aligned_to(p.col_scales, 16);
  p.elem_aligned = aligned_to(t.data, static_cast<uintptr_t>(esize));
  return p;
}

// Column tiles per CTA: enough to amortise the group walk of each CTA over several tiles, few
// enough to keep about 8 CTAs per SM (2-3 waves at the kernel's occupancy).
Status choose_strips(GroupedProblem* p) {
  constexpr int64_t kMaxStripTiles = 8, kCtasPerSm = 8;
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return cuda_status("quantize", e);
  const int64_t per_cta = p->tile_rows * p->tiles_k / (int64_t{sms} * kCtasPerSm);
  p->strip_tiles = per_cta < 1 ? 1 : per_cta > kMaxStripTiles ? kMaxStripTiles : per_cta;
  p->strips = num::ceil_div(p->tiles_k, p->strip_tiles);
  return {};
}

// One launch for the directions ROW / COL of p. The rows of the tile bound come from the
// directions served; the groups' tiles from their padded size when a served direction pads.
template <class In, class Fmt, bool ROW, bool COL>
Status launch(GroupedProblem p, cudaStream_t stream) {
  const int64_t rows = (ROW && COL) ? (p.Mr > p.Mc ? p.Mr : p.Mc) : ROW ? p.Mr : p.Mc;
  p.walk.tiles_from_padded = (ROW && p.row_padded) || (COL && p.col_padded);
  p.walk.q_from_padded = p.col_padded;
  p.tile_rows = num::ceil_div(rows, int64_t{qgroup::kTileRows}) + p.walk.G;
  const Status strips = choose_strips(&p);
  if (!strips.ok()) return strips;
  const int64_t ctas = p.tile_rows * p.strips;
  if (ctas > 0x7FFFFFFF) return Status::error(Code::unsupported, "quantize: more than 2^31 - 1 tiles");
  auto kernel = qgroup::grouped_quantize_kernel<In, Fmt, ROW, COL>;
  const size_t smem = COL ? static_cast<size_t>(quant::TileTraits<In, Fmt>::staged_tile_bytes) : 0;
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
    if (e != cudaSuccess) return cuda_status("quantize", e);
  }
  kernel<<<static_cast<unsigned>(ctas), qgroup::kThreads, smem, stream>>>(p);
  return launch_status("quantize");
}

template <class In, class Fmt>
Status launch_directions(const QuantizeArgs& a, const GroupedProblem& p, cudaStream_t stream) {
  switch (a.params.direction) {
    case Direction::rowwise: return launch<In, Fmt, true, false>(p, stream);
    case Direction::colwise: return launch<In, Fmt, false, true>(p, stream);
    default:
      if (directions_share_tiles(a.groups)) return launch<In, Fmt, true, true>(p, stream);
      {  // a padding alignment above 128 on one direction only: one pass per direction
        const Status s = launch<In, Fmt, true, false>(p, stream);
        if (!s.ok()) return s;
        GroupedProblem col = p;
        col.walk.padded_starts = col.walk.padded_ends = nullptr;  // written by the first pass
        return launch<In, Fmt, false, true>(col, stream);
      }
  }
}

}  // namespace

Status quantize_grouped(const QuantizeArgs& args, const QuantizeSizes& sizes) {
  const Format f = args.params.format;
  if (f != Format::mxfp8 && f != Format::mxfp8_e5m2) {
    return Status::error(Code::unsupported, "quantize: the cuda backend serves token groups for mxfp8 and mxfp8_e5m2 only so far");
  }
  const GroupedProblem p = make_problem(args, sizes, num::format_block(f));
  const cudaStream_t stream = as_stream(args.stream);
  return dispatch_input(args.input.dtype, [&](auto in) {
    using In = decltype(in);
    return f == Format::mxfp8_e5m2 ? launch_directions<In, num::MXFP8_E5M2>(args, p, stream)
                                   : launch_directions<In, num::MXFP8>(args, p, stream);
  });
}

}  // namespace mxq::cuda
