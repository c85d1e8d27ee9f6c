#include "worker_pool.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace mxq::cli {
namespace {

thread_local bool t_in_task = false;  // set while this thread runs a task: a nested call runs inline

class WorkerPool {
 public:
  // Never destroyed: workers stay parked until the process exits, so no call races a destructor.
  static WorkerPool& instance() {
    static WorkerPool* pool = new WorkerPool;
    return *pool;
  }

  int64_t threads() const { return static_cast<int64_t>(workers_.size()) + 1; }

  void run(int64_t tasks, const std::function<void(int64_t)>& task) {
    std::lock_guard<std::mutex> job_lock(job_mutex_);  // one job at a time
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
  WorkerPool() {
    const unsigned wanted = std::max(1u, std::thread::hardware_concurrency()) - 1;
    for (unsigned i = 0; i < wanted; ++i) {
      try {
        workers_.emplace_back([this] { worker(); });
      } catch (const std::system_error&) {
        break;  // at the thread limit: the caller does the work
      }
    }
  }

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

  std::mutex job_mutex_;
  std::mutex mutex_;  // guards everything below
  std::condition_variable work_, finished_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t tasks_ = 0, next_ = 0, done_ = 0;
  std::exception_ptr error_;
};

}  // namespace

void run_tasks(int64_t tasks, const std::function<void(int64_t)>& task) {
  if (tasks <= 0) return;
  if (tasks == 1 || t_in_task) {
    for (int64_t i = 0; i < tasks; ++i) task(i);
    return;
  }
  WorkerPool::instance().run(tasks, task);
}

int64_t worker_threads() { return WorkerPool::instance().threads(); }

}  // namespace mxq::cli
