// pad and unpad of token groups (SPEC.md section 6, docs/layouts.md "pad / unpad") on the device:
// offsets stay on the device, every CTA derives the group spans it needs (group_scan.cuh) and
// copies its own contiguous range of output rows as runs of rows; every output byte is written.
//
// The ranges are small (about kCtaBytes) and the grid spans many waves, so that the block
// scheduler hands more ranges to the SMs that finish first: one wave of equal ranges reached
// 0.91-0.93 of a same-size copy on an H200 at 131072 tokens, these ranges 0.96-0.98 (128 KiB:
// 0.95-0.97). Smaller ranges lose again: a CTA walks the groups before it copies, and at 32 KiB
// (one load of every thread) that walk costs about as much as the copy (0.75-0.88).
#include <algorithm>

#include "backend.hpp"
#include "cuda/common.cuh"
#include "cuda/groups/group_scan.cuh"
#include "cuda/groups/launch_shape.cuh"
#include "cuda/groups/row_copy.cuh"

namespace mxq::cuda {
namespace {

constexpr int kThreads = 512, kItems = 2, kChunk = kThreads * kItems;
constexpr int kCtasPerSm = 2;            // 1024 resident threads: 64 registers each, no spills
constexpr int64_t kCtaBytes = 64 << 10;  // output bytes per CTA: two steps of loads of every thread
constexpr int64_t kMaxWaves = 64;        // divided by the chunks of groups that each CTA walks

struct RowCopyParams {
  const uint8_t* in;
  int64_t in_stride;  // bytes between input rows
  uint8_t* out;       // contiguous rows of row_bytes
  int64_t row_bytes;
  const int32_t* ends;
  int64_t groups;
  int64_t limit;       // M: the rows the ends are clamped to
  int64_t alignment;
  int64_t out_rows;
  int64_t rows_per_cta;
};

// Copies input rows [in_row, in_row + n) to output rows [out_row, out_row + n); in_row < 0: zeros.
template <class V>
__device__ void copy_run(const RowCopyParams& p, int64_t out_row, int64_t in_row, int64_t n) {
  if (n <= 0) return;
  cta_copy_rows<kThreads, V>(in_row >= 0 ? p.in + in_row * p.in_stride : nullptr, p.in_stride,
                             p.out + out_row * p.row_bytes, p.row_bytes, n);
}

// The output rows of pad are, group by group, a run of input rows then a run of padding rows;
// the CTA copies the runs that meet its range [r0, r1), then zeros its rows past the last group.
// CTA 0 walks every group and also writes the padded offsets.
template <class V>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) pad_kernel(RowCopyParams p, int32_t* padded_starts, int32_t* padded_ends) {
  __shared__ GroupChunkStorage<kChunk> s;
  const int64_t r0 = blockIdx.x * p.rows_per_cta, r1 = min(p.out_rows, r0 + p.rows_per_cta);
  int64_t end = 0, padded_end = 0;
  auto body = [&](const GroupChunk<kChunk>& c) {
    if (blockIdx.x == 0)
      for (int j = threadIdx.x; j < c.count; j += kThreads) {
        padded_starts[c.first + j] = static_cast<int32_t>(c.padded_begin_of(j));
        padded_ends[c.first + j] = static_cast<int32_t>(c.padded_end_of(j));
      }
    const int64_t lo = max(r0, c.chunk_padded_begin()), hi = min(r1, c.chunk_padded_end());
    for (int j = lo < hi ? c.find_by_padded_end(lo) : c.count; j < c.count && c.padded_begin_of(j) < hi; ++j) {
      const int64_t pb = c.padded_begin_of(j), data_end = pb + (c.end_of(j) - c.begin_of(j));
      const int64_t a = max(lo, pb), b = min(hi, data_end);
      copy_run<V>(p, a, c.begin_of(j) + (a - pb), b - a);
      const int64_t z = max(lo, data_end);
      copy_run<V>(p, z, -1, min(hi, c.padded_end_of(j)) - z);
    }
    return blockIdx.x == 0 || c.chunk_padded_end() < r1;
  };
  for_each_group_chunk<kThreads, kItems>(p.ends, p.groups, p.limit, PadToMultiple{p.alignment}, s, body, &end,
                                         &padded_end);
  const int64_t z = max(r0, padded_end);
  copy_run<V>(p, z, -1, r1 - z);
}

// The output rows of unpad are, group by group, runs of rows read from the group's padded span;
// rows past the last end are 0.
template <class V>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) unpad_kernel(RowCopyParams p) {
  __shared__ GroupChunkStorage<kChunk> s;
  const int64_t r0 = blockIdx.x * p.rows_per_cta, r1 = min(p.out_rows, r0 + p.rows_per_cta);
  int64_t end = 0, padded_end = 0;
  auto body = [&](const GroupChunk<kChunk>& c) {
    const int64_t lo = max(r0, c.chunk_begin()), hi = min(r1, c.chunk_end());
    for (int j = lo < hi ? c.find_by_end(lo) : c.count; j < c.count && c.begin_of(j) < hi; ++j) {
      const int64_t a = max(lo, c.begin_of(j)), b = min(hi, c.end_of(j));
      copy_run<V>(p, a, c.padded_begin_of(j) + (a - c.begin_of(j)), b - a);
    }
    return c.chunk_end() < r1;
  };
  for_each_group_chunk<kThreads, kItems>(p.ends, p.groups, p.limit, PadToMultiple{p.alignment}, s, body, &end,
                                         &padded_end);
  const int64_t z = max(r0, end);
  copy_run<V>(p, z, -1, r1 - z);
}

RowCopyParams row_copy_params(const TensorView& input, const TokenGroups& groups, int32_t alignment, void* out,
                              int64_t out_rows, int64_t limit) {
  const int64_t elem = dtype_size(input.dtype);
  return {static_cast<const uint8_t*>(input.data), input.rstride() * elem, static_cast<uint8_t*>(out),
          input.cols * elem, groups.ends, groups.count, limit, alignment, out_rows, 0};
}

// Ranges of about kCtaBytes of output rows, in fewer waves when there are many groups to walk.
template <class Kernel>
cudaError_t row_grid(Kernel kernel, const RowCopyParams& p, RangeGrid* g) {
  const int64_t rows_per_cta = std::max<int64_t>(1, kCtaBytes / std::max<int64_t>(1, p.row_bytes));
  const int64_t chunks = (p.groups + kChunk - 1) / kChunk;
  const int64_t waves = std::max<int64_t>(1, kMaxWaves / std::max<int64_t>(1, chunks));
  return range_grid(reinterpret_cast<const void*>(kernel), kThreads, p.out_rows, rows_per_cta, g, waves);
}

int access_width(const RowCopyParams& p) {
  return widest_access({reinterpret_cast<uintptr_t>(p.in), reinterpret_cast<uintptr_t>(p.out), uint64_t(p.in_stride),
                        uint64_t(p.row_bytes)});
}

}  // namespace

Status pad(const PadArgs& args, int64_t out_rows) {
  const char* op = "pad";
  if (out_rows == 0) return {};  // no rows and no groups
  RowCopyParams p = row_copy_params(args.input, args.groups, args.alignment, args.out, out_rows, args.input.rows);
  cudaError_t e = cudaSuccess;
  dispatch_access(access_width(p), [&](auto v) {
    using V = decltype(v);
    RangeGrid g;
    e = row_grid(&pad_kernel<V>, p, &g);
    if (e != cudaSuccess) return;
    p.rows_per_cta = g.per_cta;
    pad_kernel<V><<<g.ctas, kThreads, 0, as_stream(args.stream)>>>(p, args.padded_starts, args.padded_ends);
  });
  if (e != cudaSuccess) return cuda_status(op, e);
  return launch_status(op);
}

Status unpad(const UnpadArgs& args) {
  const char* op = "unpad";
  if (args.rows == 0) return {};
  RowCopyParams p = row_copy_params(args.input, args.groups, args.alignment, args.out, args.rows, args.rows);
  cudaError_t e = cudaSuccess;
  dispatch_access(access_width(p), [&](auto v) {
    using V = decltype(v);
    RangeGrid g;
    e = row_grid(&unpad_kernel<V>, p, &g);
    if (e != cudaSuccess) return;
    p.rows_per_cta = g.per_cta;
    unpad_kernel<V><<<g.ctas, kThreads, 0, as_stream(args.stream)>>>(p);
  });
  if (e != cudaSuccess) return cuda_status(op, e);
  return launch_status(op);
}

}  // namespace mxq::cuda
