// Memory on the backend that runs the ops: host memory for the cpu backend, device memory for the
// cuda backend (only when the command was built with CUDA). The commands stage inputs with
// upload(), run library ops on data(), and read results back with download().
#pragma once
#include <mxq/types.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mxq::cli {

class BackendBuffer {
 public:
  BackendBuffer() = default;
  BackendBuffer(Backend backend, size_t bytes);  // backend is cpu or cuda, never auto_
  ~BackendBuffer();
  BackendBuffer(BackendBuffer&& other) noexcept;
  BackendBuffer& operator=(BackendBuffer&& other) noexcept;
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;

  void* data() { return ptr_; }
  const void* data() const { return ptr_; }
  template <class T>
  T* as() {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return bytes_; }
  Backend backend() const { return backend_; }
  // Makes the buffer `bytes` long on `backend`, keeping its memory when that is large enough: a
  // buffer reused for weight after weight touches fresh pages only when it grows. The contents
  // are undefined afterwards.
  void resize(Backend backend, size_t bytes);

  void upload(const void* src, size_t bytes);
  void download(void* dst, size_t bytes) const;
  template <class T>
  std::vector<T> download_all() const {
    std::vector<T> v(bytes_ / sizeof(T));
    download(v.data(), v.size() * sizeof(T));
    return v;
  }
  void fill(uint8_t byte);

 private:
  void release();
  Backend backend_ = Backend::cpu;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  size_t capacity_ = 0;
};

// Host data made readable by a backend: the host pointer itself for cpu (no copy, e.g. straight
// from a memory-mapped checkpoint), a device copy for cuda.
struct Staged {
  BackendBuffer owner;
  const void* ptr = nullptr;
};
Staged stage(Backend backend, const void* host, size_t bytes);

// Waits for every op queued on the backend (a no-op for cpu); for honest timings.
void synchronize(Backend backend);

// auto -> cuda when the library has a usable CUDA device and this command can reach device
// memory, else cpu. An explicit cuda request without that is an error (CliError).
Backend resolve_backend(Backend requested);

}  // namespace mxq::cli
