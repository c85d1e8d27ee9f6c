// One grouped quantize call as the per-input-type launchers take it (launch_<dtype>.cu): each
// instantiates the kernels of one input type, so that the CUDA build compiles them in parallel.
#pragma once
#include <cuda_runtime.h>

#include "cuda/quantize_grouped/kernel.cuh"

namespace mxq::cuda::kernels::quantize_grouped {

struct GroupedLaunch {
  GroupedProblem first, second;  // second: the colwise launch when the directions need their own tiles
  bool split = false;
  Direction direction = Direction::rowwise;
  Format format = Format::mxfp8;
  ScaleRule rule = ScaleRule::floor;
  cudaStream_t stream = nullptr;
};

// Fills l from validated arguments and writes the nvfp4 tensor scales (and out.amax) before the
// launch.
Status prepare_grouped(const QuantizeArgs& args, const QuantizeSizes& sizes, GroupedLaunch* l);

// Launches the kernels of l for input type In (Bf16In, Fp16In or Fp32In here; the computed inputs
// of ../swiglu instantiate it themselves).
template <class In>
Status launch_input(const GroupedLaunch& l);

extern template Status launch_input<Bf16In>(const GroupedLaunch&);
extern template Status launch_input<Fp16In>(const GroupedLaunch&);
extern template Status launch_input<Fp32In>(const GroupedLaunch&);

}  // namespace mxq::cuda::kernels::quantize_grouped
