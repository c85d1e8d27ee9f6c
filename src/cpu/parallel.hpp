// A minimal parallel-for for the CPU backend: splits [begin, end) into contiguous chunks that the
// process's thread pool (thread_pool.hpp) runs, and runs small ranges on the calling thread.
// Callers make every index write disjoint outputs, so results never depend on the number of
// threads or on which thread runs a chunk.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>

#include "cpu/thread_pool.hpp"

namespace mxq::cpu {

// Below this many units of work (e.g. elements touched) threads cost more than they save.
constexpr int64_t kParallelMinWork = int64_t{1} << 16;

// Chunks per thread: a few, so that a thread slowed by other processes leaves its share to others.
constexpr int64_t kChunksPerThread = 4;

// Calls fn(lo, hi) on disjoint chunks covering [begin, end). work_per_index estimates the cost of
// one index in elements, to decide how many chunks are worth handing to threads.
template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t work_per_index, Fn&& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t by_work = std::max<int64_t>(1, n * std::max<int64_t>(1, work_per_index) / kParallelMinWork);
  const int64_t chunks = std::min({hw * kChunksPerThread, n, by_work});
  if (hw == 1 || chunks <= 1) {
    fn(begin, end);
    return;
  }
  const int64_t step = (n + chunks - 1) / chunks;
  run_on_pool((n + step - 1) / step, [&](int64_t c) {
    const int64_t lo = begin + c * step;
    fn(lo, std::min(end, lo + step));
  });
}

}  // namespace mxq::cpu
