// Which tensors of a checkpoint `mxq quantize` quantizes, by name as quantization recipes select
// them, and which quantized weights share one NVFP4 global scale.
//
// A tensor is quantized when its name matches --targets, does not match --ignore, and it is a 2-D
// bf16/fp16/fp32 matrix whose input dimension is a multiple of the block. Never quantized whatever
// the regexes say: 1-D tensors and biases; 3-D fused expert tensors, for which compressed-tensors
// documents no layout (a loader would read them wrongly), so they are kept with that reason.
//
// Loaders fuse some linear layers into one and apply one NVFP4 global scale to all of them (vLLM:
// q/k/v, gate/up, each expert's w1/w3); every member of such a group must then carry the same
// scale, found from the amax over the whole group. A group is a set of module names under one
// parent module, e.g. {q_proj, k_proj, v_proj} under model.layers.0.self_attn.
#pragma once
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <mxq/types.hpp>

#include "safetensors_reader.hpp"

namespace mxq::cli {

// Linear weights by their usual name.
inline constexpr const char* kDefaultTargets = R"(\.weight$)";
// Kept in bf16 by default, as quantization recipes do: embeddings, the LM head, MoE routers and
// gates (shared_expert_gate too), normalisation layers.
inline constexpr const char* kDefaultIgnore =
    R"((^|\.)(lm_head|embed_tokens|embeddings|wte|wpe|router|gate|shared_expert_gate)\.|norm[^.]*\.weight$)";

// The reason kept_reason gives biases and 1-D tensors: copied as they are, not listed as kept.
inline constexpr const char* kBiasOr1D = "bias or 1-D";

class Selection {
 public:
  // Throws CliError (usage) for an invalid regex; an empty string matches nothing.
  Selection(const std::string& targets, const std::string& ignore);

  // "" when `t` is quantized, else why it is kept (shown in the summary table).
  std::string kept_reason(const st::TensorInfo& t, Format format) const;

 private:
  std::optional<std::regex> targets_, ignore_;
};

// A group of module names that share one global scale under a common parent.
using ScaleGroup = std::vector<std::string>;
std::vector<ScaleGroup> default_scale_groups();
// "q_proj,k_proj,v_proj" -> {"q_proj", "k_proj", "v_proj"}; throws CliError for fewer than two.
ScaleGroup parse_scale_group(const std::string& text);

// The key that the members of one group share ("<parent>|<group index>"), or nothing when the
// weight `name` ("<parent>.<module>.weight") belongs to no group.
std::optional<std::string> scale_group_key(const std::string& name, const std::vector<ScaleGroup>& groups);

}  // namespace mxq::cli
