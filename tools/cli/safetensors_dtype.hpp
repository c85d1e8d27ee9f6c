// The dtype strings of the safetensors format and their element sizes.
#pragma once
#include <cstdint>
#include <string>

namespace mxq::st {

// Element size in bytes of a safetensors dtype string, 0 when the dtype is unknown.
int dtype_size(const std::string& dtype);

}  // namespace mxq::st
