// The reference SwiGLU: each row's activation or gradient from the numerics core, rounded to h's
// dtype; src/api then quantizes it with the reference quantize.
#include <mxq/numerics/swiglu.hpp>

#include <vector>

#include "backend.hpp"
#include "cpu/element_io_internal.hpp"
#include "cpu/parallel.hpp"

namespace mxq::cpu {
namespace {

num::SwigluRule rule_of(const SwigluParams& p) { return {p.variant == SwigluVariant::clamped, p.alpha, p.limit}; }

// Column of gate f and of up f in a row of h.
struct PairColumns {
  bool interleaved;
  int64_t F;
  int64_t gate(int64_t f) const { return interleaved ? 2 * f : f; }
  int64_t up(int64_t f) const { return interleaved ? 2 * f + 1 : F + f; }
};

}  // namespace

Status swiglu_forward(const SwigluArgs& a, void* out) {
  const TensorView& h = a.input;
  const int64_t F = h.cols / 2;
  const num::SwigluRule rule = rule_of(a.swiglu);
  const PairColumns col{a.swiglu.layout == SwigluLayout::interleaved, F};
  parallel_for(0, h.rows, 3 * F, [&](int64_t lo, int64_t hi) {
    std::vector<float> row(static_cast<size_t>(2 * F));
    for (int64_t m = lo; m < hi; ++m) {
      load_row(h, 0, m, 0, 2 * F, row.data());
      const bool weighted = a.weights != nullptr;
      const float w = weighted ? load_at(a.weights, m) : 0.0f;
      for (int64_t f = 0; f < F; ++f)
        store_float(out, h.dtype, m * F + f, num::swiglu(row[col.gate(f)], row[col.up(f)], weighted, w, rule));
    }
  });
  return {};
}

Status swiglu_backward(const SwigluBackwardArgs& a, void* out) {
  const TensorView& h = a.input;
  const int64_t F = h.cols / 2;
  const num::SwigluRule rule = rule_of(a.swiglu);
  const PairColumns col{a.swiglu.layout == SwigluLayout::interleaved, F};
  parallel_for(0, h.rows, 5 * F, [&](int64_t lo, int64_t hi) {
    std::vector<float> row(static_cast<size_t>(2 * F)), dA(static_cast<size_t>(F)), products(static_cast<size_t>(F));
    std::vector<float> chunk_sums(static_cast<size_t>(num::ceil_div(F, num::kSumChunk) + 1));
    for (int64_t m = lo; m < hi; ++m) {
      load_row(h, 0, m, 0, 2 * F, row.data());
      load_row(a.grad, 0, m, 0, F, dA.data());
      const bool weighted = a.weights != nullptr;
      const float w = weighted ? load_at(a.weights, m) : 0.0f;
      for (int64_t f = 0; f < F; ++f) {
        const num::SwigluGrad g = num::swiglu_grad(row[col.gate(f)], row[col.up(f)], dA[f], weighted, w, rule);
        store_float(out, h.dtype, m * 2 * F + col.gate(f), g.d_gate);
        store_float(out, h.dtype, m * 2 * F + col.up(f), g.d_up);
        products[f] = num::fmul(dA[f], g.act);
      }
      if (a.grad_weights) store_at(a.grad_weights, m, num::ordered_sum(products.data(), F, chunk_sums.data()));
    }
  });
  return {};
}

}  // namespace mxq::cpu
