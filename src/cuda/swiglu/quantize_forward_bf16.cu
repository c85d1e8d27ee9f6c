// The quantize kernels of SwiGLU's forward pass from bf16 h (quantize_computed.hpp).
#include "cuda/swiglu/quantize_computed.cuh"

namespace mxq::cuda::kernels::swiglu {
template Status quantize_computed<SwigluInput<Bf16In, false>>(const QuantizeArgs&, const QuantizeSizes&,
                                                            const quantize::SwigluSource&, bool);
}  // namespace mxq::cuda::kernels::swiglu
