// Temporary files of writes in progress: created exclusively under a fresh name beside their
// destination (never through a name someone planted), with the mode new files get (0666 less the
// umask), and removed if SIGINT, SIGTERM or SIGHUP stops the process before the rename that
// finishes the write.
#pragma once
#include <stdexcept>
#include <string>

namespace mxq::st {

// An output that could not be written (disk full, a missing folder): not the input's fault.
class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Creates "<dir>/.mxq-tmp-XXXXXX" and returns its descriptor; *path receives its name. Throws
// WriteError naming `for_path`.
int create_temp_file(const std::string& dir, const std::string& for_path, std::string* path);
// The temporary file was renamed or removed: no signal handler may touch its name any more.
void forget_temp_file(const std::string& path);
// Installs the handlers that remove unfinished temporary files (once, at startup).
void remove_temp_files_on_signals();

}  // namespace mxq::st
