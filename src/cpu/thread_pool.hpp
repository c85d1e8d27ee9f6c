// One pool of worker threads for the whole process, started on first use and kept, so that each
// parallel op costs a wake-up instead of starting and joining threads. Workers that cannot be
// started (a process at its thread limit) are tried again on a later call; until then the calling
// thread does their share.
#pragma once
#include <cstdint>
#include <functional>

namespace mxq::cpu {

// Runs task(i) for every i in [0, tasks) on the pool's workers and the calling thread, and returns
// when all have finished; the first exception a task throws is rethrown here. A call made from a
// task, or while another thread's call holds the pool, runs every task on the calling thread.
void run_on_pool(int64_t tasks, const std::function<void(int64_t)>& task);

// Threads that take part in a call: the workers running now plus the caller.
int64_t pool_threads();

}  // namespace mxq::cpu
