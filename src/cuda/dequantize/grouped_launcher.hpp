// Dequantize with token groups on the cuda backend (DequantizeArgs::groups.groups.count > 0).
#pragma once
#include <mxq/dequantize.hpp>

namespace mxq::cuda {

// Validated arguments with token groups (2-D, batch 1); every format. Reads no offsets on the
// host, never synchronises, allocates nothing: capturable in a CUDA graph.
Status dequantize_grouped(const DequantizeArgs& args);

}  // namespace mxq::cuda
