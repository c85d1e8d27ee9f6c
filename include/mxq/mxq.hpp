// The whole C++ API.
#pragma once
#include "dequantize.hpp"
#include "groups.hpp"
#include "names.hpp"
#include "quantize.hpp"
#include "scales.hpp"
#include "status.hpp"
#include "swiglu.hpp"
#include "tensor.hpp"
#include "types.hpp"

namespace mxq {
const char* version();
bool cuda_available();  // built with CUDA and a device is present
}  // namespace mxq
