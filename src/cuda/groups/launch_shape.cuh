// Grid shapes of the token-group, scale-layout and grouped kernels, and the device properties they
// depend on: each CTA owns a contiguous range of work and walks the groups once, so the number of
// CTAs bounds how often the groups are walked.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "cuda/launch_cache.hpp"
#include "cuda/groups/tuning.hpp"

namespace mxq::cuda::kernels::groups {

// Peak HBM bandwidth per SM of the current device in GB/s: memory clock (kHz) x 2 transfers x bus
// width (bits) / 8 / SMs; 0 when unknown. Cached per device: the memory clock query costs more than
// a whole small op.
inline int64_t memory_gbps_per_sm() {
  static std::atomic<int64_t> cached[64];  // value + 1; 0: not queried yet
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const bool cacheable = device >= 0 && device < 64;
  if (cacheable) {
    const int64_t known = cached[device].load(std::memory_order_relaxed);
    if (known > 0) return known - 1;
  }
  int khz = 0, bits = 0, sms = 0;
  int64_t gbps = 0;  // unknown: as slow memory
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess && sms > 0) {
    gbps = int64_t{khz} * 2 * bits / 8 / 1000000 / sms;
  } else {
    cudaGetLastError();
  }
  if (cacheable) cached[device].store(gbps + 1);
  return gbps;
}

// Whether the grouped launchers' CTAs should be fewer and longer (tuning.hpp).
inline bool fast_memory_per_sm() { return memory_gbps_per_sm() > kFastMemoryGbpsPerSm; }

// CTAs of `kernel` (threads each, no dynamic shared memory) resident on the current device at once.
// Asked of the driver once per kernel, device and block size.
inline cudaError_t resident_ctas(const void* kernel, int threads, int64_t* ctas) {
  static LaunchCache resident;
  int device = 0, sms = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess && resident.find(kernel, device, threads, ctas)) return cudaSuccess;
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
  if (e != cudaSuccess) return e;
  *ctas = int64_t(sms) * (per_sm > 0 ? per_sm : 1);
  resident.store(kernel, device, threads, *ctas);
  return cudaSuccess;
}

struct RangeGrid {
  int ctas = 0;
  int64_t per_cta = 0;  // work items of each CTA (the last one may have fewer)
};

// Splits `items` work items over CTAs of `kernel` of about `min_per_cta` items each (evened out),
// but at most `max_waves` waves of resident CTAs (then each CTA gets more); at least one CTA even
// for zero items (kernels that also write per-group outputs need it). Several waves let the
// hardware hand the work of slow SMs to fast ones; one wave walks the groups the fewest times.
inline cudaError_t range_grid(const void* kernel, int threads, int64_t items, int64_t min_per_cta, RangeGrid* g,
                              int64_t max_waves = 1) {
  int64_t resident = 0;
  const cudaError_t e = resident_ctas(kernel, threads, &resident);
  if (e != cudaSuccess) return e;
  const int64_t most = resident * (max_waves > 0 ? max_waves : 1);
  int64_t ctas = (items + min_per_cta - 1) / min_per_cta;
  ctas = ctas < 1 ? 1 : (ctas > most ? most : ctas);
  g->per_cta = items > 0 ? (items + ctas - 1) / ctas : 0;
  g->ctas = static_cast<int>(g->per_cta > 0 ? (items + g->per_cta - 1) / g->per_cta : 1);
  return cudaSuccess;
}

}  // namespace mxq::cuda::kernels::groups
