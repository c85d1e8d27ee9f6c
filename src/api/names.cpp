// Spellings of the enumerations (include/mxq/names.hpp): one table per type.
#include <mxq/names.hpp>

namespace mxq {
namespace {

template <class E>
struct Named {
  E value;
  const char* name;
};

constexpr Named<DType> kDTypes[] = {
    {DType::bf16, "bf16"}, {DType::fp16, "fp16"}, {DType::fp32, "fp32"}, {DType::u8, "u8"}};
constexpr Named<Format> kFormats[] = {
    {Format::mxfp8, "mxfp8"}, {Format::mxfp8_e5m2, "mxfp8_e5m2"}, {Format::mxfp4, "mxfp4"}, {Format::nvfp4, "nvfp4"}};
constexpr Named<ScaleRule> kRules[] = {{ScaleRule::rceil, "rceil"}, {ScaleRule::floor, "floor"}};
constexpr Named<ScaleLayout> kLayouts[] = {{ScaleLayout::linear, "linear"}, {ScaleLayout::blocked, "blocked"}};
constexpr Named<Direction> kDirections[] = {
    {Direction::rowwise, "rowwise"}, {Direction::colwise, "colwise"}, {Direction::both, "both"}};
constexpr Named<Backend> kBackends[] = {{Backend::auto_, "auto"},
                                        {Backend::cpu, "cpu"},
                                        {Backend::cuda, "cuda"},
                                        {Backend::cuda_unchecked, "cuda_unchecked"}};

template <class E, size_t N>
const char* name_in(const Named<E> (&table)[N], E v) {
  for (const Named<E>& n : table)
    if (n.value == v) return n.name;
  return "unknown";  // an out-of-range value cast from an integer
}

template <class E, size_t N>
bool parse_in(const Named<E> (&table)[N], std::string_view s, E* out) {
  for (const Named<E>& n : table) {
    if (s == n.name) {
      *out = n.value;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* to_string(DType v) { return name_in(kDTypes, v); }
const char* to_string(Format v) { return name_in(kFormats, v); }
const char* to_string(ScaleRule v) { return name_in(kRules, v); }
const char* to_string(ScaleLayout v) { return name_in(kLayouts, v); }
const char* to_string(Direction v) { return name_in(kDirections, v); }
const char* to_string(Backend v) { return name_in(kBackends, v); }

bool parse(std::string_view s, DType* out) { return parse_in(kDTypes, s, out); }
bool parse(std::string_view s, Format* out) { return parse_in(kFormats, s, out); }
bool parse(std::string_view s, ScaleRule* out) { return parse_in(kRules, s, out); }
bool parse(std::string_view s, ScaleLayout* out) { return parse_in(kLayouts, s, out); }
bool parse(std::string_view s, Direction* out) { return parse_in(kDirections, s, out); }
bool parse(std::string_view s, Backend* out) { return parse_in(kBackends, s, out); }

}  // namespace mxq
