// The host gate on a GPU (ctest label gpu; exits 77 without a device): a host delay between a
// run's events stays out of the timed interval when the run is queued behind the gate, and a host
// that waits for the GPU while the gate is closed (an op that synchronises) is reported.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "host_gate.hpp"

namespace mxq::bench {
namespace {

constexpr auto kHostDelay = std::chrono::milliseconds(30);

// Event time of an empty interval whose second event the host records kHostDelay after the first.
float delayed_interval_ms(cudaStream_t s, HostGate* gate) {
  cudaEvent_t a, b;
  EXPECT_EQ(cudaEventCreate(&a), cudaSuccess);
  EXPECT_EQ(cudaEventCreate(&b), cudaSuccess);
  if (gate) {
    EXPECT_EQ(gate->close(s), cudaSuccess);
  }
  EXPECT_EQ(cudaEventRecord(a, s), cudaSuccess);
  std::this_thread::sleep_for(kHostDelay);
  EXPECT_EQ(cudaEventRecord(b, s), cudaSuccess);
  if (gate) gate->open();
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms;
}

TEST(HostGate, KeepsHostDelaysOutOfTheEvents) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  HostGate gate;
  const float delay_ms = std::chrono::duration<float, std::milli>(kHostDelay).count();
  EXPECT_GE(delayed_interval_ms(s, nullptr), 0.9f * delay_ms);  // the delay shows without the gate
  EXPECT_LT(delayed_interval_ms(s, &gate), 1.0f);
  EXPECT_EQ(gate.timeouts(), 0u);
  cudaStreamDestroy(s);
}

TEST(HostGate, ReportsAHostThatWaitsWhileItIsClosed) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  HostGate gate(50'000'000);  // 50 ms
  ASSERT_EQ(gate.close(s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);  // returns once the wait gives up
  gate.open();
  EXPECT_EQ(gate.timeouts(), 1u);
  ASSERT_EQ(gate.close(s), cudaSuccess);  // the next ticket waits again and is opened in time
  gate.open();
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(gate.timeouts(), 1u);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace mxq::bench

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return 77;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
