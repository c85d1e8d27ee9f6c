// A one-line progress bar with throughput and the time left on stderr, redrawn at most a few times a second and only
// when stderr is a terminal (logs and tests see nothing).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace mxq::cli {

class Progress {
 public:
  Progress(int64_t total_bytes, bool enabled);
  ~Progress();
  void advance(int64_t bytes, const std::string& label);  // `bytes` more of the input done
  void finish();

 private:
  void draw(const std::string& label);
  int64_t total_, done_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace mxq::cli
