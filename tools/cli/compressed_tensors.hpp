// How mxq lays a quantized weight out in a checkpoint, following the compressed-tensors
// conventions that vLLM and Hugging Face transformers load without a custom loader:
//   mxfp8       <name>               F8_E4M3 (N, K)    <name>_scale U8 (N, K/32)   E8M0 exponents
//   mxfp8_e5m2  <name>               F8_E5M2 (N, K)    <name>_scale U8 (N, K/32)
//   mxfp4       <name>_packed        U8 (N, K/2)       <name>_scale U8 (N, K/32)
//   nvfp4       <name>_packed        U8 (N, K/2)       <name>_scale F8_E4M3 (N, K/16)
//               <name>_global_scale  F32 (1) or (E):   the encode scale 448*6/amax
// For a weight called "x.weight" this gives the usual x.weight_packed / x.weight_scale names.
// 3-D expert weights (E, N, K) keep E in front. With --scale-layout blocked the scale tensor is
// each expert's padded blocked matrix (E, Rp, Cp) instead (docs/layouts.md); loaders expect linear.
// FP4 nibbles: element 2i in the low nibble, as compressed-tensors packs them.
#pragma once
#include <mxq/types.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mxq::cli {

struct QuantSettings {
  Format format = Format::mxfp8;
  ScaleRule rule = ScaleRule::rceil;
  ScaleLayout layout = ScaleLayout::linear;
};

struct QuantizedNames {
  std::string data, scale, global_scale;  // global_scale empty unless nvfp4
};
QuantizedNames quantized_names(const std::string& name, Format format);

const char* data_dtype(Format format);   // safetensors dtype of the codes
const char* scale_dtype(Format format);  // safetensors dtype of the block scales

// Shapes of the stored data and scales of a weight of logical shape `shape` (2-D or 3-D).
std::vector<int64_t> data_shape(const std::vector<int64_t>& shape, Format format);
std::vector<int64_t> scale_shape(const std::vector<int64_t>& shape, const QuantSettings& s);

// The "quantization_config" object of config.json: compressed-tensors, weight-only.
// `ignored` names the modules left unquantized (e.g. "lm_head").
nlohmann::json quantization_config(const QuantSettings& s, const std::vector<std::string>& ignored);

// __metadata__ entries recording mxq's version and settings, and their reading back.
std::map<std::string, std::string> settings_metadata(const QuantSettings& s);
std::optional<QuantSettings> settings_from_metadata(const std::map<std::string, std::string>& m);

// The settings of a compressed-tensors checkpoint written by any tool, from config.json: one
// config group of an MX or NVFP4 float format with linear scales (the scale rule only matters when
// encoding, so rceil stands in). Nothing for other quantization configs.
std::optional<QuantSettings> settings_from_config(const nlohmann::json& config);

}  // namespace mxq::cli
