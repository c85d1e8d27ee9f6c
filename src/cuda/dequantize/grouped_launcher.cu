// mxq::cuda::dequantize_grouped: the layouts of docs/layouts.md (token groups) to bf16 / fp16 /
// fp32, one strip of 32 output rows per grid row.
#include "grouped_launcher.hpp"

#include <algorithm>

#include "../common.cuh"
#include "grouped_kernel.cuh"

namespace mxq::cuda {
namespace {

template <class Fmt, class Out>
Status launch(const dequant::GroupedProblem& p, bool colwise, dim3 grid, cudaStream_t stream) {
  if (colwise) {
    dequant::dequantize_grouped_kernel<Fmt, Out, true><<<grid, dequant::kGroupedThreads, 0, stream>>>(p);
  } else {
    dequant::dequantize_grouped_kernel<Fmt, Out, false><<<grid, dequant::kGroupedThreads, 0, stream>>>(p);
  }
  return launch_status("dequantize");
}

template <class Fmt>
Status launch_out(DType out, const dequant::GroupedProblem& p, bool colwise, dim3 grid, cudaStream_t stream) {
  switch (out) {
    case DType::fp16: return launch<Fmt, dequant::Fp16Out>(p, colwise, grid, stream);
    case DType::fp32: return launch<Fmt, dequant::Fp32Out>(p, colwise, grid, stream);
    default: return launch<Fmt, dequant::Bf16Out>(p, colwise, grid, stream);
  }
}

}  // namespace

Status dequantize_grouped(const DequantizeArgs& a) {
  const bool colwise = a.params.direction == Direction::colwise;
  const int64_t block = num::format_block(a.params.format);
  const int64_t G = a.groups.groups.count;
  dequant::GroupedProblem p;
  p.data = static_cast<const uint8_t*>(a.data);
  p.scales = a.scales;
  p.out = a.out;
  p.ends = a.groups.groups.ends;
  p.G = G;
  p.M = a.rows;
  p.K = a.cols;
  p.pad = colwise ? a.groups.pad_colwise : a.groups.pad_rowwise;
  p.R = p.pad > 0 ? num::padded_rows_bound(p.M, G, p.pad) : p.M;
  p.blocked = a.params.layout == ScaleLayout::blocked;
  p.k_blocks = num::ceil_div(p.K, block);
  p.pitch = num::ceil_div(p.R, block) + G;
  p.tiles_k = num::ceil_div(p.K, dequant::kTile);
  p.s_dec = a.s_dec;
  const int64_t strips = num::ceil_div(p.R, dequant::kTile);
  if (strips == 0 || p.tiles_k == 0) return {};
  if (strips > 0x7FFFFFFF) return Status::error(Code::unsupported, "dequantize: more than 2^31 - 1 row strips");
  const dim3 grid(static_cast<unsigned>(strips),
                  static_cast<unsigned>(std::min<int64_t>(p.tiles_k, dequant::kGroupedColumnCtas)));
  const cudaStream_t stream = as_stream(a.stream);
  return num::dispatch_format(a.params.format, [&](auto fmt) {
    return launch_out<decltype(fmt)>(a.out_dtype, p, colwise, grid, stream);
  });
}

}  // namespace mxq::cuda
