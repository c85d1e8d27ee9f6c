// mxq::cuda::quantize: picks the tile kernel for (input dtype, format, rule, directions), fills its
// Problem from validated arguments and launches it on the caller's stream. nvfp4 first writes the
// tensor scales s_enc / s_dec (from the caller's amax or a device reduction, tensor_scale.cu),
// which the tile kernels then read. Token groups go to ../quantize_grouped.
#include "backend.hpp"
#include "cuda/quantize_grouped/launcher.hpp"
#include "cuda/quantize/dispatch.cuh"
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

Status quantize(const QuantizeArgs& args, const QuantizeSizes& sizes) {
  if (args.groups.groups.count > 0) return quantize_grouped(args, sizes);
  const TensorView& t = args.input;
  kernels::quantize::Problem p =
      kernels::quantize::make_tile_problem(args, t.rows, num::ceil_div(t.rows, num::format_block(args.params.format)));
  const int64_t tiles = p.batch * p.tiles_m * p.tiles_k;
  if (tiles > 0x7FFFFFFF) return Status::error(Code::unsupported, "quantize: more than 2^31 - 1 tiles");
  const cudaStream_t stream = as_stream(args.stream);
  kernels::quantize::Facts facts;
  facts.nvfp4 = args.params.format == Format::nvfp4;
  facts.tiles = tiles;
  facts.scales_from_given_amax = kernels::quantize::tensor_scales_from_given_amax(args);
  facts.amax_out_with_given_amax = args.out.amax != nullptr && args.tensor_amax != nullptr;
  const kernels::quantize::Choice choice = kernels::quantize::choose_kernel(facts);
  const bool derive = choice.derive_tensor_scales, amax_in_tiles = choice.amax_in_tiles;
  if (derive) {
    p.amax = args.tensor_amax;
  } else {
    const Status scales = kernels::quantize::write_tensor_scales_and_amax(args, stream, amax_in_tiles);
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
  return kernels::quantize::dispatch_tile_types(
      t.dtype, args.params.format, args.params.rule, [&](auto in, auto fmt, auto rule) {
        return kernels::quantize::dispatch_directions(args.params.direction, [&](auto row, auto col) {
          using In = decltype(in);
          using Fmt = decltype(fmt);
          constexpr bool kRow = decltype(row)::value, kCol = decltype(col)::value;
          p.order = kernels::quantize::TileOrder(
              static_cast<uint32_t>(p.tiles_m), static_cast<uint32_t>(p.tiles_k),
              kernels::quantize::tile_order_band<kernels::quantize::TileTraits<In, Fmt>, kRow, kCol>(p.tiles_k));
          constexpr ScaleRule kRule = decltype(rule)::value;
          using Options = kernels::quantize::TileOptions;
          auto kernel = kernels::quantize::quantize_tile_kernel<In, Fmt, kRow, kCol, kRule>;
          if constexpr (Fmt::nv) {
            const unsigned options =
                (derive ? Options::derive_tensor_scales : 0u) | (amax_in_tiles ? Options::amax_out : 0u);
            switch (options) {
              case Options::derive_tensor_scales:
                kernel =
                    kernels::quantize::quantize_tile_kernel<In, Fmt, kRow, kCol, kRule, Options::derive_tensor_scales>;
                break;
              case Options::amax_out:
                kernel = kernels::quantize::quantize_tile_kernel<In, Fmt, kRow, kCol, kRule, Options::amax_out>;
                break;
              case Options::derive_tensor_scales | Options::amax_out:
                kernel = kernels::quantize::quantize_tile_kernel<In, Fmt, kRow, kCol, kRule,
                                                                 Options::derive_tensor_scales | Options::amax_out>;
                break;
              default: break;
            }
          }
          const size_t smem = kernels::quantize::tile_dynamic_smem<kernels::quantize::TileTraits<In, Fmt>, kCol>();
          const Status st = kernels::quantize::allow_dynamic_smem(kernel, smem);
          if (!st.ok()) return st;
          kernel<<<static_cast<unsigned>(tiles), kernels::quantize::kThreads, smem, stream>>>(p);
          return launch_status("quantize");
        });
      });
}

}  // namespace mxq::cuda
