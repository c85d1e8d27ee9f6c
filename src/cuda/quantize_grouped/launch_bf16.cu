// The grouped quantize kernels of bf16 input (launch.cuh).
#include "cuda/quantize_grouped/launch.cuh"

namespace mxq::cuda::kernels::quantize_grouped {
template Status launch_input<Bf16In>(const GroupedLaunch&);
}  // namespace mxq::cuda::kernels::quantize_grouped
