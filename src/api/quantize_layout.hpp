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

// Everything quantize_sizes checks: the input view and the layout it implies.
Status validate_quantize_inputs(const char* op, const QuantizeArgs& a, QuantizeSizes* sizes);
// The layout part alone, for ops that quantize a tensor they compute (messages name its dimensions
// with dims_prefix, e.g. "activation.").
Status validate_quantize_layout(const char* op, const QuantizeArgs& a, const char* dims_prefix, QuantizeSizes* sizes);
// The outputs of a quantize call: present for what the call writes, absent for what it does not,
// overlapping neither its inputs nor each other.
Status validate_quantize_outputs(const char* op, const QuantizeArgs& a, const QuantizeSizes& s);
// Its first half: each output present for what the call writes and absent for what it does not.
Status check_quantize_outputs_present(const char* op, const QuantizeArgs& a, const QuantizeSizes& s);

}  // namespace mxq::api
