// mxq::cuda::dequantize: every format, rowwise or colwise data, linear or blocked scales, to
// bf16 / fp16 / fp32; token groups in grouped_launcher.cu. The vector kernels take rows that are
// whole octets (a multiple of 8 long, both dimensions for colwise) at aligned addresses; every
// other case takes the per-element tile kernel (kernel.cuh).
#include <algorithm>

#include "backend.hpp"
#include "cuda/common.cuh"
#include "cuda/dequantize/grouped_launcher.hpp"
#include "cuda/dequantize/kernel.cuh"
#include "cuda/dequantize/tuning.hpp"

namespace mxq::cuda::kernels::dequantize {
namespace {

constexpr int64_t kMaxGridYZ = 65535;  // the kernels loop over tile rows and batches past it

template <class Fmt, class Out, bool COLWISE>
Status launch_vector(Problem p, cudaStream_t stream) {
  using T = VectorTile<Fmt, COLWISE>;
  // Tiles of T::rows code rows by T::cols codes: code rows are M rowwise, K colwise.
  p.tiles_m = num::ceil_div(p.M, COLWISE ? T::cols : T::rows);
  const int64_t tiles_k = num::ceil_div(p.K, COLWISE ? T::rows : T::cols);
  if (tiles_k > 0x7FFFFFFF) return Status::error(Code::unsupported, "dequantize: more than 2^31 - 1 column tiles");
  const dim3 grid(static_cast<unsigned>(tiles_k), static_cast<unsigned>(std::min(p.tiles_m, kMaxGridYZ)),
                  static_cast<unsigned>(std::min(p.batch, kMaxGridYZ)));
  dequantize_vector_kernel<Fmt, Out, COLWISE><<<grid, kVectorThreads, 0, stream>>>(p);
  return launch_status("dequantize");
}

template <class Fmt, class Out>
Status launch_per_element(Problem p, bool colwise, cudaStream_t stream) {
  p.tiles_m = num::ceil_div(p.M, kTile);
  p.tiles_k = num::ceil_div(p.K, kTile);
  const int64_t tiles = p.batch * p.tiles_m * p.tiles_k;
  if (tiles > 0x7FFFFFFF) return Status::error(Code::unsupported, "dequantize: more than 2^31 - 1 tiles");
  const dim3 block(kTile, kRowsPerPass);
  if (colwise) {
    dequantize_tile_kernel<Fmt, Out, true><<<static_cast<unsigned>(tiles), block, 0, stream>>>(p);
  } else {
    dequantize_tile_kernel<Fmt, Out, false><<<static_cast<unsigned>(tiles), block, 0, stream>>>(p);
  }
  return launch_status("dequantize");
}

template <class Fmt, class Out>
Status launch(const Problem& p, bool colwise, cudaStream_t stream) {
  Facts f;
  f.colwise = colwise;
  f.K = p.K;
  f.positions = p.M;
  f.data_aligned = aligned_to(p.data, Octet<Fmt>::kBytes);
  f.out_aligned = aligned_to(p.out, 16);
  switch (choose_kernel(f)) {
    case Kernel::per_element: return launch_per_element<Fmt, Out>(p, colwise, stream);
    default: return colwise ? launch_vector<Fmt, Out, true>(p, stream) : launch_vector<Fmt, Out, false>(p, stream);
  }
}

template <class Fmt>
Status launch_out(DType out, const Problem& p, bool colwise, cudaStream_t stream) {
  switch (out) {
    case DType::fp16: return launch<Fmt, Fp16Out>(p, colwise, stream);
    case DType::fp32: return launch<Fmt, Fp32Out>(p, colwise, stream);
    default: return launch<Fmt, Bf16Out>(p, colwise, stream);
  }
}

}  // namespace
}  // namespace mxq::cuda::kernels::dequantize

namespace mxq::cuda {

using namespace kernels::dequantize;  // this file's helpers above

Status dequantize(const DequantizeArgs& a) {
  const Format f = a.params.format;
  if (a.groups.groups.count > 0) return dequantize_grouped(a);
  const bool colwise = a.params.direction == Direction::colwise;
  const int block = num::format_block(f);
  kernels::dequantize::Problem p;
  p.data = static_cast<const uint8_t*>(a.data);
  p.scales = a.scales;
  p.out = a.out;
  p.batch = a.batch;
  p.M = a.rows;
  p.K = a.cols;
  p.blocked = a.params.layout == ScaleLayout::blocked;
  p.s_dec = a.s_dec;
  // Logical scale matrix: rowwise (M, ceil(K/b)), colwise (K, ceil(M/b)).
  const int64_t scale_rows = colwise ? p.K : p.M;
  p.scale_cols = num::ceil_div(colwise ? p.M : p.K, block);
  p.blocked_nc = num::blocked_cols(p.scale_cols) / 4;
  p.scale_batch = p.blocked ? num::blocked_bytes(scale_rows, p.scale_cols) : scale_rows * p.scale_cols;
  if (p.batch * p.M * p.K == 0) return {};
  const cudaStream_t stream = as_stream(a.stream);
  return num::dispatch_format(f, [&](auto fmt) { return launch_out<decltype(fmt)>(a.out_dtype, p, colwise, stream); });
}

}  // namespace mxq::cuda
