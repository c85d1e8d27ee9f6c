// Explicit check of token-group end offsets (docs/spec.md section 6) on the host.
#include <string>

#include "backend.hpp"
#include "cpu/element_io_internal.hpp"

namespace mxq::cpu {
namespace {
Status bad_end(int64_t g, int64_t e, const std::string& rule) {
  return Status::error(Code::invalid_offsets, "validate_group_ends: groups.ends[" + std::to_string(g) + "] (" +
                                                  std::to_string(e) + ") " + rule);
}
}  // namespace

Status validate_group_ends(const TokenGroups& groups, int64_t M) {
  int64_t prev = 0;
  for (int64_t g = 0; g < groups.count; ++g) {
    const int64_t e = load_at(groups.ends, g);
    if (e < 0) return bad_end(g, e, "is negative");
    if (e > M) return bad_end(g, e, "is greater than M (" + std::to_string(M) + ")");
    if (e < prev)
      return bad_end(g, e,
                     "is less than groups.ends[" + std::to_string(g - 1) + "] (" + std::to_string(prev) +
                         "): ends must not decrease");
    prev = e;
  }
  return {};
}

}  // namespace mxq::cpu
