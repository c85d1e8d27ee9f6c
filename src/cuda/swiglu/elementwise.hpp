// SwiGLU's elementwise kernels (elementwise.cu).
#pragma once
#include <mxq/swiglu.hpp>

namespace mxq::cuda::kernels::swiglu {

// a (M, F) in h's dtype into `out` (contiguous); with `done`, only its rows past those groups.
Status elementwise_forward(const SwigluArgs& a, void* out, TokenGroups done = {});
// dh (M, 2F) in h's layout and dtype into `out` (contiguous); with `done`, as above.
Status elementwise_backward(const SwigluBackwardArgs& a, void* out, TokenGroups done = {});
// The per-token weights' gradient into a.grad_weights (nothing without it).
Status weight_grad(const SwigluBackwardArgs& a);

}  // namespace mxq::cuda::kernels::swiglu
