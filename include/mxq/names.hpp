// The spelling of every enumeration, shared by error messages, the command line, benchmarks and
// JSON output, so that one name means one value everywhere.
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "types.hpp"

namespace mxq {

const char* to_string(DType v);
const char* to_string(Format v);
const char* to_string(ScaleRule v);
const char* to_string(ScaleLayout v);
const char* to_string(Direction v);
const char* to_string(Backend v);  // "auto", "cpu", "cuda"

// Parses the spelling to_string gives; false (and *out untouched) for anything else.
bool parse(std::string_view s, DType* out);
bool parse(std::string_view s, Format* out);
bool parse(std::string_view s, ScaleRule* out);
bool parse(std::string_view s, ScaleLayout* out);
bool parse(std::string_view s, Direction* out);
bool parse(std::string_view s, Backend* out);

// Every value of an enumeration, in declaration order (for option lists and sweeps). Backend leaves
// out cuda_unchecked: it is a promise about pointers that only a program can make.
template <class E>
struct AllValues;
template <>
struct AllValues<DType> {
  static constexpr DType v[] = {DType::bf16, DType::fp16, DType::fp32, DType::u8};
};
template <>
struct AllValues<Format> {
  static constexpr Format v[] = {Format::mxfp8, Format::mxfp8_e5m2, Format::mxfp4, Format::nvfp4};
};
template <>
struct AllValues<ScaleRule> {
  static constexpr ScaleRule v[] = {ScaleRule::rceil, ScaleRule::floor};
};
template <>
struct AllValues<ScaleLayout> {
  static constexpr ScaleLayout v[] = {ScaleLayout::linear, ScaleLayout::blocked};
};
template <>
struct AllValues<Direction> {
  static constexpr Direction v[] = {Direction::rowwise, Direction::colwise, Direction::both};
};
template <>
struct AllValues<Backend> {
  static constexpr Backend v[] = {Backend::auto_, Backend::cpu, Backend::cuda};
};

// Spelling -> value for every value of E (e.g. for command-line option checks).
template <class E>
const std::map<std::string, E>& names_of() {
  static const std::map<std::string, E> names = [] {
    std::map<std::string, E> m;
    for (E v : AllValues<E>::v) m.emplace(to_string(v), v);
    return m;
  }();
  return names;
}

}  // namespace mxq
