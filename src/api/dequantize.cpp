// dequantize and dequantize_size: validation, sizes and dispatch.
#include <mxq/dequantize.hpp>

#include "backend.hpp"
#include "check.hpp"
#include "quantize_layout.hpp"

namespace mxq {
namespace {

// Validates the arguments that describe the quantized operand and returns the output elements.
Status validate_shape(const char* op, const DequantizeArgs& a, QuantizeSizes* sizes, int64_t* out_elements) {
  api::QuantizeShape shape{a.params, a.batch, a.rows, a.cols, a.groups, ""};
  MXQ_TRY(api::quantize_layout(op, shape, sizes));
  MXQ_REQUIRE(a.params.direction != Direction::both,
              "params.direction must be rowwise or colwise (dequantize reads one direction), not both");
  MXQ_TRY(api::check_float_dtype(op, "out_dtype", a.out_dtype));
  MXQ_TRY(api::check_backend(op, a.backend));
  const int64_t rows = a.params.direction == Direction::rowwise ? sizes->row_data_rows : sizes->col_data_cols;
  *out_elements = a.batch * rows * a.cols;
  return {};
}

}  // namespace

Status dequantize_size(const DequantizeArgs& args, int64_t* out_elements) {
  const char* op = "dequantize_size";
  MXQ_REQUIRE(out_elements != nullptr, "out_elements is null");
  QuantizeSizes s;
  int64_t n = 0;
  MXQ_TRY(validate_shape(op, args, &s, &n));
  *out_elements = n;
  return {};
}

Status dequantize(const DequantizeArgs& args) {
  const char* op = "dequantize";
  QuantizeSizes s;
  int64_t n = 0;
  MXQ_TRY(validate_shape(op, args, &s, &n));
  const bool rowwise = args.params.direction == Direction::rowwise;
  MXQ_TRY(api::check_present(op, "data", args.data, rowwise ? s.row_data_bytes : s.col_data_bytes));
  MXQ_TRY(api::check_present(op, "scales", args.scales, rowwise ? s.row_scale_bytes : s.col_scale_bytes));
  if (args.params.format == Format::nvfp4)
    MXQ_REQUIRE(args.s_dec || args.batch == 0, "s_dec is null but nvfp4 needs the decode scales (batch floats)");
  else
    MXQ_REQUIRE(!args.s_dec, "s_dec is given but format ", to_string(args.params.format),
                " has no tensor scale (nvfp4 only)");
  MXQ_TRY(api::check_present(op, "out", args.out, n * dtype_size(args.out_dtype)));
  MXQ_TRY(api::check_no_overlap(
      op,
      {{"data", args.data, uint64_t(rowwise ? s.row_data_bytes : s.col_data_bytes)},
       {"scales", args.scales, uint64_t(rowwise ? s.row_scale_bytes : s.col_scale_bytes)},
       {"groups.groups.ends", args.groups.groups.ends, uint64_t(args.groups.groups.count) * sizeof(int32_t)},
       {"s_dec", args.s_dec, uint64_t(args.batch) * sizeof(float)}},
      {{"out", args.out, uint64_t(n) * uint64_t(dtype_size(args.out_dtype))}}));
  Backend b;
  MXQ_TRY(api::resolve_backend(op, args.backend,
                               {{"data", args.data},
                                {"scales", args.scales},
                                {"groups.groups.ends", args.groups.groups.ends},
                                {"s_dec", args.s_dec},
                                {"out", args.out}},
                               &b));
#ifdef MXQ_WITH_CUDA
  if (b == Backend::cuda) return cuda::dequantize(args);
#endif
  return cpu::dequantize(args);
}

}  // namespace mxq
