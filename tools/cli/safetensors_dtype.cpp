#include "safetensors_dtype.hpp"

#include <map>

namespace mxq::st {

int dtype_size(const std::string& dtype) {
  static const std::map<std::string, int> sizes = {
      {"BOOL", 1}, {"U8", 1},   {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}, {"U16", 2}, {"I16", 2},
      {"F16", 2},  {"BF16", 2}, {"U32", 4}, {"I32", 4},     {"F32", 4},     {"U64", 8},     {"I64", 8}, {"F64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

}  // namespace mxq::st
