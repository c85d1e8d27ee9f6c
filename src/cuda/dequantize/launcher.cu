// mxq::cuda::dequantize: every format, rowwise or colwise data, linear or blocked scales, to
// bf16 / fp16 / fp32; token groups in grouped_launcher.cu.
#include "../../backend.hpp"
#include "../common.cuh"
#include "grouped_launcher.hpp"
#include "kernel.cuh"

namespace mxq::cuda {
namespace {

template <class Fmt, class Out>
Status launch(const dequant::Problem& p, bool colwise, int64_t tiles, cudaStream_t stream) {
  const dim3 block(dequant::kTile, dequant::kRowsPerPass);
  if (colwise) {
    dequant::dequantize_tile_kernel<Fmt, Out, true><<<static_cast<unsigned>(tiles), block, 0, stream>>>(p);
  } else {
    dequant::dequantize_tile_kernel<Fmt, Out, false><<<static_cast<unsigned>(tiles), block, 0, stream>>>(p);
  }
  return launch_status("dequantize");
}

template <class Fmt>
Status launch_out(DType out, const dequant::Problem& p, bool colwise, int64_t tiles, cudaStream_t stream) {
  switch (out) {
    case DType::fp16: return launch<Fmt, dequant::Fp16Out>(p, colwise, tiles, stream);
    case DType::fp32: return launch<Fmt, dequant::Fp32Out>(p, colwise, tiles, stream);
    default: return launch<Fmt, dequant::Bf16Out>(p, colwise, tiles, stream);
  }
}

}  // namespace

Status dequantize(const DequantizeArgs& a) {
  const Format f = a.params.format;
  if (a.groups.groups.count > 0) return dequantize_grouped(a);
  const bool colwise = a.params.direction == Direction::colwise;
  const int block = num::format_block(f);
  dequant::Problem p;
  p.data = static_cast<const uint8_t*>(a.data);
  p.scales = a.scales;
  p.out = a.out;
  p.M = a.rows;
  p.K = a.cols;
  p.blocked = a.params.layout == ScaleLayout::blocked;
  p.s_dec = a.s_dec;
  // Logical scale matrix: rowwise (M, ceil(K/b)), colwise (K, ceil(M/b)).
  const int64_t scale_rows = colwise ? p.K : p.M;
  p.scale_cols = num::ceil_div(colwise ? p.M : p.K, block);
  p.scale_batch = p.blocked ? num::blocked_bytes(scale_rows, p.scale_cols) : scale_rows * p.scale_cols;
  p.tiles_m = num::ceil_div(p.M, dequant::kTile);
  p.tiles_k = num::ceil_div(p.K, dequant::kTile);
  const int64_t tiles = a.batch * p.tiles_m * p.tiles_k;
  if (tiles == 0) return {};
  if (tiles > 0x7FFFFFFF) return Status::error(Code::unsupported, "dequantize: more than 2^31 - 1 tiles");
  const cudaStream_t stream = as_stream(a.stream);
  return num::dispatch_format(f, [&](auto fmt) {
    return launch_out<decltype(fmt)>(a.out_dtype, p, colwise, tiles, stream);
  });
}

}  // namespace mxq::cuda
