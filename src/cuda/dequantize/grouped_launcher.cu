// mxq::cuda::dequantize_grouped: the layouts of docs/layouts.md (token groups) to bf16 / fp16 /
// fp32, one strip of positions along M per grid row (grouped_kernel.cuh).
#include "cuda/dequantize/grouped_launcher.hpp"

#include <algorithm>

#include "cuda/common.cuh"
#include "cuda/groups/launch_shape.cuh"
#include "cuda/dequantize/grouped_kernel.cuh"
#include "cuda/dequantize/tuning.hpp"

namespace mxq::cuda::kernels::dequantize {
namespace {

// One kernel's grid: a row of CTAs per strip of `strip` positions along M, ctas_per_strip(strips,
// tiles_k) (at most) CTAs sharing the strip's tiles_k tiles of `tile_k` along K, each walking the
// groups once.
template <class Kernel, class CtasPerStrip>
Status launch_strips(Kernel kernel, GroupedProblem p, int64_t strip, int64_t tile_k, CtasPerStrip ctas_per_strip,
                     cudaStream_t stream) {
  const int64_t strips = num::ceil_div(p.R, strip);
  p.tiles_k = num::ceil_div(p.K, tile_k);
  if (strips > 0x7FFFFFFF) return Status::error(Code::unsupported, "dequantize: more than 2^31 - 1 row strips");
  const int64_t per_strip = std::max<int64_t>(1, std::min(ctas_per_strip(strips, p.tiles_k), p.tiles_k));
  const dim3 grid(static_cast<unsigned>(strips), static_cast<unsigned>(per_strip));
  kernel<<<grid, kGroupedThreads, 0, stream>>>(p);
  return launch_status("dequantize");
}

// The vector kernel `kernel` of direction COLWISE with its CTAs per strip.
template <bool COLWISE, class Kernel>
Status launch_vector(Kernel kernel, const GroupedProblem& p, int64_t strip, int64_t tile_k, cudaStream_t stream) {
  int64_t resident = 0;
  const cudaError_t e =
      kernels::groups::resident_ctas(reinterpret_cast<const void*>(kernel), kGroupedThreads, &resident);
  if (e != cudaSuccess) return cuda_status("dequantize", e);
  const bool fast_memory = COLWISE && kernels::groups::fast_memory_per_sm();
  return launch_strips(
      kernel, p, strip, tile_k,
      [&](int64_t strips, int64_t tiles_k) {
        return vector_ctas_per_strip(COLWISE, strips, tiles_k, resident, fast_memory);
      },
      stream);
}

template <class Fmt, class Out, bool COLWISE>
Status launch(const GroupedProblem& p, cudaStream_t stream) {
  using T = VectorTile<Fmt, COLWISE>;  // colwise: T::cols positions by T::rows code rows
  const int64_t strip = COLWISE ? T::cols : T::rows, tile_k = COLWISE ? T::rows : T::cols;
  Facts f;
  f.colwise = COLWISE;
  f.K = p.K;
  f.positions = p.R;
  f.data_aligned = aligned_to(p.data, Octet<Fmt>::kBytes);
  f.out_aligned = aligned_to(p.out, 16);
  f.grouped = true;
  f.pad = p.pad;
  switch (choose_kernel(f)) {
    case Kernel::per_element:
      return launch_strips(
          dequantize_grouped_kernel<Fmt, Out, COLWISE>, p, kTile, kTile,
          [](int64_t, int64_t) { return int64_t{kGroupedColumnCtas}; }, stream);
    case Kernel::vector_straddling:
      if constexpr (COLWISE) {
        return launch_vector<true>(dequantize_grouped_vector_kernel<Fmt, Out, true, true>, p, strip, tile_k, stream);
      }
      break;
    case Kernel::vector: break;
  }
  return launch_vector<COLWISE>(dequantize_grouped_vector_kernel<Fmt, Out, COLWISE>, p, strip, tile_k, stream);
}

template <class Fmt, class Out>
Status launch(const GroupedProblem& p, bool colwise, cudaStream_t stream) {
  return colwise ? launch<Fmt, Out, true>(p, stream) : launch<Fmt, Out, false>(p, stream);
}

template <class Fmt>
Status launch_out(DType out, const GroupedProblem& p, bool colwise, cudaStream_t stream) {
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

Status dequantize_grouped(const DequantizeArgs& a) {
  const bool colwise = a.params.direction == Direction::colwise;
  const int64_t block = num::format_block(a.params.format);
  const int64_t G = a.groups.groups.count;
  kernels::dequantize::GroupedProblem p;
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
  p.s_dec = a.s_dec;
  if (p.R == 0 || p.K == 0) return {};
  const cudaStream_t stream = as_stream(a.stream);
  return num::dispatch_format(a.params.format,
                              [&](auto fmt) { return launch_out<decltype(fmt)>(a.out_dtype, p, colwise, stream); });
}

}  // namespace mxq::cuda
