// What the plain and the grouped quantize launchers share: the tile Problem filled from validated
// arguments, and the mapping of runtime (dtype, format, rule, directions) to the compile-time
// arguments of the tile kernels.
#pragma once
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/launch_cache.hpp"
#include "cuda/quantize/kernel.cuh"

namespace mxq::cuda::kernels::quantize {

template <ScaleRule R>
using RuleTag = std::integral_constant<ScaleRule, R>;
template <bool B>
using Flag = std::bool_constant<B>;

// Calls fn(RuleTag<rule>{}): the MX rule is a template argument of the kernels (a runtime rule
// would compile both rules' code and a branch into every scale); nvfp4 has no rule.
template <class Fmt, class Fn>
Status dispatch_rule(ScaleRule rule, Fn&& fn) {
  if constexpr (Fmt::nv) {
    return fn(RuleTag<ScaleRule::rceil>{});
  } else {
    switch (rule) {
      case ScaleRule::floor: return fn(RuleTag<ScaleRule::floor>{});
      default: return fn(RuleTag<ScaleRule::rceil>{});
    }
  }
}

// Calls fn(In{}, Fmt{}, RuleTag<rule>{}).
template <class Fn>
Status dispatch_tile_types(DType t, Format f, ScaleRule rule, Fn&& fn) {
  return dispatch_input(t, [&](auto in) {
    return num::dispatch_format(
        f, [&](auto fmt) { return dispatch_rule<decltype(fmt)>(rule, [&](auto r) { return fn(in, fmt, r); }); });
  });
}

// Calls fn(Flag<rowwise>{}, Flag<colwise>{}) for direction d.
template <class Fn>
Status dispatch_directions(Direction d, Fn&& fn) {
  switch (d) {
    case Direction::rowwise: return fn(Flag<true>{}, Flag<false>{});
    case Direction::colwise: return fn(Flag<false>{}, Flag<true>{});
    default: return fn(Flag<true>{}, Flag<true>{});
  }
}

// A paired input (../swiglu/source.cuh) reached a launch of other directions than both in one
// launch: its caller chose it where it must not.
inline Status paired_directions_error() {
  return Status::error(Code::unsupported, "quantize: paired tiles serve both directions in one launch only");
}

// Column tiles of a launch's grid: a paired input's CTA makes a tile of each half.
template <class In>
int64_t grid_tiles_k(int64_t tiles_k) {
  return In::paired_halves ? tiles_k / 2 : tiles_k;
}

// dispatch_directions for input type In: a paired input serves both directions only.
template <class In, class Fn>
Status dispatch_directions_of(Direction d, Fn&& fn) {
  if constexpr (In::paired_halves) {
    return d == Direction::both ? fn(Flag<true>{}, Flag<true>{}) : paired_directions_error();
  } else {
    return dispatch_directions(d, fn);
  }
}

// Lets `kernel` use `bytes` of dynamic shared memory (beyond the 48 KB default).
// Asked of the driver once per kernel, device and size.
template <class Kernel>
Status allow_dynamic_smem(Kernel* kernel, size_t bytes) {
  if (bytes == 0) return {};
  static LaunchCache allowed;
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  int64_t known = 0;
  const void* key = reinterpret_cast<const void*>(kernel);
  if (e == cudaSuccess && allowed.find(key, device, static_cast<int64_t>(bytes), &known)) return {};
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e == cudaSuccess) allowed.store(key, device, static_cast<int64_t>(bytes), 1);
  return cuda_status("quantize", e);
}

// The tile Problem of validated arguments; Mc: the colwise data rows (M, or the padded rows of
// token groups), col_scale_pitch: bytes per k row of linear colwise scales.
Problem make_tile_problem(const QuantizeArgs& a, int64_t Mc, int64_t col_scale_pitch);

}  // namespace mxq::cuda::kernels::quantize
