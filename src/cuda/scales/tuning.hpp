// Tuning of the scale-layout kernels (swizzle to blocked, unswizzle to linear): their CTA size
// and the least work per CTA, which range_grid (groups/launch_shape.cuh) spreads over one wave of
// resident CTAs. docs/kernels/scales.md describes them.
#pragma once
#include <cstdint>

namespace mxq::cuda::kernels::scales {

// 256 threads of 4 group items each: the group walk's chunk of 1024 groups per step.
constexpr int kThreads = 256, kItems = 4;
// swizzle: at least four 16-byte units per thread, so that a CTA's walk over the groups is paid
// for by its copies.
constexpr int64_t kMinUnitsPerCta = 4 * kThreads;
// unswizzle: at least four bytes per thread, in whole rows.
constexpr int64_t kMinBytesPerCta = 4 * kThreads;

}  // namespace mxq::cuda::kernels::scales
