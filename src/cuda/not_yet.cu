// Ops the CUDA backend does not serve yet. Each later kernel family replaces its entry here.
#include <string>

#include "backend.hpp"

namespace mxq::cuda {
namespace {
Status not_yet(const char* op) {
  return Status::error(Code::unsupported, std::string(op) + ": the cuda backend does not implement it yet");
}
}  // namespace

Status tensor_amax(const TensorView&, float*, void*) { return not_yet("tensor_amax"); }
}  // namespace mxq::cuda
