// A minimal parallel-for for the CPU backend: splits [begin, end) into contiguous chunks, one per
// hardware thread, and runs small ranges on the calling thread. Callers make every index write
// disjoint outputs, so results never depend on the number of threads. A thread that cannot be
// started (a resource limit) leaves its chunk to the calling thread: slower, never a failure.
#pragma once
#include <algorithm>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

namespace mxq::cpu {

// Below this many units of work (e.g. elements touched) threads cost more than they save.
constexpr int64_t kParallelMinWork = int64_t{1} << 16;

// Calls fn(lo, hi) on disjoint chunks covering [begin, end). work_per_index estimates the cost of
// one index in elements, to decide whether threads are worth starting.
template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t work_per_index, Fn&& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t by_work = std::max<int64_t>(1, n * std::max<int64_t>(1, work_per_index) / kParallelMinWork);
  const int64_t chunks = std::min({hw, n, by_work});
  if (chunks <= 1) {
    fn(begin, end);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(chunks - 1));
  const int64_t step = (n + chunks - 1) / chunks;
  std::vector<std::pair<int64_t, int64_t>> left;  // chunks no thread could be started for
  for (int64_t lo = begin + step; lo < end; lo += step) {
    const int64_t hi = std::min(end, lo + step);
    try {
      threads.emplace_back([&fn, lo, hi] { fn(lo, hi); });
    } catch (const std::system_error&) {
      left.emplace_back(lo, hi);
    }
  }
  fn(begin, std::min(end, begin + step));  // the calling thread takes the first chunk
  for (const auto& [lo, hi] : left) fn(lo, hi);
  for (auto& t : threads) t.join();
}

}  // namespace mxq::cpu
