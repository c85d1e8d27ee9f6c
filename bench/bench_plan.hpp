// Internal: turns a BenchCase into buffers on a device, one callable op invocation through the
// public API, and the bytes that invocation must move.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "bench_core.hpp"
#include "bench_device.hpp"

namespace mxq::bench {

struct OpPlan {
  std::vector<DeviceBuffer> buffers;  // freed with the plan
  std::function<Status()> call;       // one op call on the device's stream
  int64_t bytes_read = 0;             // input, group offsets, given amax
  int64_t bytes_written = 0;          // every output buffer, whole (layouts.md: all bytes written)
};

// Allocates and fills the inputs (random normal, never zeros) and the outputs. Dequantize runs
// its quantize once here, untimed. Returns the op's error (e.g. unsupported) if setup needs an
// op that fails.
Status make_plan(const BenchCase& c, BenchDevice& device, OpPlan* plan);

// Jagged token-group end offsets over `rows` (deterministic): sizes vary around rows / groups,
// mostly not multiples of 32, and sum to rows.
std::vector<int32_t> jagged_group_ends(int64_t rows, int32_t groups, int32_t multiple = 1);

}  // namespace mxq::bench
