#include <cuda_runtime.h>

#include "device_fill.hpp"
#include "random_normal.hpp"

namespace mxq::bench {
namespace {

__global__ void fill_random_kernel(void* data, DType t, int64_t count, uint64_t seed) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step)
    store_random(data, t, seed, static_cast<uint64_t>(i));
}

}  // namespace

int launch_fill_random(void* data, DType t, int64_t count, uint64_t seed, void* stream) {
  if (count <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t needed = (count + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(needed < 8192 ? needed : 8192);
  fill_random_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(data, t, count, seed);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace mxq::bench
