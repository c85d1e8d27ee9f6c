// The quantize of a computed input (source.cuh): the plain or grouped quantize kernels run with
// In = SwigluInput, reading h (and dA) instead of the tensor they quantize. Each input type's
// kernels are instantiated in a translation unit of their own (quantize_<pass>_<dtype>.cu), so
// that the CUDA build compiles them in parallel.
#pragma once
#include <mxq/quantize.hpp>

#include "cuda/common.cuh"
#include "cuda/swiglu/source.cuh"

namespace mxq::cuda::kernels::swiglu {

// q: validated quantize arguments whose input is the computed tensor's view of h (rows M, cols
// K, h's data and row stride); src: the rest of the source; vec: whether the 16-byte path may run
// (the launcher's own alignment checks of h are added to it).
template <class In>
Status quantize_computed(const QuantizeArgs& q, const QuantizeSizes& sizes, const quantize::SwigluSource& src,
                         bool vec);

extern template Status quantize_computed<SwigluInput<Bf16In, false>>(const QuantizeArgs&, const QuantizeSizes&,
                                                                      const quantize::SwigluSource&, bool);
extern template Status quantize_computed<SwigluInput<Fp16In, false>>(const QuantizeArgs&, const QuantizeSizes&,
                                                                      const quantize::SwigluSource&, bool);
extern template Status quantize_computed<SwigluInput<Bf16In, true>>(const QuantizeArgs&, const QuantizeSizes&,
                                                                     const quantize::SwigluSource&, bool);
extern template Status quantize_computed<SwigluInput<Fp16In, true>>(const QuantizeArgs&, const QuantizeSizes&,
                                                                     const quantize::SwigluSource&, bool);

}  // namespace mxq::cuda::kernels::swiglu
