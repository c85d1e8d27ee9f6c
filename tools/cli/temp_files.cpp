#include "temp_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>

namespace mxq::st {
namespace {

// A fixed table, so that a signal handler can walk it without locks or allocation.
constexpr int kSlots = 64;
constexpr size_t kPathBytes = 4096;
std::atomic<bool> g_claimed[kSlots];  // a writer owns the slot
std::atomic<bool> g_used[kSlots];     // its path is complete: the handler may remove it
char g_paths[kSlots][kPathBytes];

int g_bus_exit_code = 1;

void remove_all() {
  for (int i = 0; i < kSlots; ++i)
    if (g_used[i].load()) ::unlink(g_paths[i]);
}

void on_signal(int sig) {
  remove_all();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// A mapped input shrank under us: reading it faults. Async-signal-safe: write and _exit only.
void on_bus_error(int) {
  remove_all();
  static const char message[] = "mxq: error: an input file was truncated or changed while being read\n";
  const ssize_t ignored = ::write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
  ::_exit(g_bus_exit_code);
}

mode_t umask_bits() {
  static const mode_t mask = [] {
    const mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  return mask;
}

}  // namespace

unsigned permission_bits(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 0666) : 0666;
}

int create_temp_file(const std::string& dir, const std::string& for_path, std::string* path, unsigned mode) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t seed = std::random_device{}() ^ (uint64_t(::getpid()) << 32);
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[17];
    std::snprintf(suffix, sizeof suffix, "%016llx",
                  static_cast<unsigned long long>((seed + counter.fetch_add(1)) * 0x9E3779B97F4A7C15ull));
    const std::string name = dir + "/.mxq-tmp-" + suffix;
    if (name.size() >= kPathBytes) throw WriteError(for_path + ": path too long");
    // The name is registered before the file exists, so that a signal at any moment finds it.
    int slot = -1;
    for (int i = 0; i < kSlots && slot < 0; ++i)
      if (!g_claimed[i].exchange(true)) slot = i;
    if (slot >= 0) {
      std::memcpy(g_paths[slot], name.c_str(), name.size() + 1);
      g_used[slot].store(true);
    }
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const int error = errno;
    if (fd < 0 && slot >= 0) {
      g_used[slot].store(false);
      g_claimed[slot].store(false);
    }
    if (fd < 0 && error == EEXIST) continue;
    if (fd < 0) throw WriteError(for_path + ": cannot create a temporary file: " + std::strerror(error));
    ::fchmod(fd, (mode & 0666) & ~umask_bits());
    *path = name;
    return fd;
  }
  throw WriteError(for_path + ": cannot create a temporary file: no free name");
}

void forget_temp_file(const std::string& path) {
  for (int i = 0; i < kSlots; ++i) {
    if (g_used[i].load() && path == g_paths[i]) {
      g_used[i].store(false);
      g_claimed[i].store(false);
    }
  }
}

void remove_temp_files_on_signals(int bus_exit_code) {
  umask_bits();  // read the umask once, before any thread exists
  g_bus_exit_code = bus_exit_code;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, on_signal);
  std::signal(SIGBUS, on_bus_error);
}

}  // namespace mxq::st
