// The quantized weights of a checkpoint shard in either layout mxq reads: compressed-tensors (with
// the checkpoint's settings) or gpt-oss MXFP4 experts. Shared by `mxq inspect` and `mxq dequantize`.
#pragma once
#include <optional>
#include <vector>

#include "compressed_tensors.hpp"
#include "weight_codec.hpp"

namespace mxq::cli {

struct FoundWeight {
  StoredWeight weight;
  std::optional<QuantSettings> settings;  // empty: gpt-oss MXFP4
  const char* format_name() const;        // "mxfp8", ..., or "mxfp4 (gpt-oss blocks)"
};

// In tensor order; compressed-tensors weights only when `settings` is given.
std::vector<FoundWeight> find_stored_weights(const st::SafetensorsView& view,
                                             const std::optional<QuantSettings>& settings);

// Dequantizes a found weight piece by piece into `dtype`, in its logical row-major layout.
void decode_found(Backend backend, const st::SafetensorsView& view, const FoundWeight& f, DType dtype,
                  const ChunkVisitor& visit);

}  // namespace mxq::cli
