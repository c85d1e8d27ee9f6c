#include "enum_names.hpp"

namespace mxq::cli {

const char* name_of(Format f) {
  switch (f) {
    case Format::mxfp8: return "mxfp8";
    case Format::mxfp8_e5m2: return "mxfp8_e5m2";
    case Format::mxfp4: return "mxfp4";
    case Format::nvfp4: return "nvfp4";
  }
  return "?";
}

const char* name_of(ScaleRule r) { return r == ScaleRule::floor ? "floor" : "rceil"; }

const char* name_of(ScaleLayout l) { return l == ScaleLayout::linear ? "linear" : "blocked"; }

const char* name_of(Direction d) {
  switch (d) {
    case Direction::rowwise: return "rowwise";
    case Direction::colwise: return "colwise";
    case Direction::both: return "both";
  }
  return "?";
}

const char* name_of(Backend b) {
  switch (b) {
    case Backend::auto_: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

const char* name_of(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::u8: return "u8";
  }
  return "?";
}

const std::map<std::string, Format>& format_names() {
  static const std::map<std::string, Format> names = {{"mxfp8", Format::mxfp8},
                                                      {"mxfp8_e5m2", Format::mxfp8_e5m2},
                                                      {"mxfp4", Format::mxfp4},
                                                      {"nvfp4", Format::nvfp4}};
  return names;
}

const std::map<std::string, ScaleRule>& scale_rule_names() {
  static const std::map<std::string, ScaleRule> names = {{"rceil", ScaleRule::rceil},
                                                         {"floor", ScaleRule::floor}};
  return names;
}

const std::map<std::string, ScaleLayout>& scale_layout_names() {
  static const std::map<std::string, ScaleLayout> names = {{"linear", ScaleLayout::linear},
                                                           {"blocked", ScaleLayout::blocked}};
  return names;
}

const std::map<std::string, Backend>& backend_names() {
  static const std::map<std::string, Backend> names = {
      {"auto", Backend::auto_}, {"cpu", Backend::cpu}, {"cuda", Backend::cuda}};
  return names;
}

}  // namespace mxq::cli
