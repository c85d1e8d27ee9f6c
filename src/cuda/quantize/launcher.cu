// mxq::cuda::quantize: picks the tile kernel for (input dtype, format, rule, directions), fills its
// Problem from validated arguments and launches it on the caller's stream. nvfp4 first writes the
// tensor scales s_enc / s_dec (from the caller's amax or a device reduction, tensor_scale.cu),
// which the tile kernels then read. Token groups go to ../quantize_grouped.
#include "../../backend.hpp"
#include "../quantize_grouped/launcher.hpp"
#include "dispatch.cuh"
#include "tensor_scale.hpp"

namespace mxq::cuda {

quant::Problem quant::make_tile_problem(const QuantizeArgs& a, int64_t Mc, int64_t col_scale_pitch) {
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

Status quantize(const QuantizeArgs& args, const QuantizeSizes& sizes) {
  if (args.groups.groups.count > 0) return quantize_grouped(args, sizes);
  const TensorView& t = args.input;
  quant::Problem p =
      quant::make_tile_problem(args, t.rows, num::ceil_div(t.rows, num::format_block(args.params.format)));
  const int64_t tiles = p.batch * p.tiles_m * p.tiles_k;
  if (tiles > 0x7FFFFFFF) return Status::error(Code::unsupported, "quantize: more than 2^31 - 1 tiles");
  const cudaStream_t stream = as_stream(args.stream);
  const bool derive = tiles > 0 && tiles <= quant::kDeriveTensorScalesTiles && tensor_scales_from_given_amax(args);
  // out.amax with the caller's nvfp4 amax (delayed scaling): found by the tile kernel while it
  // quantizes (each CTA folds its tile's maximum in), not by a second read of the input.
  const bool amax_in_tiles = tiles > 0 && args.out.amax != nullptr && args.params.format == Format::nvfp4 &&
                             args.tensor_amax != nullptr;
  if (derive) {
    p.amax = args.tensor_amax;
  } else {
    const Status scales = write_tensor_scales_and_amax(args, stream, amax_in_tiles);
    if (!scales.ok()) return scales;
  }
  if (tiles == 0) return {};
  if (amax_in_tiles) {
    p.amax_out = reinterpret_cast<uint32_t*>(args.out.amax);
    const Status cleared =
        cuda_status("quantize", cudaMemsetAsync(p.amax_out, 0, static_cast<size_t>(p.batch) * sizeof(float), stream));
    if (!cleared.ok()) return cleared;
  }
  p.batch_tiles = FastDiv(static_cast<uint32_t>(p.tiles_m * p.tiles_k));
  return quant::dispatch_tile_types(t.dtype, args.params.format, args.params.rule, [&](auto in, auto fmt, auto rule) {
    return quant::dispatch_directions(args.params.direction, [&](auto row, auto col) {
      using In = decltype(in);
      using Fmt = decltype(fmt);
      constexpr bool kRow = decltype(row)::value, kCol = decltype(col)::value;
      p.order = quant::TileOrder(static_cast<uint32_t>(p.tiles_m), static_cast<uint32_t>(p.tiles_k),
                                 quant::tile_order_band<quant::TileTraits<In, Fmt>, kRow, kCol>(p.tiles_k));
      auto kernel = quant::quantize_tile_kernel<In, Fmt, kRow, kCol, decltype(rule)::value>;
      if constexpr (Fmt::nv) {
        constexpr ScaleRule kRule = decltype(rule)::value;
        if (amax_in_tiles) {
          kernel = derive ? quant::quantize_tile_kernel<In, Fmt, kRow, kCol, kRule, true, true>
                          : quant::quantize_tile_kernel<In, Fmt, kRow, kCol, kRule, false, true>;
        } else if (derive) {
          kernel = quant::quantize_tile_kernel<In, Fmt, kRow, kCol, kRule, true>;
        }
      }
      const size_t smem = quant::tile_dynamic_smem<quant::TileTraits<In, Fmt>, kCol>();
      const Status st = quant::allow_dynamic_smem(kernel, smem);
      if (!st.ok()) return st;
      kernel<<<static_cast<unsigned>(tiles), quant::kThreads, smem, stream>>>(p);
      return launch_status("quantize");
    });
  });
}

}  // namespace mxq::cuda
