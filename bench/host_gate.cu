#include <cuda_runtime.h>

#include <atomic>

#include "cuda_check.hpp"
#include "host_gate.hpp"

namespace mxq::bench {
namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Waits until *released reaches ticket (modulo 2^32), or until timeout_ns have passed.
__global__ void wait_for_host(const volatile uint32_t* released, uint32_t ticket, volatile uint32_t* expired,
                              uint64_t timeout_ns) {
  const uint64_t t0 = global_ns();
  while (static_cast<int32_t>(*released - ticket) < 0) {
    if (global_ns() - t0 > timeout_ns) {
      *expired = *expired + 1;  // one wait at a time per gate
      return;
    }
    __nanosleep(1000);
  }
}

}  // namespace

HostGate::HostGate(uint64_t timeout_ns) : timeout_ns_(timeout_ns) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, 2 * sizeof(uint32_t), cudaHostAllocMapped), "cudaHostAlloc (host gate)");
  released_ = static_cast<volatile uint32_t*>(p);
  expired_ = released_ + 1;
  released_[0] = 0;
  expired_[0] = 0;
  void* device_flags = nullptr;
  check(cudaHostGetDevicePointer(&device_flags, p, 0), "cudaHostGetDevicePointer (host gate)");
  device_flags_ = static_cast<volatile uint32_t*>(device_flags);
}

HostGate::~HostGate() { cudaFreeHost(const_cast<uint32_t*>(released_)); }

int HostGate::close(void* stream) {
  wait_for_host<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(device_flags_, ++ticket_, device_flags_ + 1,
                                                                timeout_ns_);
  return static_cast<int>(cudaGetLastError());
}

void HostGate::open() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *released_ = ticket_;
}

uint32_t HostGate::timeouts() const { return *expired_; }

}  // namespace mxq::bench
