// Internal: a gate that holds a stream until the host has queued a whole timed run, so that no
// host delay (a slow API call, the thread descheduled) can fall between a run's start and stop
// events. Without it a run is timed correctly only while the host stays ahead of the GPU; a host
// slowed down by other load let the GPU idle inside the event pair (one H100 run:
// grouped rowwise 16384 x 2048 at a median of 78.9 us against 41.8 us the case after, its copy
// slowed down alike).
//
// close() queues a one-thread kernel that waits until the host calls open() (a flag in mapped
// host memory). The kernel gives up after `timeout_ns` and records that it did: the host then
// waited for the GPU while the gate was closed, i.e. an op synchronised the host, which no mxq op
// may do (with the gate closed such an op would otherwise never return).
#pragma once
#include <cstdint>

namespace mxq::bench {

class HostGate {
 public:
  explicit HostGate(uint64_t timeout_ns = 2'000'000'000);  // throws std::runtime_error
  ~HostGate();
  HostGate(const HostGate&) = delete;
  HostGate& operator=(const HostGate&) = delete;

  // Queues the wait on `stream` (a cudaStream_t); returns the launch's cudaError_t as an int.
  int close(void* stream);
  // Lets the wait queued by the last close() end.
  void open();
  // How many waits so far ended by their timeout instead of open().
  uint32_t timeouts() const;

 private:
  uint64_t timeout_ns_;
  uint32_t ticket_ = 0;                        // of the last close()
  volatile uint32_t* released_ = nullptr;      // mapped host memory: the last ticket opened
  volatile uint32_t* expired_ = nullptr;       // mapped host memory: waits that timed out
  volatile uint32_t* device_flags_ = nullptr;  // the device's address of {released, expired}
};

// Opens the gate when it goes out of scope (an early return must not leave the stream waiting).
class OpenOnExit {
 public:
  explicit OpenOnExit(HostGate& gate) : gate_(gate) {}
  ~OpenOnExit() { gate_.open(); }
  OpenOnExit(const OpenOnExit&) = delete;
  OpenOnExit& operator=(const OpenOnExit&) = delete;

 private:
  HostGate& gate_;
};

}  // namespace mxq::bench
