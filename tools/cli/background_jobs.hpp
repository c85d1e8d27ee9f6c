// Jobs run one after another, in the order submitted, on one thread kept for the object's lifetime:
// `mxq quantize` writes a shard's tensors there while the next weights are quantized.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace mxq::cli {

class BackgroundJobs {
 public:
  BackgroundJobs();
  // Skips the jobs not yet started and waits for the running one (which may use objects that die
  // next when a caller unwinds).
  ~BackgroundJobs();
  BackgroundJobs(const BackgroundJobs&) = delete;
  BackgroundJobs& operator=(const BackgroundJobs&) = delete;

  // Queues a job; returns its ticket (1, 2, ...). Once a job has thrown, later jobs are skipped.
  uint64_t submit(std::function<void()> job);
  // Returns when the job with this ticket (and every one before it) has finished; ticket 0 returns
  // at once. Rethrows the first error a job threw.
  void wait(uint64_t ticket);
  void wait_all() { wait(submitted_); }

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable queued_, finished_;
  std::deque<std::function<void()>> queue_;
  uint64_t submitted_ = 0, done_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace mxq::cli
