// Signal-to-quantization-noise ratio of a round trip, accumulated in double over any number of
// chunks (tensor by tensor, expert by expert). Non-finite reference elements are skipped: a
// poisoned block has no meaningful error.
#pragma once
#include <mxq/types.hpp>

#include <cstdint>
#include <string>

namespace mxq::cli {

// Element i of a bf16/fp16/fp32 array as fp32 (exact); `data` needs no alignment.
float load_as_float(const void* data, DType dtype, int64_t i);

// The sums of one piece of a round trip, added to a Sqnr in piece order: pieces may be summed on
// any thread, and the totals stay those of one thread adding them in turn.
struct SqnrSums {
  double signal = 0, noise = 0;
  int64_t count = 0;
};

class Sqnr {
 public:
  // Elements per piece of add(reference, dtype, ...): its sums restart every kPiece elements.
  static constexpr int64_t kPiece = 1024;
  // The sums add() forms for one piece of n <= kPiece elements.
  static SqnrSums piece_sums(const void* reference, DType dtype, const float* approximation, int64_t n);
  void add(const SqnrSums& piece);

  void add(float reference, float approximation);
  // Adds n elements of `reference` (any float dtype) against fp32 `approximation`.
  void add(const void* reference, DType dtype, const float* approximation, int64_t n);
  void merge(const Sqnr& other);
  double db() const;  // +inf for an exact round trip, nan when there was no finite signal
  bool empty() const { return count_ == 0; }

 private:
  double signal_ = 0, noise_ = 0;
  int64_t count_ = 0;
};

std::string format_db(double db);  // "31.42", "inf", "n/a"

}  // namespace mxq::cli
