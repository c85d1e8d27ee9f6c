// Runs swiglu_quantize / swiglu_backward_quantize on host buffers for the tests: every output is
// allocated at the size the API reports and poisoned, and the op runs twice (two poison patterns)
// to prove that every byte was written.
#pragma once
#include <cstdint>
#include <vector>

#include <mxq/mxq.hpp>

#include "support/quantize_runner.hpp"

namespace mxq::test {

struct SwigluRequest {
  QuantizeRequest quantize;  // how the computed tensor is quantized, and the backend
  SwigluParams swiglu;
  std::vector<float> weights;  // empty: none
  bool keep_computed = true;   // pass the activation / grad_input buffer
};

struct SwigluResult {
  QuantizeResult quantized;
  std::vector<uint8_t> computed;  // a (M, F) or dh (M, 2F) in h's dtype, when kept
  std::vector<float> grad_weights;
};

// The forward on h (M, 2F).
SwigluResult run_swiglu(const HostTensor& h, const SwigluRequest& req);
// The backward from dA (M, F) and h.
SwigluResult run_swiglu_backward(const HostTensor& grad, const HostTensor& h, const SwigluRequest& req);

// The computed tensor as a host tensor (M, cols) of h's dtype.
HostTensor computed_tensor(const SwigluResult& r, DType dtype, int64_t rows, int64_t cols);

}  // namespace mxq::test
