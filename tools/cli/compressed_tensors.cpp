#include "compressed_tensors.hpp"

#include <mxq/mxq.hpp>
#include <mxq/numerics/formats.hpp>
#include <mxq/numerics/layout.hpp>

#include "enum_names.hpp"

namespace mxq::cli {
namespace {

bool is_fp4(Format f) { return num::format_elem_bits(f) == 4; }

template <class Enum>
std::optional<Enum> lookup(const std::map<std::string, Enum>& names, const std::string& key) {
  const auto it = names.find(key);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

}  // namespace

QuantizedNames quantized_names(const std::string& name, Format format) {
  QuantizedNames n;
  n.data = is_fp4(format) ? name + "_packed" : name;
  n.scale = name + "_scale";
  if (format == Format::nvfp4) n.global_scale = name + "_global_scale";
  return n;
}

const char* data_dtype(Format format) {
  switch (format) {
    case Format::mxfp8: return "F8_E4M3";
    case Format::mxfp8_e5m2: return "F8_E5M2";
    default: return "U8";
  }
}

const char* scale_dtype(Format format) { return format == Format::nvfp4 ? "F8_E4M3" : "U8"; }

std::vector<int64_t> data_shape(const std::vector<int64_t>& shape, Format format) {
  std::vector<int64_t> s = shape;
  if (is_fp4(format)) s.back() /= 2;
  return s;
}

std::vector<int64_t> scale_shape(const std::vector<int64_t>& shape, const QuantSettings& q) {
  const int64_t rows = shape[shape.size() - 2];
  const int64_t cols = num::ceil_div(shape.back(), num::format_block(q.format));
  std::vector<int64_t> s(shape.begin(), shape.end() - 2);
  if (q.layout == ScaleLayout::blocked) {
    s.push_back(num::blocked_rows(rows));
    s.push_back(num::blocked_cols(cols));
  } else {
    s.push_back(rows);
    s.push_back(cols);
  }
  return s;
}

nlohmann::json quantization_config(const QuantSettings& s, const std::vector<std::string>& ignored) {
  nlohmann::json weights = {
      {"num_bits", num::format_elem_bits(s.format)}, {"type", "float"},     {"symmetric", true},   {"dynamic", false},
      {"group_size", num::format_block(s.format)},   {"actorder", nullptr}, {"observer", "minmax"}};
  const char* format = "mxfp8-quantized";
  if (s.format == Format::nvfp4) {
    weights["strategy"] = "tensor_group";
    format = "nvfp4-pack-quantized";
  } else {
    weights["strategy"] = "group";
    weights["scale_dtype"] = "torch.uint8";  // E8M0 exponents stored as bytes
    weights["zp_dtype"] = "torch.uint8";
    if (s.format == Format::mxfp4) format = "mxfp4-pack-quantized";
  }
  return {{"quant_method", "compressed-tensors"},
          {"format", format},
          {"quantization_status", "compressed"},
          {"config_groups",
           {{"group_0",
             {{"targets", {"Linear"}},
              {"weights", weights},
              {"input_activations", nullptr},
              {"output_activations", nullptr},
              {"format", format}}}}},
          {"ignore", ignored},
          {"kv_cache_scheme", nullptr},
          // Not part of compressed-tensors: what this checkpoint holds beyond its "format" string
          // (e5m2 elements, the E8M0 rule, a blocked scale layout are mxq's choices).
          {"mxq",
           {{"version", mxq::version()},
            {"format", to_string(s.format)},
            {"scale_rule", to_string(s.rule)},
            {"scale_layout", to_string(s.layout)}}}};
}

std::map<std::string, std::string> settings_metadata(const QuantSettings& s) {
  return {{"mxq_version", mxq::version()},
          {"mxq_format", to_string(s.format)},
          {"mxq_scale_rule", to_string(s.rule)},
          {"mxq_scale_layout", to_string(s.layout)}};
}

std::optional<QuantSettings> settings_from_metadata(const std::map<std::string, std::string>& m) {
  const auto f = m.find("mxq_format"), r = m.find("mxq_scale_rule"), l = m.find("mxq_scale_layout");
  if (f == m.end() || r == m.end() || l == m.end()) return std::nullopt;
  const auto format = lookup(format_names(), f->second);
  const auto rule = lookup(scale_rule_names(), r->second);
  const auto layout = lookup(scale_layout_names(), l->second);
  if (!format || !rule || !layout) return std::nullopt;
  return QuantSettings{*format, *rule, *layout};
}

std::optional<QuantSettings> settings_from_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("quantization_config")) return std::nullopt;
  const nlohmann::json& q = config["quantization_config"];
  if (!q.is_object() || q.value("quant_method", "") != "compressed-tensors" || !q.contains("format") ||
      !q["format"].is_string())
    return std::nullopt;
  const std::string format = q["format"];
  if (format == "mxfp8-quantized") return QuantSettings{Format::mxfp8, ScaleRule::rceil, ScaleLayout::linear};
  if (format == "mxfp4-pack-quantized") return QuantSettings{Format::mxfp4, ScaleRule::rceil, ScaleLayout::linear};
  if (format == "nvfp4-pack-quantized") return QuantSettings{Format::nvfp4, ScaleRule::rceil, ScaleLayout::linear};
  return std::nullopt;
}

}  // namespace mxq::cli
