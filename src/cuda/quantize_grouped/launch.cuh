// Launches the grouped quantize kernel that tuning.hpp chooses, for one input type (included by
// launch_<dtype>.cu only).
#pragma once
#include <algorithm>

#include "cuda/groups/launch_shape.cuh"
#include "cuda/quantize/dispatch.cuh"
#include "cuda/quantize_grouped/col_windows_kernel.cuh"
#include "cuda/quantize_grouped/forced_kernel.hpp"
#include "cuda/quantize_grouped/kernel.cuh"
#include "cuda/quantize_grouped/launch.hpp"
#include "cuda/quantize_grouped/rows_kernel.cuh"
#include "cuda/quantize_grouped/tuning.hpp"

namespace mxq::cuda::kernels::quantize_grouped {

template <class T>
constexpr bool kWindowsTypes = T::block == 32 && T::elem_bits == 8 && sizeof(typename T::Raw) == 2;

template <class In, class Fmt, ScaleRule kRule>
Status launch_rows(GroupedProblem p, cudaStream_t stream) {
  const int64_t input_row_tiles = std::max(p.tile.tiles_m, int64_t{1});
  p.order = quantize::TileOrder(static_cast<uint32_t>(input_row_tiles), static_cast<uint32_t>(p.tiles_k),
                                static_cast<uint32_t>(p.tiles_k));
  auto kernel = grouped_rows_kernel<In, Fmt, kRule>;
  const size_t smem = rows_dynamic_smem<In, Fmt>();
  const Status st = quantize::allow_dynamic_smem(kernel, smem);
  if (!st.ok()) return st;
  kernel<<<static_cast<unsigned>(input_row_tiles * p.tiles_k), quantize::kThreads, smem, stream>>>(p);
  return launch_status("quantize");
}

template <class In, class Fmt, ScaleRule kRule, class W>
Status launch_windows(GroupedProblem p, cudaStream_t stream) {
  using T = quantize::TileTraits<In, Fmt>;
  const int64_t windows = window_count(p.tile.M, W::owned);
  p.tile_rows = windows;
  p.order = quantize::TileOrder(static_cast<uint32_t>(windows), static_cast<uint32_t>(p.tiles_k),
                                quantize::tile_order_band<T, false, true>(p.tiles_k));
  auto kernel = grouped_col_windows_kernel<In, Fmt, kRule, W>;
  const size_t smem = window_dynamic_smem<T, W>();
  const Status st = quantize::allow_dynamic_smem(kernel, smem);
  if (!st.ok()) return st;
  kernel<<<static_cast<unsigned>(windows * p.tiles_k), quantize::kThreads, smem, stream>>>(p);
  return launch_status("quantize");
}

template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule>
Status launch_tiles(GroupedProblem p, const Choice& c, cudaStream_t stream) {
  using T = quantize::TileTraits<In, Fmt>;
  p.strip_tiles = c.strip_tiles;
  p.strip_stride = c.strip_stride;
  const int64_t tiles_k = quantize::grid_tiles_k<In>(p.tiles_k);
  p.order = quantize::TileOrder(static_cast<uint32_t>(p.strip_stride), static_cast<uint32_t>(tiles_k),
                                quantize::tile_order_band<T, ROW, COL>(tiles_k));
  auto kernel = grouped_quantize_kernel<In, Fmt, ROW, COL, kRule, TileWalk::strips>;
  if (c.strip_tiles == 1) {
    kernel = grouped_quantize_kernel<In, Fmt, ROW, COL, kRule, TileWalk::one_tile>;
    if constexpr (ROW && COL && T::elem_bits == 8 && !In::paired_halves) {
      if (c.rows_land) kernel = grouped_quantize_kernel<In, Fmt, ROW, COL, kRule, TileWalk::one_tile_rows_land>;
    }
  }
  const size_t smem = quantize::tile_dynamic_smem<T, COL>();
  const Status st = quantize::allow_dynamic_smem(kernel, smem);
  if (!st.ok()) return st;
  kernel<<<static_cast<unsigned>(p.strip_stride * tiles_k), quantize::kThreads, smem, stream>>>(p);
  return launch_status("quantize");
}

// The facts choose_kernel decides on, for the directions ROW / COL of p.
template <class T, bool ROW, bool COL>
Status grouped_facts(const GroupedProblem& p, Facts* f) {
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return cuda_status("quantize", e);
  f->row = ROW;
  f->col = COL;
  f->elem_bits = T::elem_bits;
  f->windows_types = kWindowsTypes<T>;
  f->windows_layout = p.col_padded && p.walk.pad_mask >= 31 && p.walk.G <= kWarpWalkGroups && p.tile.K > 0;
  f->computed = T::Input::computed;
  f->groups = p.walk.G;
  f->rows = p.tile.M;
  f->input_row_tiles = std::max(p.tile.tiles_m, int64_t{1});
  f->tile_rows = p.tile_rows;
  f->typical_rows = num::ceil_div(p.tile.M, int64_t{kTileRows}) + 1;
  f->tiles_k = quantize::grid_tiles_k<typename T::Input>(p.tiles_k);
  f->sms = sms;
  f->slots = int64_t{sms} * T::grouped_ctas_per_sm(COL);
  f->fast_memory = groups::fast_memory_per_sm();
  const ColwiseKernel forced = forced_colwise_kernel();
  f->force_windows = forced == ColwiseKernel::windows;
  f->force_tiles = forced == ColwiseKernel::tiles;
  f->force_row_group_tiles = forced_rowwise_kernel() == RowwiseKernel::group_tiles;
  return {};
}

template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule>
Status launch(const GroupedProblem& p, cudaStream_t stream) {
  using T = quantize::TileTraits<In, Fmt>;
  Facts facts;
  const Status got = grouped_facts<T, ROW, COL>(p, &facts);
  if (!got.ok()) return got;
  const Choice c = choose_kernel(facts);
  if constexpr (In::paired_halves) {  // both directions, which always take tiles
    static_assert(ROW && COL, "paired tiles: both directions");
    return launch_tiles<In, Fmt, ROW, COL, kRule>(p, c, stream);
  } else {
    switch (c.kernel) {
      case Kernel::input_row_tiles:
        if constexpr (ROW && !COL) return launch_rows<In, Fmt, kRule>(p, stream);
        break;
      case Kernel::windows:
        if constexpr (COL && !ROW && kWindowsTypes<T>) return launch_windows<In, Fmt, kRule, GroupWindows>(p, stream);
        break;
      case Kernel::one_group_windows:
        if constexpr (COL && !ROW && kWindowsTypes<T>)
          return launch_windows<In, Fmt, kRule, OneGroupWindows>(p, stream);
        break;
      case Kernel::group_tiles: return launch_tiles<In, Fmt, ROW, COL, kRule>(p, c, stream);
    }
    return Status::error(Code::unsupported, "quantize: no grouped kernel for this case");
  }
}

template <class In>
Status launch_input(const GroupedLaunch& l) {
  return num::dispatch_format(l.format, [&](auto fmt) {
    using Fmt = decltype(fmt);
    return quantize::dispatch_rule<Fmt>(l.rule, [&](auto rule) {
      constexpr ScaleRule kRule = decltype(rule)::value;
      if constexpr (In::paired_halves) {
        if (l.split || l.direction != Direction::both) return quantize::paired_directions_error();
        return launch<In, Fmt, true, true, kRule>(l.first, l.stream);
      } else {
        if (l.split) {
          const Status s = launch<In, Fmt, true, false, kRule>(l.first, l.stream);
          return s.ok() ? launch<In, Fmt, false, true, kRule>(l.second, l.stream) : s;
        }
        return quantize::dispatch_directions(l.direction, [&](auto row, auto col) {
          return launch<In, Fmt, decltype(row)::value, decltype(col)::value, kRule>(l.first, l.stream);
        });
      }
    });
  });
}

}  // namespace mxq::cuda::kernels::quantize_grouped
