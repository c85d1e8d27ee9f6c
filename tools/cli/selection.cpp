#include "selection.hpp"

#include "cli_error.hpp"
#include "weight_codec.hpp"

namespace mxq::cli {
namespace {

std::optional<std::regex> compile(const std::string& pattern, const char* option) {
  if (pattern.empty()) return std::nullopt;
  try {
    return std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw CliError(kExitUsage, std::string("invalid ") + option + " regex '" + pattern + "': " + e.what());
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Selection::Selection(const std::string& targets, const std::string& ignore)
    : targets_(compile(targets, "--targets")), ignore_(compile(ignore, "--ignore")) {}

std::string Selection::kept_reason(const st::TensorInfo& t, Format format) const {
  if (!float_dtype(t.dtype)) return "not bf16/fp16/fp32";
  if (t.shape.size() < 2 || ends_with(t.name, "bias")) return kBiasOr1D;
  if (!targets_ || !std::regex_search(t.name, *targets_)) return "not a target";
  if (ignore_ && std::regex_search(t.name, *ignore_)) return "ignored";
  if (t.shape.size() == 3) return "fused 3-D experts: no compressed-tensors layout for them";
  return unquantizable_reason(t, format);
}

std::vector<ScaleGroup> default_scale_groups() {
  // Attention q/k/v, the MLP's gate/up (Llama, Qwen, DeepSeek), Mixtral's expert w1/w3, DeepSeek's
  // fused q_a / kv_a projection.
  return {{"q_proj", "k_proj", "v_proj"}, {"gate_proj", "up_proj"}, {"w1", "w3"}, {"q_a_proj", "kv_a_proj_with_mqa"}};
}

ScaleGroup parse_scale_group(const std::string& text) {
  ScaleGroup g;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) g.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  if (g.size() < 2)
    throw CliError(kExitUsage, "--shared-scale '" + text + "': give two or more module names, comma-separated");
  return g;
}

std::optional<std::string> scale_group_key(const std::string& name, const std::vector<ScaleGroup>& groups) {
  const std::string suffix = ".weight";
  if (!ends_with(name, suffix)) return std::nullopt;
  const std::string module = name.substr(0, name.size() - suffix.size());
  const size_t dot = module.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : module.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? module : module.substr(dot + 1);
  for (size_t i = 0; i < groups.size(); ++i)
    for (const std::string& member : groups[i])
      if (leaf == member) return parent + "|" + std::to_string(i);
  return std::nullopt;
}

}  // namespace mxq::cli
