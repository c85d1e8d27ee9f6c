// The cpu backend's device: host memory, wall-clock timing, a last-level-cache flush between runs.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_device.hpp"
#include "random_normal.hpp"

namespace mxq::bench {
namespace {

constexpr int64_t kFallbackCacheBytes = 32ll << 20;

int64_t last_level_cache_bytes() {
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long bytes = sysconf(name);
    if (bytes > 0) return bytes;
  }
  return kFallbackCacheBytes;
}

double elapsed_us(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - since).count();
}

class CpuDevice final : public BenchDevice {
 public:
  CpuDevice() : cache_bytes_(last_level_cache_bytes()), flush_(2 * cache_bytes_) {}

  Backend backend() const override { return Backend::cpu; }

  void describe(BenchEnvironment* env) const override {
    env->device = "CPU (" + std::to_string(std::thread::hardware_concurrency()) + " hardware threads)";
    env->timer = "wall clock";
    env->cache_bytes = cache_bytes_;
    env->flush_bytes = static_cast<int64_t>(flush_.size());
  }

  void* alloc(int64_t bytes) override {
    void* p = std::malloc(static_cast<size_t>(bytes));
    if (!p) throw std::runtime_error("malloc(" + std::to_string(bytes) + " bytes) failed");
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }

  void fill_normal(void* p, DType t, int64_t count, uint64_t seed) override {
    for (int64_t i = 0; i < count; ++i) store_random(p, t, seed, static_cast<uint64_t>(i));
  }
  void upload(void* dst, const void* src, int64_t bytes) override { std::memcpy(dst, src, static_cast<size_t>(bytes)); }
  void synchronize() override {}
  void* stream() override { return nullptr; }

  Status measure(const std::function<Status()>& op, int64_t traffic_bytes, const MeasureOptions& options,
                 Timings* timings) override {
    if (options.graph) return Status::error(Code::unsupported, "CUDA graphs need the cuda backend");
    const int64_t copy_bytes = reference_copy_bytes(traffic_bytes);
    DeviceBuffer src(*this, copy_bytes), dst(*this, copy_bytes);
    std::memset(src.get(), 1, static_cast<size_t>(copy_bytes));
    for (int i = 0; i < options.warmup; ++i) {
      Status st = op();
      if (!st.ok()) return st;
    }
    for (int i = 0; i < options.runs; ++i) {
      flush(i, options.flush);
      auto start = std::chrono::steady_clock::now();
      Status st = op();
      timings->op_us.push_back(elapsed_us(start));
      timings->host_us.push_back(timings->op_us.back());  // the cpu backend's call is the op
      if (!st.ok()) return st;
      flush(i, options.flush);
      start = std::chrono::steady_clock::now();
      std::memcpy(dst.get(), src.get(), static_cast<size_t>(copy_bytes));
      timings->copy_us.push_back(elapsed_us(start));
    }
    return Status();
  }

 private:
  // Writing (or reading) twice the last-level cache evicts the op's inputs and outputs of the
  // previous run.
  void flush(int run, Flush mode) {
    if (mode == Flush::write) {
      std::memset(flush_.data(), run & 0xFF, flush_.size());
      return;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < flush_.size(); i += 64) sum += flush_[i];
    sink_ = sink_ + sum;
  }

  int64_t cache_bytes_;
  std::vector<uint8_t> flush_;
  volatile uint64_t sink_ = 0;  // keeps the reading flush
};

}  // namespace

std::unique_ptr<BenchDevice> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace mxq::bench
