#include "progress.hpp"

#include "table.hpp"

#include <unistd.h>

#include <cstdio>

namespace mxq::cli {

Progress::Progress(int64_t total_bytes, bool enabled)
    : total_(total_bytes),
      enabled_(enabled && ::isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { finish(); }

void Progress::advance(int64_t bytes, const std::string& label) {
  done_ += bytes;
  const auto now = std::chrono::steady_clock::now();
  if (enabled_ && (now - last_draw_ > std::chrono::milliseconds(200) || done_ >= total_)) {
    last_draw_ = now;
    draw(label);
  }
}

void Progress::draw(const std::string& label) {
  constexpr int kWidth = 30;
  const double fraction = total_ > 0 ? static_cast<double>(done_) / total_ : 1.0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int filled = static_cast<int>(fraction * kWidth);
  const double rate = seconds > 0 ? done_ / seconds : 0.0;  // bytes per second so far
  const double eta = rate > 0 ? (total_ - done_) / rate : 0.0;
  std::fprintf(stderr, "\r[%s%s] %5.1f%%  %8.1f MB/s  ETA %4.0f s  %-40.40s", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), 100 * fraction, rate / 1e6, eta, printable(label).c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_) return;
  std::fprintf(stderr, "\n");
  enabled_ = false;
}

}  // namespace mxq::cli
