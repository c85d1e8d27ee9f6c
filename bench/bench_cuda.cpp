// The cuda backend's device: device memory on one non-blocking stream, CUDA-event timing of runs
// queued whole behind a host gate (host_gate.hpp), an L2 flush (a memset of twice the L2, or
// a kernel reading it: --flush) before every timed op and copy, optional CUDA graphs.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "../src/cuda/quantize_grouped/forced_kernel.hpp"
#include "bench_device.hpp"
#include "cuda_check.hpp"
#include "device_fill.hpp"
#include "host_gate.hpp"

namespace mxq::bench {
namespace {

// Events are created per measurement and destroyed with it.
class EventPairs {
 public:
  explicit EventPairs(int n) : start_(n), stop_(n) {
    for (int i = 0; i < n; ++i) {
      check(cudaEventCreate(&start_[i]), "cudaEventCreate");
      check(cudaEventCreate(&stop_[i]), "cudaEventCreate");
    }
  }
  ~EventPairs() {
    for (cudaEvent_t e : start_) cudaEventDestroy(e);
    for (cudaEvent_t e : stop_) cudaEventDestroy(e);
  }
  EventPairs(const EventPairs&) = delete;
  EventPairs& operator=(const EventPairs&) = delete;
  cudaEvent_t start(int i) const { return start_[i]; }
  cudaEvent_t stop(int i) const { return stop_[i]; }
  double elapsed_us(int i) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_[i], stop_[i]), "cudaEventElapsedTime");
    return 1000.0 * ms;
  }

 private:
  std::vector<cudaEvent_t> start_, stop_;
};

// A captured stream sequence, replayed with cudaGraphLaunch.
class Graph {
 public:
  Graph() = default;
  ~Graph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Captures `enqueue` on `stream`; returns its failing status, or cuda_error when the capture
  // was invalidated (the op did something a graph cannot hold, e.g. a synchronisation).
  Status capture(cudaStream_t stream, const std::function<Status()>& enqueue) {
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    Status st = enqueue();
    const cudaError_t end = cudaStreamEndCapture(stream, &graph_);
    if (!st.ok()) return st;
    if (end != cudaSuccess) {
      cudaGetLastError();
      return Status::error(Code::cuda_error, std::string("CUDA graph capture failed: ") + cudaGetErrorString(end));
    }
    check(cudaGraphInstantiate(&exec_, graph_, 0), "cudaGraphInstantiate");
    return Status();
  }
  Status launch(cudaStream_t stream) const {
    const cudaError_t e = cudaGraphLaunch(exec_, stream);
    return e == cudaSuccess ? Status() : Status::error(Code::cuda_error, cudaGetErrorString(e));
  }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

class CudaDevice final : public BenchDevice {
 public:
  CudaDevice() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaGetDeviceProperties(&props_, device), "cudaGetDeviceProperties");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    flush_bytes_ = 2 * static_cast<int64_t>(std::max(props_.l2CacheSize, 1 << 20));
    flush_ = alloc(flush_bytes_);
    check(cudaMemset(flush_, 0, static_cast<size_t>(flush_bytes_)), "cudaMemset");  // never all 0xFF: read_flush
  }
  ~CudaDevice() override {
    release(flush_);
    cudaStreamDestroy(stream_);
  }

  Backend backend() const override { return Backend::cuda; }

  void describe(BenchEnvironment* env) const override {
    env->device = props_.name;
    env->device += " (sm_" + std::to_string(props_.major) + std::to_string(props_.minor) + ", " +
                   std::to_string(props_.multiProcessorCount) + " SMs, " + std::to_string(props_.totalGlobalMem >> 30) +
                   " GiB)";
    env->timer = "cuda events";
    env->cache_bytes = props_.l2CacheSize;
    env->flush_bytes = flush_bytes_;
  }

  void* alloc(int64_t bytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, static_cast<size_t>(bytes));
    if (e != cudaSuccess) {
      cudaGetLastError();  // an out-of-memory error is not sticky: clear it for the next case
      throw std::runtime_error("cudaMalloc(" + std::to_string(bytes) + " bytes): " + cudaGetErrorString(e));
    }
    return p;
  }
  void release(void* p) noexcept override { cudaFree(p); }

  void fill_normal(void* p, DType t, int64_t count, uint64_t seed) override {
    check(static_cast<cudaError_t>(launch_fill_random(p, t, count, seed, stream_)), "fill kernel");
  }
  void upload(void* dst, const void* src, int64_t bytes) override {
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
    synchronize();  // the host source may go away after this returns
  }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  void* stream() override { return stream_; }

  Status measure(const std::function<Status()>& op, int64_t traffic_bytes, const MeasureOptions& options,
                 Timings* timings) override {
    const int64_t copy_bytes = reference_copy_bytes(traffic_bytes);
    DeviceBuffer src(*this, copy_bytes), dst(*this, copy_bytes);
    check(cudaMemsetAsync(src.get(), 1, static_cast<size_t>(copy_bytes), stream_), "cudaMemsetAsync");
    const auto copy = [&] {
      const cudaError_t e =
          cudaMemcpyAsync(dst.get(), src.get(), static_cast<size_t>(copy_bytes), cudaMemcpyDeviceToDevice, stream_);
      return e == cudaSuccess ? Status() : Status::error(Code::cuda_error, cudaGetErrorString(e));
    };
    // The reference stays a plain stream copy in graph mode: a memcpy node replayed from a graph
    // measured 10-30 % slower on an H200 (it may run on a copy engine), which would flatter the op.
    Graph op_graph;
    std::function<Status()> run_op = op;
    if (options.graph) {
      Status st = op_graph.capture(stream_, op);
      if (!st.ok()) return st;
      run_op = [&] { return op_graph.launch(stream_); };
    }
    for (int i = 0; i < options.warmup; ++i) {
      Status st = run_op();
      if (st.ok()) st = copy();
      if (!st.ok()) return st;
    }
    synchronize();
    const uint32_t timeouts_before = gate_.timeouts();
    EventPairs op_events(options.runs), copy_events(options.runs);
    for (int i = 0; i < options.runs; ++i) {
      // The whole run is queued behind the closed gate, so host delays stay outside its events.
      check(static_cast<cudaError_t>(gate_.close(stream_)), "host gate");
      OpenOnExit open_gate(gate_);
      flush(options.flush);
      check(cudaEventRecord(op_events.start(i), stream_), "cudaEventRecord");
      // The host's cost of the call: checks, launch configuration and the launches themselves
      // (the closed gate holds the stream, so the call does not wait for the queue).
      const auto host_start = std::chrono::steady_clock::now();
      Status st = run_op();
      timings->host_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start).count());
      check(cudaEventRecord(op_events.stop(i), stream_), "cudaEventRecord");
      if (!st.ok()) return st;
      flush(options.flush);
      check(cudaEventRecord(copy_events.start(i), stream_), "cudaEventRecord");
      st = copy();
      check(cudaEventRecord(copy_events.stop(i), stream_), "cudaEventRecord");
      if (!st.ok()) return st;
    }
    synchronize();
    if (gate_.timeouts() != timeouts_before) {
      return Status::error(Code::cuda_error,
                           "the op waited for the GPU while the bench held the stream: an op must not "
                           "synchronise the host");
    }
    for (int i = 0; i < options.runs; ++i) {
      timings->op_us.push_back(op_events.elapsed_us(i));
      timings->copy_us.push_back(copy_events.elapsed_us(i));
    }
    return Status();
  }

 private:
  void flush(Flush mode) {
    if (mode == Flush::write) {
      check(cudaMemsetAsync(flush_, 0x5A, static_cast<size_t>(flush_bytes_), stream_), "L2 flush");
    } else {
      check(static_cast<cudaError_t>(launch_read_flush(flush_, flush_bytes_, stream_)), "L2 flush");
    }
  }

  cudaDeviceProp props_{};
  cudaStream_t stream_ = nullptr;
  HostGate gate_;
  int64_t flush_bytes_ = 0;
  void* flush_ = nullptr;
};

}  // namespace

bool cuda_device_present() {
  int n = 0;
  const bool present = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();  // "no device" / "no driver" must not linger as the last error
  return present;
}

void force_grouped_kernels(const std::string& colwise, const std::string& rowwise) {
  namespace grouped = mxq::cuda::kernels::quantize_grouped;
  grouped::force_colwise_kernel(colwise == "windows" ? grouped::ColwiseKernel::windows
                                : colwise == "tiles" ? grouped::ColwiseKernel::tiles
                                                     : grouped::ColwiseKernel::automatic);
  grouped::force_rowwise_kernel(rowwise == "tiles" ? grouped::RowwiseKernel::group_tiles
                                                   : grouped::RowwiseKernel::automatic);
}

std::unique_ptr<BenchDevice> make_cuda_device() {
  if (!cuda_device_present()) return nullptr;
  return std::make_unique<CudaDevice>();
}

}  // namespace mxq::bench
