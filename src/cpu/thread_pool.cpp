#include "cpu/thread_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace mxq::cpu {
namespace {

thread_local bool t_in_task = false;  // set while this thread runs a task: nested calls run inline

class ThreadPool {
 public:
  // Never destroyed: workers stay parked until the process exits, so no op can race a destructor.
  static ThreadPool& instance() {
    static std::mutex create_mutex;
    static ThreadPool* pool = nullptr;
    std::lock_guard<std::mutex> lock(create_mutex);
    if (pool == nullptr || pool->pid_ != ::getpid()) pool = new ThreadPool;  // a forked child has no workers
    return *pool;
  }

  int64_t threads() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(workers_.size()) + 1;
  }

  void run(int64_t tasks, const std::function<void(int64_t)>& task) {
    std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
    if (t_in_task || !job_lock.owns_lock()) {
      run_inline(tasks, task);
      return;
    }
    start_missing_workers();
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &task;
    tasks_ = tasks;
    next_ = 0;
    done_ = 0;
    error_ = nullptr;
    work_.notify_all();
    work_until_claimed(lock);
    finished_.wait(lock, [&] { return done_ == tasks_; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  ThreadPool() : pid_(::getpid()) {}

  static void run_inline(int64_t tasks, const std::function<void(int64_t)>& task) {
    const bool was_in_task = t_in_task;
    t_in_task = true;
    try {
      for (int64_t i = 0; i < tasks; ++i) task(i);
    } catch (...) {
      t_in_task = was_in_task;
      throw;
    }
    t_in_task = was_in_task;
  }

  void start_missing_workers() {
    const size_t wanted = std::max(1u, std::thread::hardware_concurrency()) - 1;
    std::lock_guard<std::mutex> lock(mutex_);
    while (workers_.size() < wanted) {
      try {
        workers_.emplace_back([this] { worker(); });
      } catch (const std::system_error&) {
        return;  // at the thread limit: the caller takes this worker's share
      }
    }
  }

  // Claims and runs tasks of the current job until none is left unclaimed; `lock` holds mutex_.
  void work_until_claimed(std::unique_lock<std::mutex>& lock) {
    while (job_ != nullptr && next_ < tasks_) {
      const int64_t i = next_++;
      const std::function<void(int64_t)>* task = job_;
      lock.unlock();
      std::exception_ptr error;
      t_in_task = true;
      try {
        (*task)(i);
      } catch (...) {
        error = std::current_exception();
      }
      t_in_task = false;
      lock.lock();
      if (error && !error_) error_ = error;
      if (++done_ == tasks_) finished_.notify_all();
    }
  }

  void worker() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return job_ != nullptr && next_ < tasks_; });
      work_until_claimed(lock);
    }
  }

  const pid_t pid_;
  std::mutex job_mutex_;  // held by the one caller whose job the pool runs
  std::mutex mutex_;      // guards everything below
  std::condition_variable work_, finished_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t tasks_ = 0, next_ = 0, done_ = 0;
  std::exception_ptr error_;
};

}  // namespace

void run_on_pool(int64_t tasks, const std::function<void(int64_t)>& task) {
  if (tasks <= 0) return;
  ThreadPool::instance().run(tasks, task);
}

int64_t pool_threads() { return ThreadPool::instance().threads(); }

}  // namespace mxq::cpu
