// Small helpers shared by the CUDA kernels and launchers: stream cast, launch-error check,
// alignment tests and the input element types.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include <mxq/mxq.hpp>
#include <mxq/numerics.hpp>

namespace mxq::cuda {

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

inline Status cuda_status(const char* op, cudaError_t e) {
  if (e == cudaSuccess) return {};
  return Status::error(Code::cuda_error, std::string(op) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// Status of the launches just made on this thread (clears the non-sticky error).
inline Status launch_status(const char* op) { return cuda_status(op, cudaGetLastError()); }

inline bool aligned_to(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) % bytes) == 0; }

// Input element types: the raw storage and the exact widening to fp32 of the numerics core
// (to_float), and the widening for the code paths (to_float_for_codes), which may differ from it
// only for NaN and Inf: a block holding either is poisoned, and all its codes are selected to the
// format's NaN code (kernels::quantize::codes_or_nan, docs/spec.md section 2), whatever its elements widened to.
// Plain: the loaded type of the same elements; computed: the quantize kernels produce the elements
// with In's own functions instead of loading them (SwiGLU's, ../swiglu/source.cuh); paired_halves:
// a computed input whose columns k and k + K / 2 come from one computation, which one CTA makes
// into two tiles (SwiGLU's backward of concatenated h: d_gate and d_up of the same pairs).
struct Bf16In {
  using Raw = uint16_t;
  using Plain = Bf16In;
  static constexpr bool computed = false;
  static constexpr bool paired_halves = false;
  static __device__ __forceinline__ float to_float(Raw h) { return num::bf16_to_float(h); }
  static __device__ __forceinline__ float to_float_for_codes(Raw h) { return to_float(h); }
};
struct Fp16In {
  using Raw = uint16_t;
  using Plain = Fp16In;
  static constexpr bool computed = false;
  static constexpr bool paired_halves = false;
  // The hardware widening, exact for every finite value and infinity; a NaN keeps its payload as
  // in num::fp16_to_float, which the hardware's need not. num::fp16_to_float on every element
  // (branches, an int -> float conversion for the subnormals) made the fp16 kernels far slower.
  static __device__ __forceinline__ float to_float(Raw h) {
    const float widened = __half2float(__ushort_as_half(h));
    return (h & 0x7C00u) == 0x7C00u ? num::fp16_special_to_float(h) : widened;
  }
  // Without the fix-up, which every element of the code paths paid: codes need no NaN payload, as a
  // block with a NaN is poisoned whole.
  static __device__ __forceinline__ float to_float_for_codes(Raw h) { return __half2float(__ushort_as_half(h)); }
};
struct Fp32In {
  using Raw = float;
  using Plain = Fp32In;
  static constexpr bool computed = false;
  static constexpr bool paired_halves = false;
  static __device__ __forceinline__ float to_float(Raw f) { return f; }
  static __device__ __forceinline__ float to_float_for_codes(Raw f) { return f; }
};

// Calls fn(InputType{}) for a runtime input dtype (bf16, fp16 or fp32).
template <class Fn>
decltype(auto) dispatch_input(DType t, Fn&& fn) {
  switch (t) {
    case DType::fp16: return fn(Fp16In{});
    case DType::fp32: return fn(Fp32In{});
    default: return fn(Bf16In{});
  }
}

}  // namespace mxq::cuda
