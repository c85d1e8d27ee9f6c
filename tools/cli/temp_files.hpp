// Temporary files of writes in progress: created exclusively under a fresh name beside their
// destination (never through a name someone planted), with the mode of the file they replace in
// the output (its input's read/write bits, less the umask), and removed if SIGINT, SIGTERM or
// SIGHUP stops the process before the rename that finishes the write. SIGBUS (an input file
// truncated while mapped) removes them too and exits with the malformed-input code.
#pragma once
#include <stdexcept>
#include <string>

namespace mxq::st {

// An output that could not be written (disk full, a missing folder): not the input's fault.
class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Creates "<dir>/.mxq-tmp-XXXXXX" with mode `mode` & 0666 less the umask and returns its
// descriptor; *path receives its name. Throws WriteError naming `for_path`.
int create_temp_file(const std::string& dir, const std::string& for_path, std::string* path, unsigned mode = 0666);
// The read/write permission bits of an existing file (0666 when it cannot be read).
unsigned permission_bits(const std::string& path);
// The temporary file was renamed or removed: no signal handler may touch its name any more.
void forget_temp_file(const std::string& path);
// Installs the handlers that remove unfinished temporary files (once, at startup); on SIGBUS the
// process then exits with `bus_exit_code` after a message.
void remove_temp_files_on_signals(int bus_exit_code);

}  // namespace mxq::st
