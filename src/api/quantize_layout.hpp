// The shape rules and output sizes shared by quantize and dequantize (docs/layouts.md): a
// quantize call is described by its params, logical input shape and token groups.
#pragma once
#include <mxq/mxq.hpp>

namespace mxq::api {

struct QuantizeShape {
  QuantizeParams params;
  int64_t batch = 1, rows = 0, cols = 0;
  QuantizeGroups groups;
  // How messages name the pieces: "input." for quantize ("input.cols"), "" for dequantize.
  const char* dims_prefix = "";
};

// Validates params, dimensions, groups and padding, then fills every size of QuantizeSizes for the
// directions in params.direction (the others stay 0).
Status quantize_layout(const char* op, const QuantizeShape& shape, QuantizeSizes* sizes);

}  // namespace mxq::api
