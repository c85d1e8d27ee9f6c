#include "background_jobs.hpp"

namespace mxq::cli {

BackgroundJobs::BackgroundJobs() : thread_([this] { run(); }) {}

BackgroundJobs::~BackgroundJobs() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  queued_.notify_all();
  thread_.join();
}

uint64_t BackgroundJobs::submit(std::function<void()> job) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(job));
    ticket = ++submitted_;
  }
  queued_.notify_one();
  return ticket;
}

void BackgroundJobs::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return done_ >= ticket || error_; });
  if (error_) std::rethrow_exception(error_);
}

void BackgroundJobs::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    if (!error_) {
      lock.unlock();
      std::exception_ptr error;
      try {
        job();
      } catch (...) {
        error = std::current_exception();
      }
      job = nullptr;  // whatever the job holds is released off the lock
      lock.lock();
      if (error && !error_) error_ = error;
    }
    ++done_;
    finished_.notify_all();
  }
}

}  // namespace mxq::cli
