// The one place where src/api states argument rules. Each rule is one line:
//   MXQ_REQUIRE(cond, "input.cols (", K, ") must be even for fp4 formats (two codes per byte)");
// The enclosing function must have `const char* op` in scope (the public op name) and return
// Status; the message becomes "<op>: <text>".
#pragma once
#include <mxq/mxq.hpp>

#include <initializer_list>
#include <sstream>
#include <string>

namespace mxq::api {

template <class... Parts>
Status fail(Code code, const char* op, const Parts&... parts) {
  std::ostringstream s;
  s << op << ": ";
  (s << ... << parts);
  return Status::error(code, s.str());
}

#define MXQ_REQUIRE(cond, ...)                                                            \
  do {                                                                                    \
    if (!(cond)) return ::mxq::api::fail(::mxq::Code::invalid_argument, op, __VA_ARGS__); \
  } while (0)

#define MXQ_TRY(expr)                        \
  do {                                       \
    ::mxq::Status mxq_try_s_ = (expr);       \
    if (!mxq_try_s_.ok()) return mxq_try_s_; \
  } while (0)

// Size caps: every dimension fits an int32 offset, and every element span is small enough that
// byte counts (x4 bytes, plus padding and group slack) cannot overflow int64.
constexpr int64_t kMaxDim = 0x7FFFFFFF;
constexpr int64_t kMaxElements = int64_t{1} << 46;
constexpr int64_t kMaxGroups = int64_t{1} << 20;
constexpr int32_t kMaxAlignment = 4096;

// Range checks for enums cast from integers (the C ABI passes int32 fields).
Status check_dtype(const char* op, const char* arg, DType t);
Status check_float_dtype(const char* op, const char* arg, DType t);  // bf16, fp16, fp32
Status check_params(const char* op, const char* arg, const QuantizeParams& p);
Status check_backend(const char* op, Backend b);

// A dimension in [0, kMaxDim].
Status check_dim(const char* op, const char* arg, int64_t v);

// Shape, strides and pointer of a tensor view (dtype range included). `what` is the argument
// name, e.g. "input".
Status check_tensor(const char* op, const char* what, const TensorView& t);

// count in [0, kMaxGroups], ends present when count > 0, groups only with batch == 1.
Status check_groups(const char* op, const char* what, const TokenGroups& g, int64_t batch);

// A pad alignment of the fused quantize pad: 0 (no padding) or a power of two <= 4096.
Status check_optional_alignment(const char* op, const char* arg, int32_t a);
// An alignment of pad/unpad: a power of two in [1, 4096].
Status check_alignment(const char* op, const char* arg, int32_t a);

// A pointer that must be present when the buffer it points to has bytes.
Status check_present(const char* op, const char* arg, const void* p, int64_t bytes);

// Padded rows round_up(M + G*A, A), checked to fit int32 offsets.
Status padded_rows(const char* op, int64_t M, int64_t G, int32_t A, int64_t* rows);

// A buffer an op reads or writes: its name in messages, first byte and length.
struct Span {
  const char* name;
  const void* ptr;
  uint64_t bytes;
};
// The bytes of a tensor view, from its first element to its last (0 when it has no element).
uint64_t view_bytes(const TensorView& t);
// No output may share a byte with an input or with another output: ops read and write in any
// order, so overlap would give silently wrong results. Null or empty spans overlap nothing.
Status check_no_overlap(const char* op, std::initializer_list<Span> inputs, std::initializer_list<Span> outputs);

// Which backend runs an op, after checking that every given pointer is the right kind of memory.
struct NamedPointer {
  const char* name;
  const void* ptr;
};
Status resolve_backend(const char* op, Backend requested, std::initializer_list<NamedPointer> ptrs, Backend* resolved);

}  // namespace mxq::api
