// A hook for the tests and the benchmark, not part of the public API (include/mxq has no such
// call): it forces the grouped colwise kernel where the problem could take either, so that both
// kernels can be tested and timed on the same shapes. The library itself never calls the setter.
#pragma once

namespace mxq::cuda::kernels::quantize_grouped {

enum class ColwiseKernel { automatic, windows, tiles };

// Process-wide; automatic (the tuning's choice) until set.
void force_colwise_kernel(ColwiseKernel kernel);
ColwiseKernel forced_colwise_kernel();

}  // namespace mxq::cuda::kernels::quantize_grouped
