// BenchRunner: picks the backend, runs one case at a time and turns timings into a result row.
#include <algorithm>
#include <stdexcept>

#include "bench_core.hpp"
#include "bench_device.hpp"
#include "bench_plan.hpp"

namespace mxq::bench {
namespace {

constexpr int kCudaRuns = 50, kCudaWarmup = 5;
constexpr int kCpuRuns = 5, kCpuWarmup = 1;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double gbps(int64_t bytes, double us) { return us > 0 ? static_cast<double>(bytes) / (us * 1e3) : 0; }

std::unique_ptr<BenchDevice> open_device(Backend backend, std::string* note) {
  if (backend == Backend::cuda) {
    auto device = make_cuda_device();
    if (!device) throw std::runtime_error("--backend cuda: no CUDA device (or mxq_bench was built without CUDA)");
    return device;
  }
  if (!cuda_device_present())
    *note =
        "no CUDA device (or built without CUDA): timing the CPU reference backend (wall clock, small shapes); these "
        "are not GPU numbers";
  else
    *note = "--backend cpu: timing the CPU reference backend (wall clock, small shapes)";
  return make_cpu_device();
}

}  // namespace

Backend resolve_backend(Backend requested) {
  if (requested != Backend::auto_) return requested;
  return cuda_device_present() ? Backend::cuda : Backend::cpu;
}

std::string forced_kernels(const BenchOptions& options) {
  std::string s;
  if (options.grouped_colwise != "auto") s = "grouped colwise " + options.grouped_colwise;
  if (options.grouped_rowwise != "auto") s += (s.empty() ? "" : ", ") + ("grouped rowwise " + options.grouped_rowwise);
  return s;
}

BenchRunner::BenchRunner(const BenchOptions& options) {
  const Backend backend = resolve_backend(options.backend);
  device_ = open_device(backend, &env_.note);
  const bool cuda = backend == Backend::cuda;
  if (cuda) {
    force_grouped_kernels(options.grouped_colwise, options.grouped_rowwise);
    env_.forced = forced_kernels(options);
  }
  env_.backend = backend;
  env_.runs = options.runs > 0 ? options.runs : cuda ? kCudaRuns : kCpuRuns;
  env_.warmup = options.warmup >= 0 ? options.warmup : cuda ? kCudaWarmup : kCpuWarmup;
  env_.mxq_version = version();
  env_.flush = options.flush;
  device_->describe(&env_);
}

BenchRunner::~BenchRunner() = default;

BenchResult BenchRunner::run_case(const BenchCase& c) {
  BenchResult r;
  r.c = c;
  try {
    Timings t;
    Status st;
    {
      OpPlan plan;  // its buffers are freed before the next case allocates
      st = make_plan(c, *device_, &plan);
      r.bytes_read = plan.bytes_read;
      r.bytes_written = plan.bytes_written;
      if (st.ok())
        st = device_->measure(plan.call, r.bytes_read + r.bytes_written, {env_.runs, env_.warmup, c.graph, env_.flush},
                              &t);
      device_->synchronize();
    }
    if (!st.ok()) {
      r.status = st.code() == Code::unsupported ? RowStatus::unsupported : RowStatus::error;
      r.message = st.message();
      return r;
    }
    const int64_t bytes = r.bytes_read + r.bytes_written;
    r.runs = static_cast<int>(t.op_us.size());
    r.op_us = median(t.op_us);
    r.op_min_us = *std::min_element(t.op_us.begin(), t.op_us.end());
    r.copy_us = median(t.copy_us);
    r.host_us = t.host_us.empty() ? 0 : median(t.host_us);
    r.op_gbps = gbps(bytes, r.op_us);
    // The copy moved reference_copy_bytes(bytes) each way: the same traffic to within 64 KiB.
    r.copy_gbps = gbps(2 * reference_copy_bytes(bytes), r.copy_us);
    r.ratio = r.copy_gbps > 0 ? r.op_gbps / r.copy_gbps : 0;
  } catch (const std::exception& e) {
    r.status = RowStatus::error;
    r.message = e.what();
  }
  return r;
}

}  // namespace mxq::bench
