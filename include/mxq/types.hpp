// Enumerations shared by the public API, the C ABI and the numerics core.
// Plain C++17, no CUDA or framework headers: every layer can include it.
#pragma once
#include <cstdint>

namespace mxq {

// Element dtype of a tensor (inputs of quantize, outputs of dequantize, pad/unpad payloads).
// The numeric values are part of the C ABI (mxq.h) and must not change.
enum class DType : int32_t { bf16 = 0, fp16 = 1, fp32 = 2, u8 = 3 };

// Microscaling formats of docs/spec.md section 1.
enum class Format : int32_t { mxfp8 = 0, mxfp8_e5m2 = 1, mxfp4 = 2, nvfp4 = 3 };

// E8M0 scale rule (docs/spec.md section 2). Ignored by nvfp4.
enum class ScaleRule : int32_t { rceil = 0, floor = 1 };

// Scale layout (docs/spec.md section 5).
enum class ScaleLayout : int32_t { linear = 0, blocked = 1 };

// Quantization direction (docs/spec.md section 4). Bit flags: both = rowwise | colwise.
enum class Direction : int32_t { rowwise = 1, colwise = 2, both = 3 };

// Who runs an op. auto_ picks cuda when the input pointer is device memory, cpu otherwise; cpu and
// cuda check that every pointer is memory of that kind (a driver query per pointer).
// cuda_unchecked runs on the cuda backend without those queries, for callers that already know
// every pointer is device memory of the current device (a framework passing its own tensors).
enum class Backend : int32_t { auto_ = 0, cpu = 1, cuda = 2, cuda_unchecked = 3 };

constexpr bool has_rowwise(Direction d) { return (static_cast<int32_t>(d) & 1) != 0; }
constexpr bool has_colwise(Direction d) { return (static_cast<int32_t>(d) & 2) != 0; }

constexpr int64_t dtype_size(DType t) { return t == DType::fp32 ? 4 : t == DType::u8 ? 1 : 2; }

}  // namespace mxq
