// Names of the library's enumerations as the command line and the tables spell them.
#pragma once
#include <mxq/types.hpp>

#include <map>
#include <string>

namespace mxq::cli {

const char* name_of(Format f);
const char* name_of(ScaleRule r);
const char* name_of(ScaleLayout l);
const char* name_of(Direction d);
const char* name_of(Backend b);
const char* name_of(DType t);

// Name -> value maps for CLI11's CheckedTransformer (rejects anything else with a clear message).
const std::map<std::string, Format>& format_names();
const std::map<std::string, ScaleRule>& scale_rule_names();
const std::map<std::string, ScaleLayout>& scale_layout_names();
const std::map<std::string, Backend>& backend_names();

constexpr Format kAllFormats[] = {Format::mxfp8, Format::mxfp8_e5m2, Format::mxfp4, Format::nvfp4};

}  // namespace mxq::cli
