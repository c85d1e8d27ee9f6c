// Error reporting: every op returns a Status; on error nothing was written and message() names the
// argument and the rule it broke.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

namespace mxq {

enum class Code : int32_t {
  ok = 0,
  invalid_argument = 1,  // a caller error: the message names the argument and the rule
  unsupported = 2,       // valid request this build or backend cannot serve (e.g. no CUDA)
  cuda_error = 3,        // the CUDA runtime reported an error
  invalid_offsets = 4,   // validate_group_ends found bad token-group offsets
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status error(Code code, std::string message) { return Status(code, std::move(message)); }
  bool ok() const { return code_ == Code::ok; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::ok;
  std::string message_;
};

}  // namespace mxq
