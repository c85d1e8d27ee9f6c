// SwiGLU's elementwise part on the device: a (M, F), or dh (M, 2F) and the per-token weights'
// gradient, in h's dtype, from the numerics core (the same operations as the CPU reference); the
// API then quantizes the result with the quantize kernels.
#include <cstring>
#include <type_traits>

#include <mxq/numerics/swiglu.hpp>

#include "backend.hpp"
#include "cuda/common.cuh"

namespace mxq::cuda::kernels::swiglu {

constexpr int kThreads = 256;
constexpr int kMaxCtas = 65535;

// Element i of a row that need not be aligned to its dtype (numpy passes such arrays).
template <class In>
__device__ __forceinline__ float load(const unsigned char* row, int64_t i) {
  typename In::Raw r;
  memcpy(&r, row + i * sizeof(r), sizeof(r));
  return In::to_float(r);
}

template <class In>
__device__ __forceinline__ void store(unsigned char* out, int64_t i, float x) {
  if constexpr (sizeof(typename In::Raw) == 4) {
    memcpy(out + 4 * i, &x, 4);
  } else {
    const uint16_t h = std::is_same_v<In, Bf16In> ? num::float_to_bf16_rne(x) : num::float_to_fp16_rne(x);
    memcpy(out + 2 * i, &h, 2);
  }
}

struct Problem {
  const unsigned char* h;
  int64_t h_row_bytes;  // between rows of h
  const unsigned char* grad;
  int64_t grad_row_bytes;
  const float* weights;
  unsigned char* out;
  float* grad_weights;
  int64_t M, F;
  bool interleaved;
  num::SwigluRule rule;

  __device__ int64_t gate_col(int64_t f) const { return interleaved ? 2 * f : f; }
  __device__ int64_t up_col(int64_t f) const { return interleaved ? 2 * f + 1 : F + f; }
  __device__ float weight(int64_t m) const {
    float w;
    memcpy(&w, weights + m, sizeof w);
    return w;
  }
};

template <class In>
__global__ void __launch_bounds__(kThreads) forward_kernel(const Problem p) {
  const int64_t n = p.M * p.F;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads) {
    const int64_t m = i / p.F, f = i % p.F;
    const unsigned char* row = p.h + m * p.h_row_bytes;
    const bool weighted = p.weights != nullptr;
    const float a = num::swiglu(load<In>(row, p.gate_col(f)), load<In>(row, p.up_col(f)), weighted,
                                weighted ? p.weight(m) : 0.0f, p.rule);
    store<In>(p.out, i, a);
  }
}

template <class In, class Grad>
__global__ void __launch_bounds__(kThreads) backward_kernel(const Problem p) {
  const int64_t n = p.M * p.F;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads) {
    const int64_t m = i / p.F, f = i % p.F;
    const unsigned char* row = p.h + m * p.h_row_bytes;
    const bool weighted = p.weights != nullptr;
    const num::SwigluGrad g =
        num::swiglu_grad(load<In>(row, p.gate_col(f)), load<In>(row, p.up_col(f)),
                         load<Grad>(p.grad + m * p.grad_row_bytes, f), weighted, weighted ? p.weight(m) : 0.0f, p.rule);
    store<In>(p.out, m * 2 * p.F + p.gate_col(f), g.d_gate);
    store<In>(p.out, m * 2 * p.F + p.up_col(f), g.d_up);
  }
}

// One thread per row, in num::ordered_sum's order: chunk sums arrive left to right and merge like a
// binary counter (two partial sums of the same level make one of the next); the partials left at
// the end, folded from the right, are the pairwise levels' unpaired sums moving up.
template <class In, class Grad>
__device__ float weight_grad_row(const Problem& p, int64_t m) {
  const unsigned char* row = p.h + m * p.h_row_bytes;
  const unsigned char* grad = p.grad + m * p.grad_row_bytes;
  float partial[64];
  int level[64];
  int depth = 0;
  for (int64_t c = 0; c < p.F; c += num::kSumChunk) {
    float s = 0.0f;
    for (int64_t f = c; f < c + num::kSumChunk && f < p.F; ++f) {
      const float act = num::swiglu_unweighted(load<In>(row, p.gate_col(f)), load<In>(row, p.up_col(f)), p.rule);
      const float prod = num::fmul(load<Grad>(grad, f), act);
      s = f == c ? prod : num::fadd(s, prod);
    }
    partial[depth] = s;
    level[depth++] = 0;
    while (depth >= 2 && level[depth - 1] == level[depth - 2]) {
      partial[depth - 2] = num::fadd(partial[depth - 2], partial[depth - 1]);
      ++level[depth - 2];
      --depth;
    }
  }
  float sum = 0.0f;
  if (depth > 0) {
    sum = partial[depth - 1];
    for (int d = depth - 2; d >= 0; --d) sum = num::fadd(partial[d], sum);
  }
  return num::canonical_nan(sum);
}

// One thread per row, in num::ordered_sum's order: chunk sums arrive left to right and merge like a
// binary counter (two partial sums of the same level make one of the next); the partials left at
// the end, folded from the right, are the pairwise levels' unpaired sums moving up.
template <class In, class Grad>
__global__ void __launch_bounds__(kThreads) weight_grad_kernel(const Problem p) {
  for (int64_t m = blockIdx.x * int64_t{kThreads} + threadIdx.x; m < p.M; m += int64_t{gridDim.x} * kThreads) {
    const float sum = weight_grad_row<In, Grad>(p, m);
    memcpy(p.grad_weights + m, &sum, sizeof sum);
  }
}

int ctas_for(int64_t n) {
  const int64_t c = (n + kThreads - 1) / kThreads;
  return static_cast<int>(c < 1 ? 1 : (c > kMaxCtas ? kMaxCtas : c));
}

Problem make_problem(const TensorView& h, const SwigluParams& sp, const float* weights, void* out) {
  Problem p{};
  p.h = static_cast<const unsigned char*>(h.data);
  p.h_row_bytes = h.rstride() * dtype_size(h.dtype);
  p.weights = weights;
  p.out = static_cast<unsigned char*>(out);
  p.M = h.rows;
  p.F = h.cols / 2;
  p.interleaved = sp.layout == SwigluLayout::interleaved;
  p.rule = {sp.variant == SwigluVariant::clamped, sp.alpha, sp.limit};
  return p;
}

}  // namespace mxq::cuda::kernels::swiglu

namespace mxq::cuda {

Status swiglu_forward(const SwigluArgs& a, void* out) {
  namespace k = kernels::swiglu;
  const k::Problem p = k::make_problem(a.input, a.swiglu, a.weights, out);
  if (p.M * p.F == 0) return {};
  dispatch_input(a.input.dtype, [&](auto in) {
    k::forward_kernel<decltype(in)><<<k::ctas_for(p.M * p.F), k::kThreads, 0, as_stream(a.stream)>>>(p);
  });
  return launch_status("swiglu_quantize");
}

Status swiglu_backward(const SwigluBackwardArgs& a, void* out) {
  namespace k = kernels::swiglu;
  k::Problem p = k::make_problem(a.input, a.swiglu, a.weights, out);
  p.grad = static_cast<const unsigned char*>(a.grad.data);
  p.grad_row_bytes = a.grad.rstride() * dtype_size(a.grad.dtype);
  p.grad_weights = a.grad_weights;
  const cudaStream_t stream = as_stream(a.stream);
  dispatch_input(a.input.dtype, [&](auto in) {
    dispatch_input(a.grad.dtype, [&](auto grad) {
      using In = decltype(in);
      using Grad = decltype(grad);
      if (p.M * p.F > 0) k::backward_kernel<In, Grad><<<k::ctas_for(p.M * p.F), k::kThreads, 0, stream>>>(p);
      if (p.grad_weights && p.M > 0) k::weight_grad_kernel<In, Grad><<<k::ctas_for(p.M), k::kThreads, 0, stream>>>(p);
    });
  });
  return launch_status("swiglu_backward_quantize");
}

}  // namespace mxq::cuda
