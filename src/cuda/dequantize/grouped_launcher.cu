// mxq::cuda::dequantize_grouped: the layouts of docs/layouts.md (token groups) to bf16 / fp16 /
// fp32, one strip of positions along M per grid row (grouped_kernel.cuh).
#include "grouped_launcher.hpp"

#include <algorithm>

#include "../common.cuh"
#include "../groups/launch_shape.cuh"
#include "grouped_kernel.cuh"

namespace mxq::cuda {
namespace {

// Whether the vector kernel applies: whole aligned octets along K rowwise; colwise also whole
// octets of positions (R a multiple of 8). Groups along K padded to a multiple of 8 start and end
// on octets; others (padded to 1, 2 or 4, or unpadded, which docs/spec.md asks to be multiples of 32)
// take the instantiation whose strips convert element by element where a group starts or ends
// off a multiple of 8.
template <class Fmt>
bool takes_vector_kernel(const dequant::GroupedProblem& p, bool colwise) {
  return p.K % 8 == 0 && (!colwise || p.R % 8 == 0) && aligned_to(p.data, dequant::Octet<Fmt>::kBytes) &&
         aligned_to(p.out, 16);
}

// One kernel's grid: a row of CTAs per strip of `strip` positions along M, ctas_per_strip(strips,
// tiles_k) (at most) CTAs sharing the strip's tiles_k tiles of `tile_k` along K, each walking the
// groups once.
template <class Kernel, class CtasPerStrip>
Status launch_strips(Kernel kernel, dequant::GroupedProblem p, int64_t strip, int64_t tile_k,
                     CtasPerStrip ctas_per_strip, cudaStream_t stream) {
  const int64_t strips = num::ceil_div(p.R, strip);
  p.tiles_k = num::ceil_div(p.K, tile_k);
  if (strips > 0x7FFFFFFF) return Status::error(Code::unsupported, "dequantize: more than 2^31 - 1 row strips");
  const int64_t per_strip = std::max<int64_t>(1, std::min(ctas_per_strip(strips, p.tiles_k), p.tiles_k));
  const dim3 grid(static_cast<unsigned>(strips), static_cast<unsigned>(per_strip));
  kernel<<<grid, dequant::kGroupedThreads, 0, stream>>>(p);
  return launch_status("dequantize");
}

// CTAs per strip of the vector kernel, from the CTAs resident at once. H100, G = 8, blocked, one
// walk per CTA, same run, 1 / 2 / 16 CTAs per strip against these rules:
// - rowwise, one round of CTAs (resident / strips): 4096 x 7168 mxfp8 0.48 / 0.71 / 0.84 against
//   0.87, 8192 x 2048 0.71 / 0.84 / 0.78 against 0.85, 16384 x 1536 0.87 / 0.84 / 0.77 against
//   0.87, 32768 x 7168 0.89 / 0.90 / 0.84 against 0.89 (FP4 alike; the H200 agrees): rounds of
//   CTAs leave a tail, and every CTA walks the groups;
// - colwise, at least 16 CTAs or 8 rounds: 8 rounds at 4096 x 7168 (56 CTAs per strip) mxfp4 0.81
//   against 0.70 with 16 and 0.77 with 32; 16 at 32768 x 7168 mxfp4 0.80 against 0.78 with 32 and
//   56, mxfp8 0.85 / 0.87 / 0.84; 2 / 4 / 8 CTAs were slower everywhere (65536 x 2048 mxfp4 0.75 /
//   - / 0.79 with 2 / 16): a colwise tile of 128 code rows is long, many short CTAs even out.
//   Where HBM feeds an SM faster (above kFastMemoryGbpsPerSm, launch_shape.cuh) the walk weighs
//   more against a tile: at least 4 CTAs or 4 rounds. H200 (36 GB/s per SM), same run, mxfp4, 4 / 6
//   / 16 CTAs per strip, [this rule's count]: 65536 x 2048 0.62 / 0.64 / 0.58 [4], 131072 x 2048
//   0.64 / 0.64 / 0.58 [4], 32768 x 7168 0.61 / 0.66 / 0.64 [7; 8: 0.63], 16384 x 1536 0.59 / 0.67
//   / 0.63 [12: 0.63], 8192 x 2048 0.69 / 0.68 / 0.65 [16], 4096 x 7168 0.40 / 0.56 / 0.62 [47; 56:
//   0.63].
// Rowwise, a CTA takes at most this many column tiles of its strip: where the strips alone fill a
// round of CTAs (32768 x 7168: 512 strips of 28 tiles), one CTA per strip ran long and left the
// last round a tail. Same run, G = 8, three repetitions, at most 2 / 4 / 8 tiles against none:
// 32768 x 7168 mxfp8 / mxfp4 / nvfp4 with 8: H100 0.882 -> 0.899, 0.836 -> 0.871, 0.727 -> 0.813,
// H200 0.844 -> 0.872, 0.771 -> 0.805, 0.599 -> 0.688; the other shapes, whose launch does not
// change (4096 x 7168, 8192 x 2048, 16384 x 1536, 131072 x 2048), within the runs' spread (1.3 %).
// 2 or 4 tiles gained at some shapes but lost up to 17 % at others (4096 x 7168 nvfp4 with 4: 7
// CTAs per strip, 448 for 396 resident, a second round).
constexpr int64_t kRowTilesPerCta = 8;
int64_t vector_ctas_per_strip(bool colwise, int64_t strips, int64_t tiles_k, int64_t resident, bool fast_memory) {
  strips = std::max<int64_t>(strips, 1);
  if (!colwise) return std::max(resident / strips, num::ceil_div(tiles_k, kRowTilesPerCta));
  if (fast_memory) return std::max<int64_t>(4, num::ceil_div(4 * resident, strips));
  return std::max<int64_t>(16, num::ceil_div(8 * resident, strips));
}

// The vector kernel `kernel` of direction COLWISE with its CTAs per strip.
template <bool COLWISE, class Kernel>
Status launch_vector(Kernel kernel, const dequant::GroupedProblem& p, int64_t strip, int64_t tile_k,
                     cudaStream_t stream) {
  int64_t resident = 0;
  const cudaError_t e = resident_ctas(reinterpret_cast<const void*>(kernel), dequant::kGroupedThreads, &resident);
  if (e != cudaSuccess) return cuda_status("dequantize", e);
  const bool fast_memory = COLWISE && fast_memory_per_sm();
  return launch_strips(kernel, p, strip, tile_k, [&](int64_t strips, int64_t tiles_k) {
    return vector_ctas_per_strip(COLWISE, strips, tiles_k, resident, fast_memory);
  }, stream);
}

template <class Fmt, class Out, bool COLWISE>
Status launch(const dequant::GroupedProblem& p, cudaStream_t stream) {
  if (!takes_vector_kernel<Fmt>(p, COLWISE)) {
    return launch_strips(dequant::dequantize_grouped_kernel<Fmt, Out, COLWISE>, p, dequant::kTile, dequant::kTile,
                         [](int64_t, int64_t) { return int64_t{dequant::kGroupedColumnCtas}; }, stream);
  }
  using T = dequant::VectorTile<Fmt, COLWISE>;  // colwise: T::cols positions by T::rows code rows
  const int64_t strip = COLWISE ? T::cols : T::rows, tile_k = COLWISE ? T::rows : T::cols;
  if constexpr (COLWISE) {
    if (p.pad % 8 != 0 || p.pad == 0) {  // padded to 1, 2 or 4, or unpadded
      return launch_vector<true>(dequant::dequantize_grouped_vector_kernel<Fmt, Out, true, true>, p, strip, tile_k,
                                 stream);
    }
  }
  return launch_vector<COLWISE>(dequant::dequantize_grouped_vector_kernel<Fmt, Out, COLWISE>, p, strip, tile_k,
                                stream);
}

template <class Fmt, class Out>
Status launch(const dequant::GroupedProblem& p, bool colwise, cudaStream_t stream) {
  return colwise ? launch<Fmt, Out, true>(p, stream) : launch<Fmt, Out, false>(p, stream);
}

template <class Fmt>
Status launch_out(DType out, const dequant::GroupedProblem& p, bool colwise, cudaStream_t stream) {
  switch (out) {
    case DType::fp16: return launch<Fmt, dequant::Fp16Out>(p, colwise, stream);
    case DType::fp32: return launch<Fmt, dequant::Fp32Out>(p, colwise, stream);
    default: return launch<Fmt, dequant::Bf16Out>(p, colwise, stream);
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
  p.s_dec = a.s_dec;
  if (p.R == 0 || p.K == 0) return {};
  const cudaStream_t stream = as_stream(a.stream);
  return num::dispatch_format(a.params.format, [&](auto fmt) {
    return launch_out<decltype(fmt)>(a.out_dtype, p, colwise, stream);
  });
}

}  // namespace mxq::cuda
