// A command-line option that takes one of a set of names, shared by `mxq` and `mxq_bench`.
// CLI11's CheckedTransformer would also accept each name's integer value ("--backend 1") and print
// the name -> value map in --help and in its errors; name_choice accepts only the names (in any
// case), lists only them, and rejects anything else with "--opt: TEXT is not one of {a,b,c}".
#pragma once
#include <CLI/CLI.hpp>

#include <map>
#include <string>

namespace mxq::options {

template <class E>
CLI::Validator name_choice(const std::map<std::string, E>& names) {
  std::string list;
  for (const auto& entry : names) list += (list.empty() ? "" : ",") + entry.first;
  list = "{" + list + "}";
  return CLI::Validator(
      [names, list](std::string& text) -> std::string {
        const std::string lower = CLI::detail::to_lower(text);
        for (const auto& [name, value] : names) {
          if (CLI::detail::to_lower(name) == lower) {
            // CLI11 then reads the enumeration from its integer value.
            text = std::to_string(static_cast<long long>(value));
            return {};
          }
        }
        return text + " is not one of " + list;
      },
      list);
}

}  // namespace mxq::options
