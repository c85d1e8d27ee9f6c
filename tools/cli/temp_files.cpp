#include "temp_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace mxq::st {
namespace {

// A fixed table, so that a signal handler can walk it without locks or allocation.
constexpr int kSlots = 64;
constexpr size_t kPathBytes = 4096;
std::atomic<bool> g_claimed[kSlots];  // a writer owns the slot
std::atomic<bool> g_used[kSlots];     // its path is complete: the handler may remove it
char g_paths[kSlots][kPathBytes];

void on_signal(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_used[i].load()) ::unlink(g_paths[i]);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

mode_t creation_mode() {
  static const mode_t mode = [] {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return 0666 & ~mask;
  }();
  return mode;
}

}  // namespace

int create_temp_file(const std::string& dir, const std::string& for_path, std::string* path) {
  std::string name = dir + "/.mxq-tmp-XXXXXX";
  if (name.size() >= kPathBytes) throw WriteError(for_path + ": path too long");
  int slot = -1;
  for (int i = 0; i < kSlots && slot < 0; ++i)
    if (!g_claimed[i].exchange(true)) slot = i;
  const int fd = ::mkstemp(name.data());  // O_CREAT | O_EXCL, mode 0600
  if (fd < 0) {
    if (slot >= 0) g_claimed[slot].store(false);
    throw WriteError(for_path + ": cannot create a temporary file: " + std::strerror(errno));
  }
  ::fchmod(fd, creation_mode());
  if (slot >= 0) {
    std::memcpy(g_paths[slot], name.c_str(), name.size() + 1);
    g_used[slot].store(true);
  }
  *path = name;
  return fd;
}

void forget_temp_file(const std::string& path) {
  for (int i = 0; i < kSlots; ++i) {
    if (g_used[i].load() && path == g_paths[i]) {
      g_used[i].store(false);
      g_claimed[i].store(false);
    }
  }
}

void remove_temp_files_on_signals() {
  creation_mode();  // read the umask once, before any thread exists
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, on_signal);
}

}  // namespace mxq::st
