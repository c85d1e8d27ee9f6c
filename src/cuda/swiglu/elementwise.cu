// SwiGLU's elementwise kernels: a (M, F), or dh (M, 2F), in h's dtype into a buffer, from the
// numerics core (the same operations as the CPU reference), for the calls whose quantize cannot
// compute the tensor itself (swiglu.cu); and the per-token weights' gradient.
#include "cuda/swiglu/elementwise.hpp"

#include <cstring>
#include <initializer_list>

#include "cuda/swiglu/source.cuh"
#include "cuda/swiglu/tuning.hpp"

namespace mxq::cuda::kernels::swiglu {

// Element i of a row that need not be aligned to its dtype (numpy passes such arrays).
template <class In>
__device__ __forceinline__ float load(const unsigned char* row, int64_t i) {
  typename In::Raw r;
  memcpy(&r, row + i * sizeof(r), sizeof(r));
  return In::to_float(r);
}

template <class In>
__device__ __forceinline__ void store(unsigned char* out, int64_t i, float x) {
  const typename In::Raw r = to_raw<In>(x);
  memcpy(out + i * sizeof(r), &r, sizeof(r));
}

struct ElementwiseProblem {
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
  // Token groups whose rows the fused quantize computed: only the rows past the last group's
  // (clamped) end are left to write here. None (count 0): every row.
  TokenGroups done;

  __device__ int64_t first_row() const {
    int64_t end = 0;  // ends are clamped to [previous end, M]: the last is the largest, at most M
    for (int64_t g = 0; g < done.count; ++g) end = max(end, int64_t{__ldg(done.ends + g)});
    return min(end, M);
  }

  __device__ int64_t gate_col(int64_t f) const { return interleaved ? 2 * f : f; }
  __device__ int64_t up_col(int64_t f) const { return interleaved ? 2 * f + 1 : F + f; }
  __device__ float weight(int64_t m) const {
    float w;
    memcpy(&w, weights + m, sizeof w);
    return w;
  }
};

// kVec elements of a row at element i: 16-byte loads where the launcher found every row and
// pointer aligned (kAligned), else element by element.
template <class In, bool kAligned>
__device__ __forceinline__ void load_vec(const unsigned char* row, int64_t i, float (&out)[kVec]) {
  using Raw = typename In::Raw;
  if constexpr (kAligned) {
    Raw v[kVec];
#pragma unroll
    for (int k = 0; k < int(kVec * sizeof(Raw) / 16); ++k)
      reinterpret_cast<uint4*>(v)[k] = reinterpret_cast<const uint4*>(row + i * sizeof(Raw))[k];
#pragma unroll
    for (int j = 0; j < kVec; ++j) out[j] = In::to_float(v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) out[j] = load<In>(row, i + j);
  }
}

template <class In, bool kAligned>
__device__ __forceinline__ void store_vec(unsigned char* out, int64_t i, const float (&x)[kVec]) {
  using Raw = typename In::Raw;
  if constexpr (kAligned) {
    Raw v[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = to_raw<In>(x[j]);
#pragma unroll
    for (int k = 0; k < int(kVec * sizeof(Raw) / 16); ++k)
      reinterpret_cast<uint4*>(out + i * sizeof(Raw))[k] = reinterpret_cast<const uint4*>(v)[k];
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) store<In>(out, i + j, x[j]);
  }
}

// The gate and up values of pairs [f, f + kVec) of a row.
template <class In, bool kAligned>
__device__ __forceinline__ void load_pairs(const ElementwiseProblem& p, const unsigned char* row, int64_t f,
                                           float (&gate)[kVec], float (&up)[kVec]) {
  if (p.interleaved) {
    float lo[kVec], hi[kVec];
    load_vec<In, kAligned>(row, 2 * f, lo);
    load_vec<In, kAligned>(row, 2 * f + kVec, hi);
#pragma unroll
    for (int j = 0; j < kVec / 2; ++j) {
      gate[j] = lo[2 * j];
      up[j] = lo[2 * j + 1];
      gate[kVec / 2 + j] = hi[2 * j];
      up[kVec / 2 + j] = hi[2 * j + 1];
    }
  } else {
    load_vec<In, kAligned>(row, f, gate);
    load_vec<In, kAligned>(row, p.F + f, up);
  }
}

// CTAs walk rows along y and a row's work items along x (an item: kVec consecutive pairs where
// kAligned, else one pair), so that no thread divides to find its row.
#define MXQ_SWIGLU_FOR_ITEMS(p, kAligned, m, f)                                                           \
  for (int64_t m = (p).first_row() + blockIdx.y; m < (p).M; m += gridDim.y)                               \
    for (int64_t f = (blockIdx.x * int64_t{kThreads} + threadIdx.x) * ((kAligned) ? kVec : 1); f < (p).F; \
         f += int64_t{gridDim.x} * kThreads * ((kAligned) ? kVec : 1))

template <class In, bool kAligned>
__global__ void __launch_bounds__(kThreads) forward_kernel(const ElementwiseProblem p) {
  const bool weighted = p.weights != nullptr;
  MXQ_SWIGLU_FOR_ITEMS(p, kAligned, m, f) {
    const unsigned char* row = p.h + m * p.h_row_bytes;
    const float w = weighted ? p.weight(m) : 0.0f;
    if constexpr (kAligned) {
      float gate[kVec], up[kVec], a[kVec];
      load_pairs<In, true>(p, row, f, gate, up);
#pragma unroll
      for (int j = 0; j < kVec; ++j) a[j] = num::swiglu(gate[j], up[j], weighted, w, p.rule);
      store_vec<In, true>(p.out, m * p.F + f, a);
    } else {
      store<In>(p.out, m * p.F + f,
                num::swiglu(load<In>(row, p.gate_col(f)), load<In>(row, p.up_col(f)), weighted, w, p.rule));
    }
  }
}

template <class In, class Grad, bool kAligned>
__global__ void __launch_bounds__(kThreads) backward_kernel(const ElementwiseProblem p) {
  const bool weighted = p.weights != nullptr;
  MXQ_SWIGLU_FOR_ITEMS(p, kAligned, m, f) {
    const unsigned char* row = p.h + m * p.h_row_bytes;
    const unsigned char* grad = p.grad + m * p.grad_row_bytes;
    const float w = weighted ? p.weight(m) : 0.0f;
    unsigned char* out = p.out + m * 2 * p.F * sizeof(typename In::Raw);
    if constexpr (kAligned) {
      float gate[kVec], up[kVec], dA[kVec], dg[kVec], du[kVec];
      load_pairs<In, true>(p, row, f, gate, up);
      load_vec<Grad, true>(grad, f, dA);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const num::SwigluGrad g = num::swiglu_grad(gate[j], up[j], dA[j], weighted, w, p.rule);
        dg[j] = g.d_gate;
        du[j] = g.d_up;
      }
      if (p.interleaved) {
        float lo[kVec], hi[kVec];
#pragma unroll
        for (int j = 0; j < kVec / 2; ++j) {
          lo[2 * j] = dg[j];
          lo[2 * j + 1] = du[j];
          hi[2 * j] = dg[kVec / 2 + j];
          hi[2 * j + 1] = du[kVec / 2 + j];
        }
        store_vec<In, true>(out, 2 * f, lo);
        store_vec<In, true>(out, 2 * f + kVec, hi);
      } else {
        store_vec<In, true>(out, f, dg);
        store_vec<In, true>(out, p.F + f, du);
      }
    } else {
      const num::SwigluGrad g = num::swiglu_grad(load<In>(row, p.gate_col(f)), load<In>(row, p.up_col(f)),
                                                 load<Grad>(grad, f), weighted, w, p.rule);
      store<In>(out, p.gate_col(f), g.d_gate);
      store<In>(out, p.up_col(f), g.d_up);
    }
  }
}

template <class In, class Grad>
__device__ float weight_grad_row(const ElementwiseProblem& p, int64_t m) {
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
__global__ void __launch_bounds__(kThreads) weight_grad_kernel(const ElementwiseProblem p) {
  for (int64_t m = blockIdx.x * int64_t{kThreads} + threadIdx.x; m < p.M; m += int64_t{gridDim.x} * kThreads) {
    const float sum = weight_grad_row<In, Grad>(p, m);
    memcpy(p.grad_weights + m, &sum, sizeof sum);
  }
}

// Whether the 16-byte paths may run: F a multiple of kVec, every pointer and row 16-byte aligned.
bool vector_aligned(const ElementwiseProblem& p, std::initializer_list<const void*> ptrs,
                    std::initializer_list<int64_t> rows) {
  if (p.F % kVec != 0) return false;
  for (const void* q : ptrs)
    if (reinterpret_cast<uintptr_t>(q) % 16 != 0) return false;
  for (int64_t r : rows)
    if (r % 16 != 0) return false;
  return true;
}

int ctas_for(int64_t n) {
  const int64_t c = (n + kThreads - 1) / kThreads;
  return static_cast<int>(c < 1 ? 1 : (c > kMaxCtas ? kMaxCtas : c));
}

// The grid of the elementwise kernels: a row's items along x, rows along y (fewer for the rows
// past the token groups, which are often none: their count is only known on the device).
dim3 grid_for(const ElementwiseProblem& p, bool aligned) {
  const int64_t most = p.done.count ? kTailRowCtas : kMaxCtas;
  return dim3(ctas_for(aligned ? p.F / kVec : p.F), static_cast<unsigned>(p.M < most ? p.M : most));
}

ElementwiseProblem make_problem(const TensorView& h, const SwigluParams& sp, const float* weights, void* out) {
  ElementwiseProblem p{};
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

Status elementwise_forward(const SwigluArgs& a, void* out, TokenGroups done) {
  ElementwiseProblem p = make_problem(a.input, a.swiglu, a.weights, out);
  p.done = done;
  if (p.M * p.F == 0) return {};
  const bool aligned = vector_aligned(p, {p.h, p.out}, {p.h_row_bytes});
  dispatch_input(a.input.dtype, [&](auto in) {
    using In = decltype(in);
    if (aligned) {
      forward_kernel<In, true><<<grid_for(p, true), kThreads, 0, as_stream(a.stream)>>>(p);
    } else {
      forward_kernel<In, false><<<grid_for(p, false), kThreads, 0, as_stream(a.stream)>>>(p);
    }
  });
  return launch_status("swiglu_quantize");
}

// The problem of the backward kernels: dA besides h, dh at `out`, and the weights' gradient.
ElementwiseProblem backward_problem(const SwigluBackwardArgs& a, void* out) {
  ElementwiseProblem p = make_problem(a.input, a.swiglu, a.weights, out);
  p.grad = static_cast<const unsigned char*>(a.grad.data);
  p.grad_row_bytes = a.grad.rstride() * dtype_size(a.grad.dtype);
  p.grad_weights = a.grad_weights;
  return p;
}

Status elementwise_backward(const SwigluBackwardArgs& a, void* out, TokenGroups done) {
  ElementwiseProblem p = backward_problem(a, out);
  p.done = done;
  if (p.M * p.F == 0) return {};
  const bool aligned = vector_aligned(p, {p.h, p.grad, p.out}, {p.h_row_bytes, p.grad_row_bytes});
  dispatch_input(a.input.dtype, [&](auto in) {
    dispatch_input(a.grad.dtype, [&](auto grad) {
      using In = decltype(in);
      using Grad = decltype(grad);
      if (aligned) {
        backward_kernel<In, Grad, true><<<grid_for(p, true), kThreads, 0, as_stream(a.stream)>>>(p);
      } else {
        backward_kernel<In, Grad, false><<<grid_for(p, false), kThreads, 0, as_stream(a.stream)>>>(p);
      }
    });
  });
  return launch_status("swiglu_backward_quantize");
}

Status weight_grad(const SwigluBackwardArgs& a) {
  const ElementwiseProblem p = backward_problem(a, nullptr);
  if (p.grad_weights == nullptr || p.M == 0) return {};
  dispatch_input(a.input.dtype, [&](auto in) {
    dispatch_input(a.grad.dtype, [&](auto grad) {
      weight_grad_kernel<decltype(in), decltype(grad)><<<ctas_for(p.M), kThreads, 0, as_stream(a.stream)>>>(p);
    });
  });
  return launch_status("swiglu_backward_quantize");
}

}  // namespace mxq::cuda::kernels::swiglu
