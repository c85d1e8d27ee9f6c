// Token padding on the host (docs/spec.md section 6, docs/layouts.md "pad / unpad"): rows are copied as
// raw bytes, so every dtype and row width takes the same path.
#include <mxq/numerics/layout.hpp>

#include <cstring>

#include "backend.hpp"
#include "cpu/element_io_internal.hpp"
#include "parallel.hpp"

namespace mxq::cpu {
namespace {

// One group after clamping: input rows [begin, end) and padded rows [padded_begin, padded_end).
struct GroupSpan {
  int64_t begin, end, padded_begin, padded_end;
};

// Walks the groups in order with clamped ends (memory-safe for any offsets) and their padded spans.
template <class Fn>
void for_each_group(const TokenGroups& groups, int64_t M, int64_t A, Fn&& fn) {
  int64_t end = 0, padded_end = 0;
  for (int64_t g = 0; g < groups.count; ++g) {
    const int64_t begin = end, padded_begin = padded_end;
    end = num::clamp_group_end(load_at(groups.ends, g), begin, M);
    padded_end = padded_begin + num::round_up(end - begin, A);
    fn(g, GroupSpan{begin, end, padded_begin, padded_end});
  }
}

const uint8_t* row_ptr(const TensorView& t, int64_t r) {
  return static_cast<const uint8_t*>(t.data) + r * t.rstride() * dtype_size(t.dtype);
}

// copy(r) for the rows [begin, end) in parallel. Rows of zero bytes (width 0) are skipped: their
// buffers may be null, which memcpy must not be given even for 0 bytes.
template <class Copy>
void copy_rows(int64_t row_bytes, int64_t begin, int64_t end, Copy&& copy) {
  if (row_bytes == 0) return;
  parallel_for(begin, end, row_bytes, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) copy(r);
  });
}

// Output rows [from, to) as zeros.
void zero_rows(uint8_t* out, int64_t row_bytes, int64_t from, int64_t to) {
  if (to > from && row_bytes > 0) std::memset(out + from * row_bytes, 0, (to - from) * row_bytes);
}

// The optional amax of the written output (rows x cols of the input's dtype): its definition.
Status write_amax(float* amax, const void* out, DType dtype, int64_t rows, int64_t cols) {
  if (amax == nullptr) return {};
  TensorView v;
  v.data = out;
  v.dtype = dtype;
  v.rows = rows;
  v.cols = cols;
  return cpu::tensor_amax(v, amax);
}

}  // namespace

Status pad(const PadArgs& args, int64_t out_rows) {
  const int64_t row_bytes = args.input.cols * dtype_size(args.input.dtype);
  auto* out = static_cast<uint8_t*>(args.out);
  int64_t written = 0;  // output rows [0, written) are done
  for_each_group(args.groups, args.input.rows, args.alignment, [&](int64_t g, const GroupSpan& s) {
    copy_rows(row_bytes, s.begin, s.end, [&](int64_t r) {
      std::memcpy(out + (s.padded_begin + r - s.begin) * row_bytes, row_ptr(args.input, r), row_bytes);
    });
    zero_rows(out, row_bytes, s.padded_begin + (s.end - s.begin), s.padded_end);
    store_at(args.padded_starts, g, static_cast<int32_t>(s.padded_begin));
    store_at(args.padded_ends, g, static_cast<int32_t>(s.padded_end));
    written = s.padded_end;
  });
  zero_rows(out, row_bytes, written, out_rows);
  return write_amax(args.amax, out, args.input.dtype, out_rows, args.input.cols);
}

Status unpad(const UnpadArgs& args) {
  const int64_t row_bytes = args.input.cols * dtype_size(args.input.dtype);
  auto* out = static_cast<uint8_t*>(args.out);
  int64_t written = 0;  // groups tile [0, last end) without gaps
  for_each_group(args.groups, args.rows, args.alignment, [&](int64_t, const GroupSpan& s) {
    copy_rows(row_bytes, s.begin, s.end, [&](int64_t r) {
      std::memcpy(out + r * row_bytes, row_ptr(args.input, s.padded_begin + r - s.begin), row_bytes);
    });
    written = s.end;
  });
  zero_rows(out, row_bytes, written, args.rows);
  return write_amax(args.amax, out, args.input.dtype, args.rows, args.input.cols);
}

}  // namespace mxq::cpu
