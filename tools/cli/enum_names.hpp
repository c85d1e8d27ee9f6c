// Name -> value maps of the library's enumerations for the commands' options (name_choice rejects
// any other spelling with a clear message). The spellings live in <mxq/names.hpp>.
#pragma once
#include <mxq/names.hpp>

#include "name_choice.hpp"

namespace mxq::cli {

inline const std::map<std::string, Format>& format_names() { return names_of<Format>(); }
inline const std::map<std::string, ScaleRule>& scale_rule_names() { return names_of<ScaleRule>(); }
inline const std::map<std::string, ScaleLayout>& scale_layout_names() { return names_of<ScaleLayout>(); }
inline const std::map<std::string, Backend>& backend_names() { return names_of<Backend>(); }

inline constexpr const auto& kAllFormats = AllValues<Format>::v;

}  // namespace mxq::cli
