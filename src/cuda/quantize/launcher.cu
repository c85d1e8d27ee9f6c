// mxq::cuda::quantize: picks the tile kernel for (input dtype, format, rule, directions), fills its
// Problem from validated arguments and launches it on the caller's stream. nvfp4 first writes the
// tensor scales s_enc / s_dec (from the caller's amax or a device reduction, tensor_scale.cu),
// which the tile kernels then read. Token groups go to ../quantize_grouped.
#include "backend.hpp"
#include "cuda/quantize_grouped/launcher.hpp"
#include "cuda/quantize/launch_plain.cuh"
#include "cuda/quantize/tensor_scale.hpp"
#include "cuda/quantize/tuning.hpp"

namespace mxq::cuda {

kernels::quantize::Problem kernels::quantize::make_tile_problem(const QuantizeArgs& a, int64_t Mc,
                                                                int64_t col_scale_pitch) {
  const TensorView& t = a.input;
  const int64_t esize = dtype_size(t.dtype);
  const int block = num::format_block(a.params.format);
  const int bits = num::format_elem_bits(a.params.format);
  Problem p;
  p.in = t.data;
  p.batch = t.batch;
  p.M = t.rows;
  p.K = t.cols;
  p.Mc = Mc;
  p.row_stride = t.rstride();
  p.batch_stride = t.bstride();
  p.blocked = a.params.layout == ScaleLayout::blocked;
  p.row_data = static_cast<uint8_t*>(a.out.row_data);
  p.row_scales = a.out.row_scales;
  p.col_data = static_cast<uint8_t*>(a.out.col_data);
  p.col_scales = a.out.col_scales;
  p.row_scale_cols = num::ceil_div(p.K, block);
  p.col_scale_cols = col_scale_pitch;
  p.row_scale_batch = p.blocked ? num::blocked_bytes(p.M, p.row_scale_cols) : p.M * p.row_scale_cols;
  p.col_scale_batch = p.blocked ? num::blocked_bytes(p.K, num::ceil_div(Mc, block)) : p.K * col_scale_pitch;
  p.row_scale_nc = num::blocked_cols(p.row_scale_cols) / 4;
  p.col_scale_nc = num::blocked_cols(num::ceil_div(Mc, block)) / 4;
  p.s_enc = a.out.s_enc;
  p.s_dec = a.out.s_dec;
  p.tiles_m = num::ceil_div(p.M, kTileRows);
  p.tiles_k = num::ceil_div(p.K, kTileCols);
  p.vec_in = aligned_to(t.data, 16) && (p.row_stride * esize) % 16 == 0 && (p.batch_stride * esize) % 16 == 0;
  // Rowwise stores one load's codes (2 to 8 bytes); colwise 16-byte pieces of transposed rows.
  p.vec_row_out = aligned_to(p.row_data, 8) && p.K % 8 == 0;
  p.vec_col_out = aligned_to(p.col_data, 16) && (Mc * bits / 8) % 16 == 0;
  p.vec_scales = aligned_to(p.row_scales, 16) && aligned_to(p.col_scales, 16);
  p.elem_aligned = aligned_to(t.data, static_cast<uintptr_t>(esize));
  return p;
}

Status kernels::quantize::prepare_plain(const QuantizeArgs& args, PlainLaunch* l) {
  const TensorView& t = args.input;
  Problem& p = l->p;
  p = make_tile_problem(args, t.rows, num::ceil_div(t.rows, num::format_block(args.params.format)));
  l->tiles = p.batch * p.tiles_m * p.tiles_k;
  if (l->tiles > 0x7FFFFFFF) return Status::error(Code::unsupported, "quantize: more than 2^31 - 1 tiles");
  l->format = args.params.format;
  l->rule = args.params.rule;
  l->direction = args.params.direction;
  l->stream = as_stream(args.stream);
  Facts facts;
  facts.nvfp4 = args.params.format == Format::nvfp4;
  facts.tiles = l->tiles;
  facts.scales_from_given_amax = tensor_scales_from_given_amax(args);
  facts.amax_out_with_given_amax = args.out.amax != nullptr && args.tensor_amax != nullptr;
  const Choice choice = choose_kernel(facts);
  l->derive = choice.derive_tensor_scales;
  l->amax_in_tiles = choice.amax_in_tiles;
  if (l->derive) {
    p.amax = args.tensor_amax;
  } else {
    const Status scales = write_tensor_scales_and_amax(args, l->stream, l->amax_in_tiles);
    if (!scales.ok()) return scales;
  }
  if (l->tiles == 0) return {};
  if (l->amax_in_tiles) {
    p.amax_out = reinterpret_cast<uint32_t*>(args.out.amax);
    const Status cleared = cuda_status(
        "quantize", cudaMemsetAsync(p.amax_out, 0, static_cast<size_t>(p.batch) * sizeof(float), l->stream));
    if (!cleared.ok()) return cleared;
  }
  p.batch_tiles = FastDiv(static_cast<uint32_t>(p.tiles_m * p.tiles_k));
  return {};
}

Status quantize(const QuantizeArgs& args, const QuantizeSizes& sizes) {
  if (args.groups.groups.count > 0) return quantize_grouped(args, sizes);
  kernels::quantize::PlainLaunch l;
  const Status prepared = kernels::quantize::prepare_plain(args, &l);
  if (!prepared.ok() || l.tiles == 0) return prepared;
  return dispatch_input(args.input.dtype, [&](auto in) { return kernels::quantize::launch_plain<decltype(in)>(l); });
}

}  // namespace mxq::cuda
