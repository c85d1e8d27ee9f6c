// quantize_computed's definition (quantize_computed.hpp), included by its instantiating units only.
#pragma once
#include "cuda/quantize/launch_plain.cuh"
#include "cuda/quantize_grouped/launch.cuh"
#include "cuda/swiglu/quantize_computed.hpp"

namespace mxq::cuda::kernels::swiglu {

// Whether the backward's d_gate and d_up tiles go in pairs (tuning.hpp) for this launch.
template <class In>
bool tiles_in_pairs(const QuantizeArgs& q, const quantize::SwigluSource& src, const quantize::Problem& p, bool split) {
  PairFacts f;
  f.concatenated_backward = In::backward && !src.interleaved;
  f.both_directions = q.params.direction == Direction::both && !split;
  f.vec = p.vec_in;
  f.halves_in_tiles = src.F % quantize::kTileCols == 0;
  return pair_halves(f);
}

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
    if constexpr (In::backward) {
      if (tiles_in_pairs<In>(q, src, l.first.tile, l.split))
        return quantize_grouped::launch_input<typename In::Paired>(l);
    }
    return quantize_grouped::launch_input<In>(l);
  }
  quantize::PlainLaunch l;
  const Status prepared = quantize::prepare_plain(q, &l);
  if (!prepared.ok() || l.tiles == 0) return prepared;
  attach(l.p);
  if constexpr (In::backward) {
    if (tiles_in_pairs<In>(q, src, l.p, false)) return quantize::launch_plain<typename In::Paired>(l);
  }
  return quantize::launch_plain<In>(l);
}

}  // namespace mxq::cuda::kernels::swiglu
