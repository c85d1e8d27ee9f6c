// Worker threads of the CLI, started once and kept for the whole run, so that work split per weight
// (the SQNR of each band of rows) costs a wake-up rather than a thread start.
#pragma once
#include <cstdint>
#include <functional>

namespace mxq::cli {

// Runs task(i) for every i in [0, tasks) on the calling thread and the pool's workers (one fewer
// than the machine's cores), returning when all have finished; the first exception thrown is
// rethrown here. Tasks write disjoint outputs, so results do not depend on which thread ran them.
// A call from inside a task runs its tasks on the calling thread.
void run_tasks(int64_t tasks, const std::function<void(int64_t)>& task);

// Threads that take part in run_tasks: the workers plus the caller.
int64_t worker_threads();

}  // namespace mxq::cli
