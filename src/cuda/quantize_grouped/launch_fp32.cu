// The grouped quantize kernels of fp32 input (launch.cuh).
#include "cuda/quantize_grouped/launch.cuh"

namespace mxq::cuda::kernels::quantize_grouped {
template Status launch_input<Fp32In>(const GroupedLaunch&);
}  // namespace mxq::cuda::kernels::quantize_grouped
