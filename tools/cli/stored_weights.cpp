#include "stored_weights.hpp"

#include "enum_names.hpp"
#include "gpt_oss.hpp"

namespace mxq::cli {

const char* FoundWeight::format_name() const {
  return settings ? to_string(settings->format) : "mxfp4 (gpt-oss blocks)";
}

std::vector<FoundWeight> find_stored_weights(const st::SafetensorsView& view,
                                             const std::optional<QuantSettings>& settings) {
  std::vector<FoundWeight> found;
  for (const st::TensorInfo& t : view.tensors()) {
    if (auto w = gpt_oss::find_stored_weight(view, t))
      found.push_back({*w, std::nullopt});
    else if (auto c = settings ? find_stored_weight(view, t, *settings) : std::nullopt)
      found.push_back({*c, settings});
  }
  return found;
}

void decode_found(Backend backend, const st::SafetensorsView& view, const FoundWeight& f, DType dtype,
                  const ChunkVisitor& visit) {
  if (f.settings)
    decode_weight(backend, *f.settings, view, f.weight, dtype, visit);
  else
    gpt_oss::decode(backend, view, f.weight, dtype, visit);
}

}  // namespace mxq::cli
