// pad and unpad of token groups (docs/spec.md section 6, docs/layouts.md "pad / unpad") on the device:
// offsets stay on the device, every CTA derives the group spans it needs (group_scan.cuh) and
// copies its own contiguous range of output rows as runs of rows; every output byte is written.
// The ranges and their grid: tuning.hpp.
#include <algorithm>

#include "backend.hpp"
#include "cuda/abs_max.cuh"
#include "cuda/common.cuh"
#include "cuda/groups/group_scan.cuh"
#include "cuda/groups/launch_shape.cuh"
#include "cuda/groups/row_copy.cuh"
#include "cuda/groups/tuning.hpp"
#include "cuda/quantize/tensor_scale.hpp"

namespace mxq::cuda::kernels::groups {
namespace {

constexpr int kThreads = kernels::groups::kPadThreads, kItems = kernels::groups::kPadItems, kChunk = kThreads * kItems;
constexpr int kCtasPerSm = kernels::groups::kPadCtasPerSm;

struct RowCopyParams {
  const uint8_t* in;
  int64_t in_stride;  // bytes between input rows
  uint8_t* out;       // contiguous rows of row_bytes
  int64_t row_bytes;
  const int32_t* ends;
  int64_t groups;
  int64_t limit;  // M: the rows the ends are clamped to
  int64_t alignment;
  int64_t out_rows;
  int64_t rows_per_cta;
};

// The optional amax (PadArgs::amax, UnpadArgs::amax): nothing, or the running max of the rows a
// thread copies, one atomicMax per CTA at the end. Zero rows cannot raise it, so only the rows
// read are folded, and the result is the amax of the whole output.
struct NoAmax : NoFold {
  __device__ void commit(uint32_t*) const {}
};
template <class In>
struct RunningAmax {
  uint32_t bits = 0;
  template <class V>
  __device__ __forceinline__ void operator()(const V& v) {
    bits = max(bits, abs_max_bits<In>(v));
  }
  __device__ void commit(uint32_t* slot) const { cta_commit_max<kThreads>(bits, slot); }
};

// Copies input rows [in_row, in_row + n) to output rows [out_row, out_row + n); in_row < 0: zeros.
template <class V, class Amax>
__device__ void copy_run(const RowCopyParams& p, Amax& amax, int64_t out_row, int64_t in_row, int64_t n) {
  if (n <= 0) return;
  uint8_t* dst = p.out + out_row * p.row_bytes;
  if (in_row < 0)
    cta_copy_rows<kThreads, V>(nullptr, p.in_stride, dst, p.row_bytes, n);
  else
    cta_copy_rows<kThreads, V>(p.in + in_row * p.in_stride, p.in_stride, dst, p.row_bytes, n, amax);
}

// The output rows of pad are, group by group, a run of input rows then a run of padding rows;
// the CTA copies the runs that meet its range [r0, r1), then zeros its rows past the last group.
// CTA 0 walks every group and also writes the padded offsets.
template <class V, class Amax>
__global__ void __launch_bounds__(kThreads, kCtasPerSm)
    pad_kernel(RowCopyParams p, int32_t* padded_starts, int32_t* padded_ends, uint32_t* amax_bits) {
  __shared__ GroupChunkStorage<kChunk> s;
  Amax amax;
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
      copy_run<V>(p, amax, a, c.begin_of(j) + (a - pb), b - a);
      const int64_t z = max(lo, data_end);
      copy_run<V>(p, amax, z, -1, min(hi, c.padded_end_of(j)) - z);
    }
    return blockIdx.x == 0 || c.chunk_padded_end() < r1;
  };
  for_each_group_chunk<kThreads, kItems>(p.ends, p.groups, p.limit, PadToMultiple{p.alignment}, s, body, &end,
                                         &padded_end);
  const int64_t z = max(r0, padded_end);
  copy_run<V>(p, amax, z, -1, r1 - z);
  amax.commit(amax_bits);
}

// The output rows of unpad are, group by group, runs of rows read from the group's padded span;
// rows past the last end are 0.
template <class V, class Amax>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) unpad_kernel(RowCopyParams p, uint32_t* amax_bits) {
  __shared__ GroupChunkStorage<kChunk> s;
  Amax amax;
  const int64_t r0 = blockIdx.x * p.rows_per_cta, r1 = min(p.out_rows, r0 + p.rows_per_cta);
  int64_t end = 0, padded_end = 0;
  auto body = [&](const GroupChunk<kChunk>& c) {
    const int64_t lo = max(r0, c.chunk_begin()), hi = min(r1, c.chunk_end());
    for (int j = lo < hi ? c.find_by_end(lo) : c.count; j < c.count && c.begin_of(j) < hi; ++j) {
      const int64_t a = max(lo, c.begin_of(j)), b = min(hi, c.end_of(j));
      copy_run<V>(p, amax, a, c.padded_begin_of(j) + (a - c.begin_of(j)), b - a);
    }
    return c.chunk_end() < r1;
  };
  for_each_group_chunk<kThreads, kItems>(p.ends, p.groups, p.limit, PadToMultiple{p.alignment}, s, body, &end,
                                         &padded_end);
  const int64_t z = max(r0, end);
  copy_run<V>(p, amax, z, -1, r1 - z);
  amax.commit(amax_bits);
}

RowCopyParams row_copy_params(const TensorView& input, const TokenGroups& groups, int32_t alignment, void* out,
                              int64_t out_rows, int64_t limit) {
  const int64_t elem = dtype_size(input.dtype);
  return {static_cast<const uint8_t*>(input.data),
          input.rstride() * elem,
          static_cast<uint8_t*>(out),
          input.cols * elem,
          groups.ends,
          groups.count,
          limit,
          alignment,
          out_rows,
          0};
}

// The ranges of tuning.hpp's pad_ranges.
template <class Kernel>
cudaError_t row_grid(Kernel kernel, const RowCopyParams& p, RangeGrid* g) {
  const kernels::groups::PadRanges r = kernels::groups::pad_ranges(p.row_bytes, p.groups);
  return range_grid(reinterpret_cast<const void*>(kernel), kThreads, p.out_rows, r.rows_per_cta, g, r.max_waves);
}

int access_width(const RowCopyParams& p) {
  return widest_access({reinterpret_cast<uintptr_t>(p.in), reinterpret_cast<uintptr_t>(p.out), uint64_t(p.in_stride),
                        uint64_t(p.row_bytes)});
}

// Launches the kernel `pick(V{}, Amax{})` returns, by launch(kernel, grid, params, amax_bits),
// with the widest access the rows allow. With an amax its slot is cleared and the copy folds it,
// unless an access is narrower than an element (misaligned rows): then the written output is
// reduced afterwards, which reads it once more.
template <class Pick, class Launch>
Status launch_row_copy(const char* op, RowCopyParams p, float* amax, DType dtype, int64_t cols, cudaStream_t stream,
                       Pick pick, Launch launch) {
  auto* bits = reinterpret_cast<uint32_t*>(amax);
  bool reduce_after = false;
  cudaError_t e = cudaSuccess;
  auto run = [&](auto kernel, uint32_t* slot) {
    RangeGrid g;
    e = row_grid(kernel, p, &g);
    if (e == cudaSuccess && slot != nullptr) e = cudaMemsetAsync(slot, 0, sizeof(uint32_t), stream);
    if (e != cudaSuccess) return;
    p.rows_per_cta = g.per_cta;
    launch(kernel, g, p, slot);
  };
  dispatch_access(access_width(p), [&](auto v) {
    using V = decltype(v);
    if (amax == nullptr) return run(pick(V{}, NoAmax{}), nullptr);
    dispatch_input(dtype, [&](auto in) {
      using In = decltype(in);
      if constexpr (sizeof(V) % sizeof(typename In::Raw) == 0) {
        run(pick(V{}, RunningAmax<In>{}), bits);
      } else {
        reduce_after = true;
        run(pick(V{}, NoAmax{}), nullptr);
      }
    });
  });
  if (e != cudaSuccess) return cuda_status(op, e);
  Status st = launch_status(op);
  if (!st.ok() || !reduce_after) return st;
  TensorView out;
  out.data = p.out;
  out.dtype = dtype;
  out.rows = p.out_rows;
  out.cols = cols;
  return quantize::tensor_amax_bits(out, bits, stream);
}

// No rows to copy: the amax of an empty output is 0.
Status clear_amax(const char* op, float* amax, cudaStream_t stream) {
  if (amax == nullptr) return {};
  return cuda_status(op, cudaMemsetAsync(amax, 0, sizeof(float), stream));
}

}  // namespace
}  // namespace mxq::cuda::kernels::groups

namespace mxq::cuda {

using namespace kernels::groups;  // this file's helpers above

Status pad(const PadArgs& args, int64_t out_rows) {
  const char* op = "pad";
  const cudaStream_t stream = as_stream(args.stream);
  if (out_rows == 0) return clear_amax(op, args.amax, stream);  // no rows and no groups
  const RowCopyParams p = row_copy_params(args.input, args.groups, args.alignment, args.out, out_rows, args.input.rows);
  return launch_row_copy(
      op, p, args.amax, args.input.dtype, args.input.cols, stream,
      [](auto v, auto a) { return &pad_kernel<decltype(v), decltype(a)>; },
      [&](auto kernel, const RangeGrid& g, const RowCopyParams& q, uint32_t* bits) {
        kernel<<<g.ctas, kThreads, 0, stream>>>(q, args.padded_starts, args.padded_ends, bits);
      });
}

Status unpad(const UnpadArgs& args) {
  const char* op = "unpad";
  const cudaStream_t stream = as_stream(args.stream);
  if (args.rows == 0) return clear_amax(op, args.amax, stream);
  const RowCopyParams p = row_copy_params(args.input, args.groups, args.alignment, args.out, args.rows, args.rows);
  return launch_row_copy(
      op, p, args.amax, args.input.dtype, args.input.cols, stream,
      [](auto v, auto a) { return &unpad_kernel<decltype(v), decltype(a)>; },
      [&](auto kernel, const RangeGrid& g, const RowCopyParams& q, uint32_t* bits) {
        kernel<<<g.ctas, kThreads, 0, stream>>>(q, bits);
      });
}

}  // namespace mxq::cuda
