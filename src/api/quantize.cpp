// quantize, quantize_sizes and tensor_amax: validation, sizes and dispatch.
#include <mxq/quantize.hpp>

#include "backend.hpp"
#include "check.hpp"
#include "quantize_layout.hpp"

namespace mxq {
namespace api {

Status validate_quantize_inputs(const char* op, const QuantizeArgs& a, QuantizeSizes* sizes) {
  MXQ_TRY(api::check_tensor(op, "input", a.input));
  MXQ_TRY(api::check_float_dtype(op, "input.dtype", a.input.dtype));
  return validate_quantize_layout(op, a, "input.", sizes);
}

Status validate_quantize_layout(const char* op, const QuantizeArgs& a, const char* dims_prefix, QuantizeSizes* sizes) {
  api::QuantizeShape shape{a.params, a.input.batch, a.input.rows, a.input.cols, a.groups, dims_prefix};
  MXQ_TRY(api::quantize_layout(op, shape, sizes));
  const bool nv = a.params.format == Format::nvfp4;
  MXQ_REQUIRE(nv || a.tensor_amax == nullptr, "tensor_amax is given but format ", to_string(a.params.format),
              " has no tensor scale (nvfp4 only)");
  return api::check_backend(op, a.backend);
}

Status check_quantize_outputs_present(const char* op, const QuantizeArgs& a, const QuantizeSizes& s) {
  const QuantizeOutputs& o = a.out;
  const char* dir = to_string(a.params.direction);
  if (has_rowwise(a.params.direction)) {
    MXQ_REQUIRE(o.row_data || s.row_data_bytes == 0, "out.row_data is null but direction includes rowwise (",
                s.row_data_bytes, " bytes)");
    MXQ_REQUIRE(o.row_scales || s.row_scale_bytes == 0, "out.row_scales is null but direction includes rowwise (",
                s.row_scale_bytes, " bytes)");
  } else {
    MXQ_REQUIRE(!o.row_data && !o.row_scales, "out.row_data / out.row_scales are given but direction is ", dir);
  }
  if (has_colwise(a.params.direction)) {
    MXQ_REQUIRE(o.col_data || s.col_data_bytes == 0, "out.col_data is null but direction includes colwise (",
                s.col_data_bytes, " bytes)");
    MXQ_REQUIRE(o.col_scales || s.col_scale_bytes == 0, "out.col_scales is null but direction includes colwise (",
                s.col_scale_bytes, " bytes)");
  } else {
    MXQ_REQUIRE(!o.col_data && !o.col_scales, "out.col_data / out.col_scales are given but direction is ", dir);
  }
  if (s.tensor_scale_count > 0) {
    MXQ_REQUIRE(o.s_enc && o.s_dec, "out.s_enc and out.s_dec are required for nvfp4 (", s.tensor_scale_count,
                " floats each)");
  } else if (a.params.format != Format::nvfp4) {
    MXQ_REQUIRE(!o.s_enc && !o.s_dec, "out.s_enc / out.s_dec are given but format ", to_string(a.params.format),
                " has no tensor scale (nvfp4 only)");
  }
  MXQ_REQUIRE(s.padded_offset_count > 0 || (!o.padded_starts && !o.padded_ends),
              "out.padded_starts / out.padded_ends are given but neither groups.pad_rowwise nor "
              "groups.pad_colwise pads");
  return {};
}

Status validate_quantize_outputs(const char* op, const QuantizeArgs& a, const QuantizeSizes& s) {
  MXQ_TRY(check_quantize_outputs_present(op, a, s));
  const QuantizeOutputs& o = a.out;
  const uint64_t floats = uint64_t(a.input.batch) * sizeof(float);
  const uint64_t offsets = uint64_t(s.padded_offset_count) * sizeof(int32_t);
  // tensor_amax may be out.s_enc or out.s_dec itself: the tensor scales are derived from it in place.
  const bool amax_in_place = a.tensor_amax && (a.tensor_amax == o.s_enc || a.tensor_amax == o.s_dec);
  return api::check_no_overlap(
      op,
      {{"input.data", a.input.data, api::view_bytes(a.input)},
       {"groups.groups.ends", a.groups.groups.ends, uint64_t(a.groups.groups.count) * sizeof(int32_t)},
       {"tensor_amax", amax_in_place ? nullptr : a.tensor_amax, floats}},
      {{"out.row_data", o.row_data, uint64_t(s.row_data_bytes)},
       {"out.row_scales", o.row_scales, uint64_t(s.row_scale_bytes)},
       {"out.col_data", o.col_data, uint64_t(s.col_data_bytes)},
       {"out.col_scales", o.col_scales, uint64_t(s.col_scale_bytes)},
       {"out.s_enc", o.s_enc, uint64_t(s.tensor_scale_count) * sizeof(float)},
       {"out.s_dec", o.s_dec, uint64_t(s.tensor_scale_count) * sizeof(float)},
       {"out.padded_starts", o.padded_starts, offsets},
       {"out.padded_ends", o.padded_ends, offsets},
       {"out.amax", o.amax, floats}});
}

}  // namespace api

Status quantize_sizes(const QuantizeArgs& args, QuantizeSizes* sizes) {
  const char* op = "quantize_sizes";
  MXQ_REQUIRE(sizes != nullptr, "sizes is null");
  QuantizeSizes s;
  MXQ_TRY(api::validate_quantize_inputs(op, args, &s));
  *sizes = s;
  return {};
}

Status quantize(const QuantizeArgs& args) {
  const char* op = "quantize";
  QuantizeSizes s;
  MXQ_TRY(api::validate_quantize_inputs(op, args, &s));
  MXQ_TRY(api::validate_quantize_outputs(op, args, s));
  const QuantizeOutputs& o = args.out;
  Backend b;
  MXQ_TRY(api::resolve_backend(op, args.backend,
                               {{"input.data", args.input.data},
                                {"groups.groups.ends", args.groups.groups.ends},
                                {"tensor_amax", args.tensor_amax},
                                {"out.row_data", o.row_data},
                                {"out.row_scales", o.row_scales},
                                {"out.col_data", o.col_data},
                                {"out.col_scales", o.col_scales},
                                {"out.s_enc", o.s_enc},
                                {"out.s_dec", o.s_dec},
                                {"out.padded_starts", o.padded_starts},
                                {"out.padded_ends", o.padded_ends},
                                {"out.amax", o.amax}},
                               &b));
#ifdef MXQ_WITH_CUDA
  if (b == Backend::cuda) return cuda::quantize(args, s);
#endif
  return cpu::quantize(args, s);
}

Status tensor_amax(const TensorView& input, float* out, Backend backend, void* stream) {
  const char* op = "tensor_amax";
  MXQ_TRY(api::check_tensor(op, "input", input));
  MXQ_TRY(api::check_float_dtype(op, "input.dtype", input.dtype));
  MXQ_REQUIRE(out || input.batch == 0, "out is null but needs input.batch (", input.batch, ") floats");
  MXQ_TRY(api::check_no_overlap(op, {{"input.data", input.data, api::view_bytes(input)}},
                                {{"out", out, uint64_t(input.batch) * sizeof(float)}}));
  Backend b;
  MXQ_TRY(api::resolve_backend(op, backend, {{"input.data", input.data}, {"out", out}}, &b));
#ifdef MXQ_WITH_CUDA
  if (b == Backend::cuda) return cuda::tensor_amax(input, out, stream);
#else
  (void)stream;
#endif
  return cpu::tensor_amax(input, out);
}

}  // namespace mxq
