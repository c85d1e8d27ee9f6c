// Ops the CUDA backend does not serve yet. Each later kernel family replaces its entry here.
#include <mxq/numerics.hpp>

#include "backend.hpp"

namespace mxq::cuda {
namespace {
Status not_yet(const char* op) {
  return Status::error(Code::unsupported, std::string(op) + ": the cuda backend does not implement it yet");
}
// Proves in every build that device code using the numerics core compiles for each target arch.
__global__ void numerics_compile_probe(const float* x, uint8_t* y) {
  y[0] = static_cast<uint8_t>(num::encode<num::E4M3>(x[0] * num::e8m0_reciprocal(num::e8m0_rceil(num::abs_bits(x[0]), num::MXFP8::inv_max))));
}
}  // namespace

Status quantize(const QuantizeArgs&, const QuantizeSizes&) { return not_yet("quantize"); }
Status dequantize(const DequantizeArgs&) { return not_yet("dequantize"); }
Status tensor_amax(const TensorView&, float*, void*) { return not_yet("tensor_amax"); }
Status pad(const PadArgs&, int64_t) { return not_yet("pad"); }
Status unpad(const UnpadArgs&) { return not_yet("unpad"); }
Status swizzle(const SwizzleArgs&) { return not_yet("swizzle"); }
Status unswizzle(const SwizzleArgs&, uint8_t*) { return not_yet("unswizzle"); }
Status validate_group_ends(const TokenGroups&, int64_t, void*) { return not_yet("validate_group_ends"); }
}  // namespace mxq::cuda
