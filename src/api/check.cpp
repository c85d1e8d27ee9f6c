// Argument rules shared by every op (see check.hpp).
#include "check.hpp"

#include <mxq/numerics/layout.hpp>

#include "backend.hpp"

namespace mxq::api {

static bool in_range(int32_t v, int32_t lo, int32_t hi) { return v >= lo && v <= hi; }

Status check_dtype(const char* op, const char* arg, DType t) {
  const int32_t v = static_cast<int32_t>(t);
  MXQ_REQUIRE(in_range(v, 0, 3), arg, " (", v, ") is not a dtype (bf16=0, fp16=1, fp32=2, u8=3)");
  return {};
}

Status check_float_dtype(const char* op, const char* arg, DType t) {
  MXQ_TRY(check_dtype(op, arg, t));
  MXQ_REQUIRE(t != DType::u8, arg, " must be bf16, fp16 or fp32 (got u8)");
  return {};
}

Status check_params(const char* op, const char* arg, const QuantizeParams& p) {
  const int32_t f = static_cast<int32_t>(p.format), r = static_cast<int32_t>(p.rule),
                l = static_cast<int32_t>(p.layout), d = static_cast<int32_t>(p.direction);
  MXQ_REQUIRE(in_range(f, 0, 3), arg, ".format (", f, ") is not a format (mxfp8=0, mxfp8_e5m2=1, mxfp4=2, nvfp4=3)");
  MXQ_REQUIRE(in_range(r, 0, 1), arg, ".rule (", r, ") is not a scale rule (rceil=0, floor=1)");
  MXQ_REQUIRE(in_range(l, 0, 1), arg, ".layout (", l, ") is not a scale layout (linear=0, blocked=1)");
  MXQ_REQUIRE(in_range(d, 1, 3), arg, ".direction (", d, ") is not a direction (rowwise=1, colwise=2, both=3)");
  return {};
}

Status check_backend(const char* op, Backend b) {
  const int32_t v = static_cast<int32_t>(b);
  MXQ_REQUIRE(in_range(v, 0, 3), "backend (", v, ") is not a backend (auto=0, cpu=1, cuda=2, cuda_unchecked=3)");
  return {};
}

Status check_dim(const char* op, const char* arg, int64_t v) {
  MXQ_REQUIRE(v >= 0 && v <= kMaxDim, arg, " (", v, ") must be in [0, ", kMaxDim, "]");
  return {};
}

Status check_tensor(const char* op, const char* what, const TensorView& t) {
  const std::string w = what;
  MXQ_TRY(check_dtype(op, (w + ".dtype").c_str(), t.dtype));
  MXQ_TRY(check_dim(op, (w + ".batch").c_str(), t.batch));
  MXQ_TRY(check_dim(op, (w + ".rows").c_str(), t.rows));
  MXQ_TRY(check_dim(op, (w + ".cols").c_str(), t.cols));
  MXQ_REQUIRE(t.row_stride == 0 || (t.row_stride >= t.cols && t.row_stride <= kMaxElements), w, ".row_stride (",
              t.row_stride, ") must be 0 (= cols) or in [cols (", t.cols, "), ", kMaxElements, "]");
  // Elements one batch spans; 128-bit so that absurd strides cannot overflow before the cap.
  const __int128 extent = t.rows == 0 ? 0 : __int128(t.rows - 1) * t.rstride() + t.cols;
  MXQ_REQUIRE(t.batch_stride >= 0 && t.batch_stride <= kMaxElements, w, ".batch_stride (", t.batch_stride,
              ") must be in [0, ", kMaxElements, "]");
  MXQ_REQUIRE(t.batch <= 1 || t.batch_stride == 0 || t.batch_stride >= extent, w, ".batch_stride (", t.batch_stride,
              ") must be 0 or >= the elements of one batch (",
              static_cast<int64_t>(extent < kMaxElements ? extent : kMaxElements), ") when batch > 1");
  const __int128 span = t.batch == 0 ? 0 : __int128(t.batch - 1) * t.bstride() + extent;
  MXQ_REQUIRE(span <= kMaxElements, w, " spans more than ", kMaxElements,
              " elements (batch x rows x row_stride is too large)");
  MXQ_REQUIRE(t.data != nullptr || span == 0, w, ".data is null but the tensor has ", static_cast<int64_t>(span),
              " elements");
  return {};
}

Status check_groups(const char* op, const char* what, const TokenGroups& g, int64_t batch) {
  MXQ_REQUIRE(g.count >= 0 && g.count <= kMaxGroups, what, ".count (", g.count, ") must be in [0, ", kMaxGroups, "]");
  MXQ_REQUIRE(g.count == 0 || g.ends != nullptr, what, ".ends is null but ", what, ".count is ", g.count);
  MXQ_REQUIRE(g.count == 0 || batch == 1, "token groups need batch == 1 (got batch ", batch, ")");
  return {};
}

static bool power_of_two_upto_max(int32_t a) { return a >= 1 && a <= kMaxAlignment && (a & (a - 1)) == 0; }

Status check_optional_alignment(const char* op, const char* arg, int32_t a) {
  MXQ_REQUIRE(a == 0 || power_of_two_upto_max(a), arg, " (", a, ") must be 0 (no padding) or a power of two in [1, ",
              kMaxAlignment, "]");
  return {};
}

Status check_alignment(const char* op, const char* arg, int32_t a) {
  MXQ_REQUIRE(power_of_two_upto_max(a), arg, " (", a, ") must be a power of two in [1, ", kMaxAlignment, "]");
  return {};
}

Status check_present(const char* op, const char* arg, const void* p, int64_t bytes) {
  MXQ_REQUIRE(p != nullptr || bytes == 0, arg, " is null but needs ", bytes, " bytes");
  return {};
}

Status padded_rows(const char* op, int64_t M, int64_t G, int32_t A, int64_t* rows) {
  const int64_t p = num::padded_rows_bound(M, G, A);
  MXQ_REQUIRE(p <= kMaxDim, "padded rows round_up(M + G*A, A) = ", p, " (M ", M, ", G ", G, ", A ", A,
              ") must fit int32 offsets (<= ", kMaxDim, ")");
  *rows = p;
  return {};
}

uint64_t view_bytes(const TensorView& t) {
  if (t.batch <= 0 || t.rows <= 0 || t.cols <= 0) return 0;
  const uint64_t last =
      uint64_t(t.batch - 1) * uint64_t(t.bstride()) + uint64_t(t.rows - 1) * uint64_t(t.rstride()) + uint64_t(t.cols);
  return last * uint64_t(dtype_size(t.dtype));
}

Status check_no_overlap(const char* op, std::initializer_list<Span> inputs, std::initializer_list<Span> outputs) {
  const auto shared = [](const Span& a, const Span& b) {
    return a.ptr && b.ptr && a.bytes && b.bytes && !disjoint_bytes(a.ptr, a.bytes, b.ptr, b.bytes);
  };
  for (const Span* o = outputs.begin(); o != outputs.end(); ++o) {
    for (const Span& i : inputs)
      MXQ_REQUIRE(!shared(*o, i), o->name, " overlaps ", i.name,
                  " (outputs may share no byte with inputs or other outputs)");
    for (const Span* p = outputs.begin(); p != o; ++p)
      MXQ_REQUIRE(!shared(*o, *p), o->name, " overlaps ", p->name,
                  " (outputs may share no byte with inputs or other outputs)");
  }
  return {};
}

Status resolve_backend(const char* op, Backend requested, std::initializer_list<NamedPointer> ptrs, Backend* resolved) {
  MXQ_TRY(check_backend(op, requested));
#ifdef MXQ_WITH_CUDA
  if (requested == Backend::cuda_unchecked) {
    if (!cuda::device_present())
      return fail(Code::unsupported, op, "backend cuda_unchecked requested but no CUDA device is present");
    *resolved = Backend::cuda;
    return {};
  }
  // One query per pointer, shared by the choice and the checks (each is a driver call of
  // 0.16-0.23 µs on the H100 machine's host; with auto the pointers were queried twice).
  constexpr size_t kMaxPointers = 16;
  if (ptrs.size() > kMaxPointers)
    return fail(Code::unsupported, op, "internal: more pointers than resolve_backend holds");
  const NamedPointer* ptr = ptrs.begin();
  const size_t n = ptrs.size();
  bool on_device[kMaxPointers] = {};
  bool any_on_device = false;
  for (size_t i = 0; i < n; ++i) {
    on_device[i] = ptr[i].ptr != nullptr && cuda::is_device_pointer(ptr[i].ptr);
    any_on_device = any_on_device || on_device[i];
  }
  const Backend b = requested == Backend::auto_ ? (any_on_device ? Backend::cuda : Backend::cpu) : requested;
  if (b == Backend::cuda) {
    if (!cuda::device_present())
      return fail(Code::unsupported, op, "backend cuda requested but no CUDA device is present");
    for (size_t i = 0; i < n; ++i)
      MXQ_REQUIRE(ptr[i].ptr == nullptr || on_device[i], ptr[i].name,
                  " is host memory but the backend is cuda (pass device memory)");
  } else {
    // Managed memory also reports as device memory here: the cpu backend takes plain host memory.
    for (size_t i = 0; i < n; ++i) MXQ_REQUIRE(!on_device[i], ptr[i].name, " is device memory but the backend is cpu");
  }
  *resolved = b;
#else
  (void)ptrs;
  if (requested == Backend::cuda || requested == Backend::cuda_unchecked)
    return fail(Code::unsupported, op, "backend ", to_string(requested), " requested but this build has no CUDA");
  *resolved = Backend::cpu;
#endif
  return {};
}

}  // namespace mxq::api
