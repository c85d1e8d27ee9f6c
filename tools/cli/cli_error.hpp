// Errors of the mxq command: every failure is a CliError carrying the process exit code, thrown up
// to main(), which prints "mxq: error: <message>" and exits with that code.
#pragma once
#include <mxq/status.hpp>

#include <stdexcept>
#include <string>

namespace mxq::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,   // the operation failed (library error, I/O error)
  kExitUsage = 2,     // bad command line (CLI11 uses the same code)
  kExitBadInput = 3,  // an input file is malformed or untrusted data is inconsistent
};

class CliError : public std::runtime_error {
 public:
  CliError(int exit_code, const std::string& message) : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// Throws a CliError naming `what` when a library call failed.
inline void check(const Status& status, const std::string& what) {
  if (!status.ok()) throw CliError(kExitFailure, what + ": " + status.message());
}

}  // namespace mxq::cli
