// Built without CUDA: the cuda device never exists.
#include "bench_device.hpp"

namespace mxq::bench {

bool cuda_device_present() { return false; }
std::unique_ptr<BenchDevice> make_cuda_device() { return nullptr; }
void force_grouped_kernels(const std::string&, const std::string&) {}

}  // namespace mxq::bench
