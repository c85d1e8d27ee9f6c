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
Status pad(const PadArgs&, int64_t) { return not_yet("pad"); }
Status unpad(const UnpadArgs&) { return not_yet("unpad"); }
Status swizzle(const SwizzleArgs&) { return not_yet("swizzle"); }
Status unswizzle(const SwizzleArgs&, uint8_t*) { return not_yet("unswizzle"); }
Status validate_group_ends(const TokenGroups&, int64_t, void*) { return not_yet("validate_group_ends"); }
}  // namespace mxq::cuda
