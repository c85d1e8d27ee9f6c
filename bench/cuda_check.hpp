// Internal: CUDA runtime errors of the bench's own calls as exceptions (the cuda device's setup,
// events, the host gate).
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace mxq::bench {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace mxq::bench
