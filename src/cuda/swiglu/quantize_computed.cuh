// quantize_computed's definition (quantize_computed.hpp), included by its instantiating units only.
#pragma once
#include "cuda/quantize/launch_plain.cuh"
#include "cuda/quantize_grouped/launch.cuh"
#include "cuda/swiglu/quantize_computed.hpp"

namespace mxq::cuda::kernels::swiglu {

template <class In>
Status quantize_computed(const QuantizeArgs& q, const QuantizeSizes& sizes, const quantize::SwigluSource& src,
                         bool vec) {
  const auto attach = [&](quantize::Problem& p) {
    p.swiglu = src;
    p.vec_in = p.vec_in && vec;
  };
  if (q.groups.groups.count > 0) {
    quantize_grouped::GroupedLaunch l;
    const Status prepared = quantize_grouped::prepare_grouped(q, sizes, &l);
    if (!prepared.ok()) return prepared;
    attach(l.first.tile);
    attach(l.second.tile);
    return quantize_grouped::launch_input<In>(l);
  }
  quantize::PlainLaunch l;
  const Status prepared = quantize::prepare_plain(q, &l);
  if (!prepared.ok() || l.tiles == 0) return prepared;
  attach(l.p);
  return quantize::launch_plain<In>(l);
}

}  // namespace mxq::cuda::kernels::swiglu
