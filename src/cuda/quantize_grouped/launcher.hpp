// Grouped quantize on the cuda backend (token groups, QuantizeArgs::groups.groups.count > 0).
#pragma once
#include <mxq/quantize.hpp>

namespace mxq::cuda {

// Validated arguments with token groups, every format (nvfp4: writes the tensor scales too). Reads no
// offsets on the host, never synchronises, allocates nothing: capturable in a CUDA graph.
Status quantize_grouped(const QuantizeArgs& args, const QuantizeSizes& sizes);

}  // namespace mxq::cuda
