// A read-only view of a 2-D (batch = 1) or 3-D input tensor. The innermost stride is 1; rows and
// batches may be strided. Pointers need not be aligned. For the cuda backend the pointer is device
// memory, for the cpu backend host memory.
#pragma once
#include <cstdint>

#include "types.hpp"

namespace mxq {

struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::bf16;
  int64_t batch = 1;         // E for 3-D expert weights, 1 for 2-D
  int64_t rows = 0;          // M (tokens) or N (weights)
  int64_t cols = 0;          // K, the contiguous dimension
  int64_t row_stride = 0;    // elements between rows; 0 means cols
  int64_t batch_stride = 0;  // elements between batches; 0 means rows * row_stride

  int64_t rstride() const { return row_stride ? row_stride : cols; }
  int64_t bstride() const { return batch_stride ? batch_stride : rows * rstride(); }
};

// MoE token groups (docs/spec.md section 6): G cumulative end offsets along rows, int32, in the same
// memory as the tensor (device memory for cuda; never read on the host by a cuda op). Offsets are
// clamped to [previous end, rows]; rows past the last end belong to no group.
struct TokenGroups {
  const int32_t* ends = nullptr;
  int64_t count = 0;  // G; 0 means the tensor has no token groups
};

}  // namespace mxq
