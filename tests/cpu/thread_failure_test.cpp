// The CPU backend when threads cannot be started (a process at its thread limit): every op still
// succeeds with the same bytes, the calling thread doing the work; once threads can be started the
// pool starts them, and keeps them for later ops. pthread_create is interposed by this program, so
// the library's std::thread sees EAGAIN exactly as under a real limit.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <random>
#include <thread>
#include <vector>

#include <mxq/mxq.hpp>

namespace {
std::atomic<bool> g_refuse_threads{false};
std::atomic<int> g_refused{0};
std::atomic<int> g_started{0};
}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  using Real = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "pthread_create"));
  if (g_refuse_threads) {
    ++g_refused;
    return EAGAIN;
  }
  ++g_started;
  return real(thread, attr, start, arg);
}

namespace {

std::vector<uint8_t> quantize_bytes(const std::vector<float>& x, int64_t M, int64_t K) {
  mxq::QuantizeArgs q;
  q.input = {x.data(), mxq::DType::fp32, 1, M, K};
  q.params.format = mxq::Format::mxfp8;
  q.params.direction = mxq::Direction::both;
  q.backend = mxq::Backend::cpu;
  mxq::QuantizeSizes sz;
  EXPECT_TRUE(mxq::quantize_sizes(q, &sz).ok());
  std::vector<uint8_t> out(
      static_cast<size_t>(sz.row_data_bytes + sz.row_scale_bytes + sz.col_data_bytes + sz.col_scale_bytes), 0xA5);
  uint8_t* p = out.data();
  q.out.row_data = p;
  q.out.row_scales = p + sz.row_data_bytes;
  q.out.col_data = p + sz.row_data_bytes + sz.row_scale_bytes;
  q.out.col_scales = p + sz.row_data_bytes + sz.row_scale_bytes + sz.col_data_bytes;
  const mxq::Status s = mxq::quantize(q);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

TEST(ThreadFailure, OpsSucceedOnTheCallingThreadWithTheSameBytes) {
  const int64_t M = 1024, K = 1024;  // enough work for several threads
  std::vector<float> x(static_cast<size_t>(M * K));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  // Refused first: the pool starts its workers on first use, and keeps them afterwards.
  g_refuse_threads = true;
  const std::vector<uint8_t> alone = quantize_bytes(x, M, K);
  g_refuse_threads = false;
  const std::vector<uint8_t> threaded = quantize_bytes(x, M, K);
  if (std::thread::hardware_concurrency() > 1) {
    EXPECT_GT(g_refused.load(), 0) << "no thread was refused";
    EXPECT_GT(g_started.load(), 0) << "no thread was started once allowed";
  }
  EXPECT_EQ(alone, threaded);
}

TEST(ThreadPool, LaterOpsStartNoThreads) {
  const int64_t M = 1024, K = 1024;
  std::vector<float> x(static_cast<size_t>(M * K), 1.5f);
  const std::vector<uint8_t> first = quantize_bytes(x, M, K);
  const int started = g_started.load();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(quantize_bytes(x, M, K), first);
  EXPECT_EQ(g_started.load(), started) << "threads started per op instead of kept";
}

}  // namespace
