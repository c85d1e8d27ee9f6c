// Scale unswizzle on the device: the blocked layout (docs/spec.md sections 5-6) back to linear
// (batch, rows, cols). A thread writes one linear byte, read from its blocked offset; bytes that
// have no place in the blocked buffer (rows or columns outside every clamped group) are 0.
#include "backend.hpp"
#include "cuda/common.cuh"
#include "cuda/groups/group_scan.cuh"
#include "cuda/groups/launch_shape.cuh"
#include "cuda/scales/blocked_unit.cuh"
#include "cuda/scales/tuning.hpp"

namespace mxq::cuda::kernels::scales {
namespace {

constexpr int kChunk = kThreads * kItems;

struct UnswizzleParams {
  const uint8_t* blocked;
  int64_t batch, rows, cols;
  uint8_t* out;          // linear
  int64_t rows_per_cta;  // of the batch * rows linear rows
};

__global__ void __launch_bounds__(kThreads) unswizzle_plain_kernel(UnswizzleParams p) {
  const int64_t per_batch = num::blocked_bytes(p.rows, p.cols), nc = num::blocked_cols(p.cols) / 4;
  const int64_t r0 = blockIdx.x * p.rows_per_cta, r1 = min(p.batch * p.rows, r0 + p.rows_per_cta);
  for (int64_t i = r0 * p.cols + threadIdx.x; i < r1 * p.cols; i += kThreads) {
    const int64_t row = i / p.cols, c = i % p.cols, b = row / p.rows, r = row % p.rows;
    p.out[i] = p.blocked[b * per_batch + num::blocked_offset(r, c, nc)];
  }
}

// Groups along M: the CTA's rows, group by group. Each group is a blocked matrix at padded row
// padded_begin of a Cp-wide buffer.
__global__ void __launch_bounds__(kThreads) unswizzle_along_m_kernel(UnswizzleParams p, TokenGroups groups) {
  __shared__ kernels::groups::GroupChunkStorage<kChunk> s;
  const int64_t Cp = num::blocked_cols(p.cols), C = p.cols;
  const int64_t r0 = blockIdx.x * p.rows_per_cta, r1 = min(p.rows, r0 + p.rows_per_cta);
  auto body = [&](const kernels::groups::GroupChunk<kChunk>& c) {
    const int64_t lo = max(r0, c.chunk_begin()), hi = min(r1, c.chunk_end());
    for (int64_t i = lo * C + threadIdx.x; i < hi * C; i += kThreads) {
      const int64_t r = i / C, col = i % C;
      const int j = c.find_by_end(r);
      p.out[i] = p.blocked[c.padded_begin_of(j) * Cp + num::blocked_offset(r - c.begin_of(j), col, Cp / 4)];
    }
    return c.chunk_end() < r1;
  };
  int64_t end = 0, padded_end = 0;
  kernels::groups::for_each_group_chunk<kThreads, kItems>(
      groups.ends, groups.count, p.rows, kernels::groups::ScaleRowsAlongM{}, s, body, &end, &padded_end);
  for (int64_t i = max(r0, end) * C + threadIdx.x; i < r1 * C; i += kThreads) p.out[i] = 0;
}

// Groups along K: the CTA's rows, for the columns of each group. Group g is an Rp x Q_g blocked
// matrix starting at byte Rp * padded_begin.
__global__ void __launch_bounds__(kThreads) unswizzle_along_k_kernel(UnswizzleParams p, TokenGroups groups) {
  __shared__ kernels::groups::GroupChunkStorage<kChunk> s;
  const int64_t Rp = num::blocked_rows(p.rows), C = p.cols;
  const int64_t r0 = blockIdx.x * p.rows_per_cta, r1 = min(p.rows, r0 + p.rows_per_cta);
  auto body = [&](const kernels::groups::GroupChunk<kChunk>& c) {
    const int64_t c0 = c.chunk_begin(), width = c.chunk_end() - c0;
    for (int64_t i = threadIdx.x; i < (r1 - r0) * width; i += kThreads) {
      const int64_t r = r0 + i / width, col = c0 + i % width;
      const int j = c.find_by_end(col);
      const int64_t pbegin = c.padded_begin_of(j), nc = (c.padded_end_of(j) - pbegin) / 4;
      p.out[r * C + col] = p.blocked[Rp * pbegin + num::blocked_offset(r, col - c.begin_of(j), nc)];
    }
    return true;  // every chunk has columns of the CTA's rows
  };
  int64_t end = 0, padded_end = 0;
  kernels::groups::for_each_group_chunk<kThreads, kItems>(
      groups.ends, groups.count, p.cols, kernels::groups::ScaleColsAlongK{}, s, body, &end, &padded_end);
  const int64_t width = C - end;
  for (int64_t i = threadIdx.x; i < (r1 - r0) * width; i += kThreads) p.out[(r0 + i / width) * C + end + i % width] = 0;
}

template <class Kernel, class... Args>
Status launch(const char* op, Kernel kernel, UnswizzleParams p, int64_t rows, void* stream, Args... args) {
  kernels::groups::RangeGrid g;
  const int64_t min_rows = p.cols > 0 ? (kMinBytesPerCta + p.cols - 1) / p.cols : rows;
  const cudaError_t e =
      kernels::groups::range_grid(reinterpret_cast<const void*>(kernel), kThreads, rows, min_rows, &g);
  if (e != cudaSuccess) return cuda_status(op, e);
  p.rows_per_cta = g.per_cta;
  kernel<<<g.ctas, kThreads, 0, as_stream(stream)>>>(p, args...);
  return launch_status(op);
}

}  // namespace
}  // namespace mxq::cuda::kernels::scales

namespace mxq::cuda {

using namespace kernels::scales;  // this file's helpers above

Status unswizzle(const SwizzleArgs& a, uint8_t* linear_out) {
  const char* op = "unswizzle";
  if (a.batch * a.rows * a.cols == 0) return {};
  const UnswizzleParams p{a.out, a.batch, a.rows, a.cols, linear_out, 0};
  switch (a.group_axis) {
    case ScaleGroups::along_m: return launch(op, unswizzle_along_m_kernel, p, a.rows, a.stream, a.groups);
    case ScaleGroups::along_k: return launch(op, unswizzle_along_k_kernel, p, a.rows, a.stream, a.groups);
    default: return launch(op, unswizzle_plain_kernel, p, a.batch * a.rows, a.stream);
  }
}

}  // namespace mxq::cuda
