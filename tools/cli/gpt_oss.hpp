// gpt-oss's native MXFP4 layout for fused MoE experts, as transformers (quant_method "mxfp4") and
// vLLM load it. gpt-oss stores each fused expert weight as (E, in, out) (x @ W[e]); the MXFP4
// checkpoint holds it transposed and blocked along `in`:
//   <name>_blocks  U8 (E, out, in/32, 16)   E2M1 codes, element 2i in the low nibble
//   <name>_scales  U8 (E, out, in/32)       E8M0 exponents (bias 127)
// which is mxq's colwise quantization of the (E, in, out) tensor with linear scales, byte for
// byte. Only the experts are quantized; config.json's quantization_config lists the rest as
// modules_to_not_convert.
#pragma once
#include <mxq/types.hpp>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "safetensors_reader.hpp"
#include "weight_codec.hpp"

namespace mxq::cli::gpt_oss {

// True for config.json of a gpt-oss model.
bool is_gpt_oss(const nlohmann::json& config);
// True when config.json says the checkpoint holds gpt-oss MXFP4 experts.
bool is_mxfp4_checkpoint(const nlohmann::json& config);

// "" when `t` is a fused expert weight this layout quantizes, else why not.
std::string kept_reason(const st::TensorInfo& t);

std::string blocks_name(const std::string& weight);
std::string scales_name(const std::string& weight);
std::vector<int64_t> blocks_shape(const std::vector<int64_t>& shape);  // of the (E, in, out) weight
std::vector<int64_t> scales_shape(const std::vector<int64_t>& shape);

// The quantization_config of a gpt-oss MXFP4 checkpoint.
nlohmann::json quantization_config();

struct Encoded {
  std::vector<uint8_t> blocks, scales;
  std::optional<double> sqnr_db;  // with stats only
};
Encoded encode(Backend backend, ScaleRule rule, const st::TensorInfo& t, const uint8_t* bytes, bool stats);

// If `t` is the _blocks tensor of a stored expert weight (with its _scales partner), that weight:
// its name, logical (E, in, out) shape and tensors. Throws SafetensorsError when the partner
// exists with the wrong dtype or shape.
std::optional<StoredWeight> find_stored_weight(const st::SafetensorsView& view, const st::TensorInfo& t);

// Dequantizes a stored expert weight one expert at a time into `dtype`, (E, in, out) row-major.
void decode(Backend backend, const st::SafetensorsView& view, const StoredWeight& w, DType dtype,
            const ChunkVisitor& visit);

}  // namespace mxq::cli::gpt_oss
