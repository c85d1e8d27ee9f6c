// mxq::cuda::quantize: picks the tile kernel for (input dtype, format, directions), fills its
// Problem from validated arguments and launches it on the caller's stream. nvfp4 first writes the
// tensor scales s_enc / s_dec (from the caller's amax or a device reduction, tensor_scale.cu),
// which the tile kernel then reads.
#include "../../backend.hpp"
#include "../common.cuh"
#include "../quantize_grouped/launcher.hpp"
#include "kernel.cuh"
#include "tensor_scale.hpp"

namespace mxq::cuda {
namespace {

quant::Problem make_problem(const QuantizeArgs& a, int block) {
  const TensorView& t = a.input;
  const int64_t esize = dtype_size(t.dtype);
  quant::Problem p;
  p.in = t.data;
  p.batch = t.batch;
  p.M = t.rows;
  p.K = t.cols;
  p.row_stride = t.rstride();
  p.batch_stride = t.bstride();
  p.blocked = a.params.layout == ScaleLayout::blocked;
  p.row_data = static_cast<uint8_t*>(a.out.row_data);
  p.row_scales = a.out.row_scales;
  p.col_data = static_cast<uint8_t*>(a.out.col_data);
  p.col_scales = a.out.col_scales;
  p.row_scale_cols = num::ceil_div(p.K, block);
  p.col_scale_cols = num::ceil_div(p.M, block);
  p.row_scale_batch = p.blocked ? num::blocked_bytes(p.M, p.row_scale_cols) : p.M * p.row_scale_cols;
  p.col_scale_batch = p.blocked ? num::blocked_bytes(p.K, p.col_scale_cols) : p.K * p.col_scale_cols;
  p.row_scale_nc = num::blocked_cols(p.row_scale_cols) / 4;
  p.col_scale_nc = num::blocked_cols(p.col_scale_cols) / 4;
  p.s_enc = a.out.s_enc;
  p.s_dec = a.out.s_dec;
  p.tiles_m = num::ceil_div(p.M, quant::kTileRows);
  p.tiles_k = num::ceil_div(p.K, quant::kTileCols);
  p.vec_in = aligned_to(t.data, 16) && (p.row_stride * esize) % 16 == 0 && (p.batch_stride * esize) % 16 == 0;
  // Rowwise stores one load's codes (2 to 8 bytes); colwise stores one block's (8 to 32 bytes).
  const int bits = num::format_elem_bits(a.params.format);
  p.vec_row_out = aligned_to(p.row_data, 8) && p.K % 8 == 0;
  p.vec_col_out = aligned_to(p.col_data, 16) && (p.M * bits / 8) % 16 == 0;
  p.vec_scales = aligned_to(p.row_scales, 16) && aligned_to(p.col_scales, 16);
  p.elem_aligned = aligned_to(t.data, static_cast<uintptr_t>(esize));
  return p;
}

template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule>
Status launch(const quant::Problem& p, int64_t tiles, cudaStream_t stream) {
  auto kernel = quant::quantize_tile_kernel<In, Fmt, ROW, COL, kRule>;
  using T = quant::TileTraits<In, Fmt>;
  const size_t smem = COL ? static_cast<size_t>(T::staged_tile_bytes + T::col_out_tile_bytes) : 0;
  if (smem > 0) {  // with the static scale tiles it may pass the 48 KB default
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
    if (e != cudaSuccess) return cuda_status("quantize", e);
  }
  kernel<<<static_cast<unsigned>(tiles), quant::kThreads, smem, stream>>>(p);
  return launch_status("quantize");
}

// The MX scale rule as a template argument; nvfp4 scales have no rule (one kernel).
template <class In, class Fmt, bool ROW, bool COL>
Status launch_rule(ScaleRule rule, const quant::Problem& p, int64_t tiles, cudaStream_t stream) {
  if constexpr (Fmt::nv) {
    return launch<In, Fmt, ROW, COL, ScaleRule::rceil>(p, tiles, stream);
  } else {
    return rule == ScaleRule::floor ? launch<In, Fmt, ROW, COL, ScaleRule::floor>(p, tiles, stream)
                                    : launch<In, Fmt, ROW, COL, ScaleRule::rceil>(p, tiles, stream);
  }
}

template <class In, class Fmt>
Status launch_directions(Direction d, ScaleRule rule, const quant::Problem& p, int64_t tiles, cudaStream_t stream) {
  switch (d) {
    case Direction::rowwise: return launch_rule<In, Fmt, true, false>(rule, p, tiles, stream);
    case Direction::colwise: return launch_rule<In, Fmt, false, true>(rule, p, tiles, stream);
    default: return launch_rule<In, Fmt, true, true>(rule, p, tiles, stream);
  }
}

}  // namespace

Status quantize(const QuantizeArgs& args, const QuantizeSizes& sizes) {
  const Format f = args.params.format;
  if (args.groups.groups.count > 0) return quantize_grouped(args, sizes);
  const quant::Problem p = make_problem(args, num::format_block(f));
  const int64_t tiles = p.batch * p.tiles_m * p.tiles_k;
  if (tiles > 0x7FFFFFFF) return Status::error(Code::unsupported, "quantize: more than 2^31 - 1 tiles");
  const cudaStream_t stream = as_stream(args.stream);
  if (f == Format::nvfp4) {
    const Status st = write_nvfp4_tensor_scales(args.input, args.tensor_amax, args.out.s_enc, args.out.s_dec, stream);
    if (!st.ok()) return st;
  }
  if (tiles == 0) return {};
  return dispatch_input(args.input.dtype, [&](auto in) {
    using In = decltype(in);
    return num::dispatch_format(f, [&](auto fmt) {
      return launch_directions<In, decltype(fmt)>(args.params.direction, args.params.rule, p, tiles, stream);
    });
  });
}

}  // namespace mxq::cuda
