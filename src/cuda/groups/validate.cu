// validate_group_ends on the device: one CTA finds the first bad end offset (docs/spec.md section 6)
// and leaves it in a module variable that the host reads back; the only token-group op that
// synchronises. The message matches the cpu backend's (src/cpu/validate_cpu.cpp) word for word.
#include <mutex>
#include <string>

#include "backend.hpp"
#include "cuda/common.cuh"

namespace mxq::cuda::kernels::groups {
namespace {

constexpr int kThreads = 1024;

// The first bad index (-1: none) with the offending end and its predecessor.
struct BadEnd {
  int64_t index;
  int64_t end;
  int64_t prev;
};
__device__ BadEnd g_bad_end;

// The rules are checked in the cpu order: negative, greater than M, then less than the previous
// raw end (earlier ends are all valid when this is the first bad one, so "previous" is raw).
__global__ void __launch_bounds__(kThreads) find_bad_end_kernel(const int32_t* ends, int64_t G, int64_t M) {
  __shared__ unsigned long long first_bad;
  if (threadIdx.x == 0) first_bad = ~0ull;
  __syncthreads();
  for (int64_t base = 0; base < G; base += kThreads) {
    const int64_t g = base + threadIdx.x;
    if (g < G) {
      const int64_t e = ends[g], prev = g > 0 ? ends[g - 1] : 0;
      if (e < 0 || e > M || e < prev) atomicMin(&first_bad, static_cast<unsigned long long>(g));
    }
    __syncthreads();
    if (first_bad != ~0ull) break;  // uniform: read after the barrier
    __syncthreads();                // nobody writes first_bad before everyone has read it
  }
  if (threadIdx.x == 0) {
    const int64_t g = first_bad == ~0ull ? -1 : static_cast<int64_t>(first_bad);
    g_bad_end = {g, g >= 0 ? ends[g] : 0, g > 0 ? ends[g - 1] : 0};
  }
}

Status bad_end(const BadEnd& b, const std::string& rule) {
  return Status::error(Code::invalid_offsets, "validate_group_ends: groups.ends[" + std::to_string(b.index) + "] (" +
                                                  std::to_string(b.end) + ") " + rule);
}

// The module variable holds one result: concurrent validations on this device take turns.
std::mutex g_validate_mutex;

}  // namespace
}  // namespace mxq::cuda::kernels::groups

namespace mxq::cuda {

using namespace kernels::groups;  // this file's helpers above

Status validate_group_ends(const TokenGroups& groups, int64_t M, void* stream) {
  const char* op = "validate_group_ends";
  if (groups.count == 0) return {};
  const std::lock_guard<std::mutex> lock(g_validate_mutex);
  const cudaStream_t s = as_stream(stream);
  find_bad_end_kernel<<<1, kThreads, 0, s>>>(groups.ends, groups.count, M);
  if (Status st = launch_status(op); !st.ok()) return st;
  BadEnd b{};
  cudaError_t e = cudaMemcpyFromSymbolAsync(&b, g_bad_end, sizeof b, 0, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) return cuda_status(op, e);
  if (b.index < 0) return {};
  if (b.end < 0) return bad_end(b, "is negative");
  if (b.end > M) return bad_end(b, "is greater than M (" + std::to_string(M) + ")");
  return bad_end(b, "is less than groups.ends[" + std::to_string(b.index - 1) + "] (" + std::to_string(b.prev) +
                        "): ends must not decrease");
}

}  // namespace mxq::cuda
