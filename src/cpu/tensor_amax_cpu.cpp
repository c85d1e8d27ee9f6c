// NVFP4 tensor amax on the CPU: max |x| per batch in fp32 (NaN wins), as the max over abs_bits.
#include <algorithm>
#include <atomic>
#include <vector>

#include "backend.hpp"
#include "cpu/element_io_internal.hpp"
#include "cpu/parallel.hpp"

namespace mxq::cpu {

Status tensor_amax(const TensorView& input, float* out) {
  for (int64_t b = 0; b < input.batch; ++b) {
    // The max of unsigned bits is order independent, so any split gives the same result.
    std::atomic<uint32_t> amax_bits{0};
    parallel_for(0, input.rows, input.cols, [&](int64_t lo, int64_t hi) {
      std::vector<float> row(static_cast<size_t>(input.cols));
      uint32_t local = 0;
      for (int64_t r = lo; r < hi; ++r) {
        load_row(input, b, r, 0, input.cols, row.data());
        for (float x : row) local = std::max(local, num::abs_bits(x));
      }
      uint32_t seen = amax_bits.load();
      while (local > seen && !amax_bits.compare_exchange_weak(seen, local)) {
      }
    });
    store_at(out, b, num::u2f(amax_bits.load()));
  }
  return Status();
}

}  // namespace mxq::cpu
