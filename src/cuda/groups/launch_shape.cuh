// Grid shapes of the token-group and scale-layout kernels: one wave of resident CTAs, each owning
// a contiguous range of work, so that each CTA walks the groups once.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace mxq::cuda {

struct RangeGrid {
  int ctas = 0;
  int64_t per_cta = 0;  // work items of each CTA (the last one may have fewer)
};

// Splits `items` work items over at most one wave of `kernel` CTAs, at least `min_per_cta` items
// each; at least one CTA even for zero items (kernels that also write per-group outputs need it).
inline cudaError_t range_grid(const void* kernel, int threads, int64_t items, int64_t min_per_cta, RangeGrid* g) {
  int device = 0, sms = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
  if (e != cudaSuccess) return e;
  const int64_t wave = int64_t(sms) * (per_sm > 0 ? per_sm : 1);
  int64_t ctas = (items + min_per_cta - 1) / min_per_cta;
  ctas = ctas < 1 ? 1 : (ctas > wave ? wave : ctas);
  g->per_cta = items > 0 ? (items + ctas - 1) / ctas : 0;
  g->ctas = static_cast<int>(g->per_cta > 0 ? (items + g->per_cta - 1) / g->per_cta : 1);
  return cudaSuccess;
}

}  // namespace mxq::cuda
