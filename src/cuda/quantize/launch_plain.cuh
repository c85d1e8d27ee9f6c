// The plain (ungrouped) quantize launch in two steps, so that a computed input (../swiglu) runs
// the same kernels: prepare_plain fills the Problem from validated arguments and writes what the
// tile kernel reads before it (tensor scales, a cleared amax); launch_plain<In> picks the tile
// kernel for In and the call's format, rule and directions, and launches it.
#pragma once
#include "cuda/quantize/dispatch.cuh"

namespace mxq::cuda::kernels::quantize {

struct PlainLaunch {
  Problem p;
  int64_t tiles = 0;  // 0: nothing to launch
  bool derive = false, amax_in_tiles = false;
  Format format = Format::mxfp8;
  ScaleRule rule = ScaleRule::floor;
  Direction direction = Direction::rowwise;
  cudaStream_t stream = nullptr;
};

Status prepare_plain(const QuantizeArgs& args, PlainLaunch* l);

template <class In>
Status launch_plain(const PlainLaunch& l) {
  Problem p = l.p;
  return num::dispatch_format(l.format, [&](auto fmt) {
    using Fmt = decltype(fmt);
    using T = TileTraits<In, Fmt>;
    return dispatch_rule<Fmt>(l.rule, [&](auto rule) {
      constexpr ScaleRule kRule = decltype(rule)::value;
      return dispatch_directions_of<In>(l.direction, [&](auto row, auto col) {
        constexpr bool kRow = decltype(row)::value, kCol = decltype(col)::value;
        const int64_t tiles_k = grid_tiles_k<In>(p.tiles_k);
        p.order = TileOrder(static_cast<uint32_t>(p.tiles_m), static_cast<uint32_t>(tiles_k),
                            tile_order_band<T, kRow, kCol>(tiles_k));
        p.batch_tiles = FastDiv(static_cast<uint32_t>(p.tiles_m * tiles_k));
        auto kernel = quantize_tile_kernel<In, Fmt, kRow, kCol, kRule>;
        if constexpr (Fmt::nv) {
          const unsigned options = (l.derive ? TileOptions::derive_tensor_scales : 0u) |
                                   (l.amax_in_tiles ? TileOptions::amax_out : 0u);
          switch (options) {
            case TileOptions::derive_tensor_scales:
              kernel = quantize_tile_kernel<In, Fmt, kRow, kCol, kRule, TileOptions::derive_tensor_scales>;
              break;
            case TileOptions::amax_out:
              kernel = quantize_tile_kernel<In, Fmt, kRow, kCol, kRule, TileOptions::amax_out>;
              break;
            case TileOptions::derive_tensor_scales | TileOptions::amax_out:
              kernel = quantize_tile_kernel<In, Fmt, kRow, kCol, kRule,
                                            TileOptions::derive_tensor_scales | TileOptions::amax_out>;
              break;
            default: break;
          }
        }
        const size_t smem = tile_dynamic_smem<T, kCol>();
        const Status st = allow_dynamic_smem(kernel, smem);
        if (!st.ok()) return st;
        kernel<<<static_cast<unsigned>(p.batch * p.tiles_m * tiles_k), kThreads, smem, l.stream>>>(p);
        return launch_status("quantize");
      });
    });
  });
}

}  // namespace mxq::cuda::kernels::quantize
