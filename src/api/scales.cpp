// swizzle, swizzle_size and unswizzle: validation, sizes and dispatch.
#include <mxq/numerics/layout.hpp>
#include <mxq/scales.hpp>

#include "backend.hpp"
#include "check.hpp"

namespace mxq {
namespace {

// Validates the shape and groups and returns the bytes of the blocked buffer.
Status validate_swizzle(const char* op, const SwizzleArgs& a, int64_t* blocked_bytes) {
  MXQ_TRY(api::check_dim(op, "batch", a.batch));
  MXQ_TRY(api::check_dim(op, "rows", a.rows));
  MXQ_TRY(api::check_dim(op, "cols", a.cols));
  MXQ_REQUIRE(__int128(a.batch) * a.rows * a.cols <= api::kMaxElements,
              "batch x rows x cols must be <= ", api::kMaxElements, " bytes");
  const int32_t axis = static_cast<int32_t>(a.group_axis);
  MXQ_REQUIRE(axis >= 0 && axis <= 2, "group_axis (", axis, ") is not a ScaleGroups (none=0, along_m=1, along_k=2)");
  MXQ_TRY(api::check_groups(op, "groups", a.groups, a.batch));
  const int64_t G = a.groups.count;
  if (a.group_axis == ScaleGroups::none)
    MXQ_REQUIRE(G == 0, "groups.count (", G, ") must be 0 when group_axis is none");
  else
    MXQ_REQUIRE(G > 0, "group_axis is ", a.group_axis == ScaleGroups::along_m ? "along_m" : "along_k",
                " but groups.count is 0");
  MXQ_TRY(api::check_backend(op, a.backend));
  switch (a.group_axis) {
    case ScaleGroups::along_m:  // each group starts on its own 128-row tile
      *blocked_bytes = num::group_m_scale_rows_bound(a.rows, G) * num::blocked_cols(a.cols);
      break;
    case ScaleGroups::along_k:  // each group's columns are padded to a multiple of 4
      *blocked_bytes = num::blocked_rows(a.rows) * num::group_k_scale_cols_bound(a.cols, G, 1);
      break;
    default: *blocked_bytes = a.batch * num::blocked_bytes(a.rows, a.cols);
  }
  return {};
}

}  // namespace

Status swizzle_size(const SwizzleArgs& args, int64_t* bytes) {
  const char* op = "swizzle_size";
  MXQ_REQUIRE(bytes != nullptr, "bytes is null");
  int64_t n = 0;
  MXQ_TRY(validate_swizzle(op, args, &n));
  *bytes = n;
  return {};
}

Status swizzle(const SwizzleArgs& args) {
  const char* op = "swizzle";
  int64_t n = 0;
  MXQ_TRY(validate_swizzle(op, args, &n));
  MXQ_TRY(api::check_present(op, "in", args.in, args.batch * args.rows * args.cols));
  MXQ_TRY(api::check_present(op, "out", args.out, n));
  MXQ_TRY(api::check_no_overlap(op,
                                {{"in", args.in, uint64_t(args.batch * args.rows * args.cols)},
                                 {"groups.ends", args.groups.ends, uint64_t(args.groups.count) * sizeof(int32_t)}},
                                {{"out", args.out, uint64_t(n)}}));
  Backend b;
  MXQ_TRY(api::resolve_backend(op, args.backend,
                               {{"in", args.in}, {"groups.ends", args.groups.ends}, {"out", args.out}}, &b));
#ifdef MXQ_WITH_CUDA
  if (b == Backend::cuda) return cuda::swizzle(args);
#endif
  return cpu::swizzle(args);
}

Status unswizzle(const SwizzleArgs& args, uint8_t* linear_out) {
  const char* op = "unswizzle";
  int64_t n = 0;
  MXQ_TRY(validate_swizzle(op, args, &n));
  MXQ_TRY(api::check_present(op, "out (the blocked input of unswizzle)", args.out, n));
  MXQ_TRY(api::check_present(op, "linear_out", linear_out, args.batch * args.rows * args.cols));
  MXQ_TRY(api::check_no_overlap(op,
                                {{"out (the blocked input of unswizzle)", args.out, uint64_t(n)},
                                 {"groups.ends", args.groups.ends, uint64_t(args.groups.count) * sizeof(int32_t)}},
                                {{"linear_out", linear_out, uint64_t(args.batch * args.rows * args.cols)}}));
  Backend b;
  MXQ_TRY(api::resolve_backend(op, args.backend,
                               {{"out", args.out}, {"groups.ends", args.groups.ends}, {"linear_out", linear_out}}, &b));
#ifdef MXQ_WITH_CUDA
  if (b == Backend::cuda) return cuda::unswizzle(args, linear_out);
#endif
  return cpu::unswizzle(args, linear_out);
}

}  // namespace mxq
