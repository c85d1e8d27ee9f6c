// Internal: fills device memory with the benchmark's random input (random_normal.hpp) on the GPU,
// so that gigabyte inputs cost no host generation or transfer.
#pragma once
#include <mxq/types.hpp>

#include <cstdint>

namespace mxq::bench {

// Enqueues the fill on `stream` (a cudaStream_t); returns the launch's cudaError_t as an int.
int launch_fill_random(void* data, DType t, int64_t count, uint64_t seed, void* stream);

// Enqueues a kernel that reads `bytes` (a multiple of 16) at data and writes nothing unless
// they are all 0xFF (a buffer the bench never fills so): it evicts the cache's lines, the dirty
// ones written back while it runs. Returns the launch's cudaError_t as an int.
int launch_read_flush(void* data, int64_t bytes, void* stream);

}  // namespace mxq::bench
