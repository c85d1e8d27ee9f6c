// CUDA runtime queries used by src/api to pick and check the backend.
#include <cuda_runtime.h>

#include "backend.hpp"

namespace mxq::cuda {

bool device_present() {
  // Devices do not come or go in a process (CUDA_VISIBLE_DEVICES is read once): ask once.
  static const bool present = [] {
    int n = 0;
    const bool any = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    cudaGetLastError();  // "no device" / "no driver" must not linger as the last error
    return any;
  }();
  return present;
}

bool is_device_pointer(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error of a failed query
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

}  // namespace mxq::cuda
