// The quantize kernels of SwiGLU's backward pass from fp16 h (quantize_computed.hpp).
#include "cuda/swiglu/quantize_computed.cuh"

namespace mxq::cuda::kernels::swiglu {
template Status quantize_computed<SwigluInput<Fp16In, true>>(const QuantizeArgs&, const QuantizeSizes&,
                                                            const quantize::SwigluSource&, bool);
}  // namespace mxq::cuda::kernels::swiglu
