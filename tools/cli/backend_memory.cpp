#include "backend_memory.hpp"

#include <mxq/mxq.hpp>

#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "cli_error.hpp"

#ifdef MXQ_CLI_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace mxq::cli {
namespace {

#ifdef MXQ_CLI_WITH_CUDA
void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw CliError(kExitFailure, std::string(what) + ": " + cudaGetErrorString(err));
}
#endif

bool device_memory_reachable() {
#ifdef MXQ_CLI_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace

BackendBuffer::BackendBuffer(Backend backend, size_t bytes) : backend_(backend), bytes_(bytes), capacity_(bytes) {
  const size_t alloc = bytes ? bytes : 1;  // a valid pointer even for empty tensors
  if (backend == Backend::cuda) {
#ifdef MXQ_CLI_WITH_CUDA
    check_cuda(cudaMalloc(&ptr_, alloc), "cudaMalloc");
#else
    throw CliError(kExitFailure, "this mxq command was built without CUDA");
#endif
  } else {
    ptr_ = ::operator new(alloc);
  }
}

BackendBuffer::~BackendBuffer() { release(); }

BackendBuffer::BackendBuffer(BackendBuffer&& other) noexcept
    : backend_(other.backend_),
      ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

BackendBuffer& BackendBuffer::operator=(BackendBuffer&& other) noexcept {
  if (this != &other) {
    release();
    backend_ = other.backend_;
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void BackendBuffer::resize(Backend backend, size_t bytes) {
  if (ptr_ != nullptr && backend == backend_ && bytes <= capacity_) {
    bytes_ = bytes;
    return;
  }
  *this = BackendBuffer();  // frees the old memory before taking more
  *this = BackendBuffer(backend, bytes);
}

void BackendBuffer::release() {
  if (!ptr_) return;
#ifdef MXQ_CLI_WITH_CUDA
  if (backend_ == Backend::cuda) {
    cudaFree(ptr_);
    ptr_ = nullptr;
    return;
  }
#endif
  ::operator delete(ptr_);
  ptr_ = nullptr;
}

void BackendBuffer::upload(const void* src, size_t bytes) {
  if (bytes > bytes_) throw CliError(kExitFailure, "internal: upload larger than the buffer");
  if (bytes == 0) return;
#ifdef MXQ_CLI_WITH_CUDA
  if (backend_ == Backend::cuda) {
    check_cuda(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
    return;
  }
#endif
  std::memcpy(ptr_, src, bytes);
}

void BackendBuffer::download(void* dst, size_t bytes) const {
  if (bytes > bytes_) throw CliError(kExitFailure, "internal: download larger than the buffer");
  if (bytes == 0) return;
#ifdef MXQ_CLI_WITH_CUDA
  if (backend_ == Backend::cuda) {
    check_cuda(cudaMemcpy(dst, ptr_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return;
  }
#endif
  std::memcpy(dst, ptr_, bytes);
}

void BackendBuffer::fill(uint8_t byte) {
#ifdef MXQ_CLI_WITH_CUDA
  if (backend_ == Backend::cuda) {
    check_cuda(cudaMemset(ptr_, byte, bytes_), "cudaMemset");
    return;
  }
#endif
  std::memset(ptr_, byte, bytes_);
}

Staged stage(Backend backend, const void* host, size_t bytes) {
  Staged s;
  if (backend == Backend::cpu) {
    s.ptr = host;
    return s;
  }
  s.owner = BackendBuffer(backend, bytes);
  s.owner.upload(host, bytes);
  s.ptr = s.owner.data();
  return s;
}

void synchronize(Backend backend) {
#ifdef MXQ_CLI_WITH_CUDA
  if (backend == Backend::cuda) check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
#else
  (void)backend;
#endif
}

namespace {

// Whether the cuda backend serves a small quantize (its kernels arrive op by op; auto must not pick
// a backend that answers Code::unsupported).
bool cuda_serves_quantize() {
  constexpr int64_t kRows = 32, kCols = 32;
  BackendBuffer input(Backend::cuda, kRows * kCols * 2), data(Backend::cuda, kRows * kCols),
      scales(Backend::cuda, 128 * 4);
  input.fill(0);
  QuantizeArgs args;
  args.input.data = input.data();
  args.input.rows = kRows;
  args.input.cols = kCols;
  args.out.row_data = data.data();
  args.out.row_scales = scales.as<uint8_t>();
  args.backend = Backend::cuda;
  const bool ok = quantize(args).ok();
  synchronize(Backend::cuda);
  return ok;
}

}  // namespace

Backend resolve_backend(Backend requested) {
  const bool cuda_usable = mxq::cuda_available() && device_memory_reachable();
  if (requested == Backend::cuda && !cuda_usable)
    throw CliError(kExitFailure, "--backend cuda: no CUDA device available (use cpu or auto)");
  if (requested == Backend::auto_) return cuda_usable && cuda_serves_quantize() ? Backend::cuda : Backend::cpu;
  return requested;
}

}  // namespace mxq::cli
