// Internal: memory and timing of one backend, as the op plans and the runner need them. The cpu
// implementation uses host memory and the wall clock, the cuda one device memory and CUDA events.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_core.hpp"

namespace mxq::bench {

struct MeasureOptions {
  int runs = 0;
  int warmup = 0;
  bool graph = false;  // capture one op call in a CUDA graph, time its replays (the copy stays plain)
  Flush flush = Flush::write;
};

struct Timings {
  std::vector<double> op_us;    // one per timed run
  std::vector<double> copy_us;  // the same-run copy, interleaved with the op runs
  std::vector<double> host_us;  // wall time of each timed op call on the host (cuda: until it returns, queued)
};

// Bytes each way of the reference copy for an op that moves traffic_bytes: half of them, rounded
// down to a multiple of 64 KiB from 1 MiB on. cudaMemcpyAsync slows down on sizes that are not a
// multiple of a large power of two (H200: 38166544 bytes took 26.0 us, 38141952 bytes 23.2 us),
// which made the copy of token-group and nvfp4 traffic (a few bytes of offsets or tensor scales
// on top) a slower reference than the copy of plain quantize traffic. Ratios use the bytes copied.
inline int64_t reference_copy_bytes(int64_t traffic_bytes) {
  constexpr int64_t kGranule = int64_t{1} << 16;
  const int64_t half = traffic_bytes / 2;
  return half >= (int64_t{1} << 20) ? half / kGranule * kGranule : half;
}

class BenchDevice {
 public:
  virtual ~BenchDevice() = default;
  virtual Backend backend() const = 0;
  virtual void describe(BenchEnvironment* env) const = 0;  // device, timer, cache, flush
  // Memory of this backend; alloc throws std::runtime_error when it cannot.
  virtual void* alloc(int64_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  // count values of a standard normal distribution in dtype t (u8: uniform random bytes).
  virtual void fill_normal(void* p, DType t, int64_t count, uint64_t seed) = 0;
  virtual void upload(void* dst, const void* host_src, int64_t bytes) = 0;
  virtual void synchronize() = 0;  // throws std::runtime_error on an asynchronous error
  virtual void* stream() = 0;      // what ops get as `stream`
  // Warm-up, then `runs` times: flush the cache, time `op`; flush, time a copy of
  // reference_copy_bytes(traffic_bytes) (read, and the same written). Returns the first failing
  // status of `op` (nothing is timed then).
  virtual Status measure(const std::function<Status()>& op, int64_t traffic_bytes, const MeasureOptions& options,
                         Timings* timings) = 0;
};

// Device memory released when it goes out of scope, so that each case frees its buffers.
class DeviceBuffer {
 public:
  DeviceBuffer(BenchDevice& device, int64_t bytes)
      : device_(&device), ptr_(bytes > 0 ? device.alloc(bytes) : nullptr), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : device_(o.device_), ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  DeviceBuffer(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_) device_->release(ptr_);
  }
  void* get() const { return ptr_; }
  int64_t bytes() const { return bytes_; }

 private:
  BenchDevice* device_;
  void* ptr_;
  int64_t bytes_;
};

std::unique_ptr<BenchDevice> make_cpu_device();
// Null when the bench was built without CUDA or no device is present.
std::unique_ptr<BenchDevice> make_cuda_device();
bool cuda_device_present();
// Forces the grouped colwise kernel ("windows" or "tiles") wherever a case can take either, and the
// rowwise group tiles ("tiles") where the tuning takes input row tiles; "auto" leaves the choice to
// the library (internal hooks of libmxq, not its public API).
void force_grouped_kernels(const std::string& colwise, const std::string& rowwise);

}  // namespace mxq::bench
