// pad, pad_rows, unpad and validate_group_ends: validation, sizes and dispatch.
#include <mxq/groups.hpp>

#include "backend.hpp"
#include "check.hpp"

namespace mxq {
namespace {

// The 2-D payload of pad/unpad: any dtype, one batch.
Status check_payload(const char* op, const TensorView& input) {
  MXQ_TRY(api::check_tensor(op, "input", input));
  MXQ_REQUIRE(input.batch == 1, "input.batch (", input.batch, ") must be 1 (a 2-D tensor)");
  return {};
}

// Rows of pad's output for M input rows, capped so that the output's byte count fits.
Status padded_output_rows(const char* op, int64_t M, const TokenGroups& g, int32_t A, int64_t cols, int64_t* rows) {
  MXQ_TRY(api::check_alignment(op, "alignment", A));
  MXQ_TRY(api::padded_rows(op, M, g.count, A, rows));
  MXQ_REQUIRE(__int128(*rows) * cols <= api::kMaxElements, "padded rows (", *rows, ") x cols (", cols,
              ") must be <= ", api::kMaxElements, " elements");
  return {};
}

// The optional amax output needs a float input (overlap is checked with the other outputs).
Status check_amax(const char* op, const float* amax, DType dtype) {
  if (amax == nullptr) return {};
  return api::check_float_dtype(op, "input.dtype (with amax)", dtype);
}

Status validate_pad(const char* op, const PadArgs& a, int64_t* rows) {
  MXQ_TRY(check_payload(op, a.input));
  MXQ_TRY(api::check_groups(op, "groups", a.groups, a.input.batch));
  MXQ_TRY(padded_output_rows(op, a.input.rows, a.groups, a.alignment, a.input.cols, rows));
  return api::check_backend(op, a.backend);
}

}  // namespace

Status pad_rows(const PadArgs& args, int64_t* rows) {
  const char* op = "pad_rows";
  MXQ_REQUIRE(rows != nullptr, "rows is null");
  int64_t p = 0;
  MXQ_TRY(validate_pad(op, args, &p));
  *rows = p;
  return {};
}

Status pad(const PadArgs& args) {
  const char* op = "pad";
  int64_t p = 0;
  MXQ_TRY(validate_pad(op, args, &p));
  MXQ_TRY(api::check_present(op, "out", args.out, p * args.input.cols * dtype_size(args.input.dtype)));
  MXQ_TRY(api::check_present(op, "padded_starts", args.padded_starts, args.groups.count * 4));
  MXQ_TRY(api::check_present(op, "padded_ends", args.padded_ends, args.groups.count * 4));
  MXQ_TRY(check_amax(op, args.amax, args.input.dtype));
  const uint64_t offsets = uint64_t(args.groups.count) * sizeof(int32_t);
  MXQ_TRY(api::check_no_overlap(
      op, {{"input.data", args.input.data, api::view_bytes(args.input)}, {"groups.ends", args.groups.ends, offsets}},
      {{"out", args.out, uint64_t(p * args.input.cols * dtype_size(args.input.dtype))},
       {"padded_starts", args.padded_starts, offsets},
       {"padded_ends", args.padded_ends, offsets},
       {"amax", args.amax, sizeof(float)}}));
  Backend b;
  MXQ_TRY(api::resolve_backend(op, args.backend,
                               {{"input.data", args.input.data},
                                {"groups.ends", args.groups.ends},
                                {"out", args.out},
                                {"padded_starts", args.padded_starts},
                                {"padded_ends", args.padded_ends},
                                {"amax", args.amax}},
                               &b));
#ifdef MXQ_WITH_CUDA
  if (b == Backend::cuda) return cuda::pad(args, p);
#endif
  return cpu::pad(args, p);
}

Status unpad(const UnpadArgs& args) {
  const char* op = "unpad";
  MXQ_TRY(check_payload(op, args.input));
  MXQ_TRY(api::check_groups(op, "groups", args.groups, args.input.batch));
  MXQ_TRY(api::check_dim(op, "rows", args.rows));
  int64_t p = 0;
  MXQ_TRY(padded_output_rows(op, args.rows, args.groups, args.alignment, args.input.cols, &p));
  MXQ_REQUIRE(args.input.rows >= p, "input.rows (", args.input.rows,
              ") must be >= the padded rows round_up(rows + G*A, A) = ", p, " (rows ", args.rows, ", G ",
              args.groups.count, ", A ", args.alignment, ")");
  MXQ_TRY(api::check_backend(op, args.backend));
  const int64_t out_bytes = args.rows * args.input.cols * dtype_size(args.input.dtype);
  MXQ_TRY(api::check_present(op, "out", args.out, out_bytes));
  MXQ_TRY(check_amax(op, args.amax, args.input.dtype));
  MXQ_TRY(api::check_no_overlap(op,
                                {{"input.data", args.input.data, api::view_bytes(args.input)},
                                 {"groups.ends", args.groups.ends, uint64_t(args.groups.count) * sizeof(int32_t)}},
                                {{"out", args.out, uint64_t(out_bytes)}, {"amax", args.amax, sizeof(float)}}));
  Backend b;
  MXQ_TRY(api::resolve_backend(
      op, args.backend,
      {{"input.data", args.input.data}, {"groups.ends", args.groups.ends}, {"out", args.out}, {"amax", args.amax}},
      &b));
#ifdef MXQ_WITH_CUDA
  if (b == Backend::cuda) return cuda::unpad(args);
#endif
  return cpu::unpad(args);
}

Status validate_group_ends(const TokenGroups& groups, int64_t M, Backend backend, void* stream) {
  const char* op = "validate_group_ends";
  MXQ_TRY(api::check_groups(op, "groups", groups, 1));
  MXQ_TRY(api::check_dim(op, "M", M));
  Backend b;
  MXQ_TRY(api::resolve_backend(op, backend, {{"groups.ends", groups.ends}}, &b));
#ifdef MXQ_WITH_CUDA
  if (b == Backend::cuda) return cuda::validate_group_ends(groups, M, stream);
#else
  (void)stream;
#endif
  return cpu::validate_group_ends(groups, M);
}

}  // namespace mxq
