// swiglu_quantize / swiglu_backward_quantize: the SwiGLU activation between an MoE expert's two
// grouped GEMMs, quantized as quantize does, and its backward (docs/spec.md section 8).
//
// Forward: h (M, 2F) holds gate and up halves, concatenated ([gate | up]) or interleaved (gate in
// even, up in odd columns). a (M, F) = swiglu(gate, up) [* weights], computed in fp32, rounded to
// h's dtype, then quantized exactly as quantize() quantizes that (M, F) tensor: every format,
// direction, scale layout, token groups with fused padding, the amax output. `activation`
// optionally keeps a itself.
//
// Backward: from dA (M, F) and h, dh (M, 2F) in h's layout and dtype (rounded), quantized as
// quantize() quantizes that (M, 2F) tensor; with weights, also their gradient sum_f dA * swiglu.
#pragma once
#include <cstdint>

#include "quantize.hpp"

namespace mxq {

enum class SwigluLayout : int32_t { concatenated = 0, interleaved = 1 };
enum class SwigluVariant : int32_t {
  silu = 0,     // a = silu(gate) * up
  clamped = 1,  // gpt-oss: a = (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha * g), g = min(gate, limit)
};

struct SwigluParams {
  SwigluVariant variant = SwigluVariant::silu;
  SwigluLayout layout = SwigluLayout::concatenated;
  float alpha = 1.702f;  // clamped only (gpt-oss's value)
  float limit = 7.0f;    // clamped only, > 0 (gpt-oss's value)
};

struct SwigluArgs {
  TensorView input;  // h: 2-D (M, 2F), bf16 / fp16 / fp32, row stride allowed
  SwigluParams swiglu;
  const float* weights = nullptr;  // optional [M]: a row's activation is multiplied by its weight
  QuantizeParams params;           // how a is quantized, as in QuantizeArgs
  QuantizeGroups groups;
  const float* tensor_amax = nullptr;  // nvfp4: optional amax of a, as QuantizeArgs::tensor_amax
  QuantizeOutputs out;                 // the outputs of quantizing a (M, F)
  // Optional (M, F) contiguous in h's dtype: a itself. Needed only where swiglu_needs_computed
  // says so (the cuda backend then writes a, and quantizes it).
  void* activation = nullptr;
  Backend backend = Backend::auto_;
  void* stream = nullptr;
};

// Validates args (outputs may be null) and gives the sizes of quantizing a (M, F).
Status swiglu_quantize_sizes(const SwigluArgs& args, QuantizeSizes* sizes);
Status swiglu_quantize(const SwigluArgs& args);

struct SwigluBackwardArgs {
  TensorView grad;   // dA: 2-D (M, F), bf16 / fp16 / fp32
  TensorView input;  // h: 2-D (M, 2F), as in the forward
  SwigluParams swiglu;
  const float* weights = nullptr;  // optional [M], as in the forward
  QuantizeParams params;           // how dh (M, 2F) is quantized
  QuantizeGroups groups;
  const float* tensor_amax = nullptr;
  QuantizeOutputs out;  // the outputs of quantizing dh (M, 2F)
  // Optional (M, 2F) contiguous in h's dtype: dh itself; needed where swiglu_needs_computed says so.
  void* grad_input = nullptr;
  float* grad_weights = nullptr;  // [M], required with weights: sum over f of dA * swiglu (fp32)
  Backend backend = Backend::auto_;
  void* stream = nullptr;
};

Status swiglu_backward_quantize_sizes(const SwigluBackwardArgs& args, QuantizeSizes* sizes);
Status swiglu_backward_quantize(const SwigluBackwardArgs& args);

// Whether a call on `backend` (cpu, cuda or cuda_unchecked) needs the computed tensor's buffer (activation or
// grad_input). The cpu backend never does. The cuda backend quantizes the tensor as it computes it,
// with no buffer, for bf16 / fp16 h (and dA of h's dtype) without out.amax and, for nvfp4, with
// tensor_amax given; any other call writes the tensor to the buffer, then quantizes it.
bool swiglu_needs_computed(const SwigluArgs& args, Backend backend);
bool swiglu_needs_computed(const SwigluBackwardArgs& args, Backend backend);

}  // namespace mxq
