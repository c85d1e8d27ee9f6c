// Scale swizzle on the device: linear (batch, rows, cols) -> the blocked 128x4 layout of docs/spec.md
// section 5, plain or per token group (section 6, docs/layouts.md). A thread builds one 16-byte
// unit of the blocked buffer (4 rows x 4 columns of a 512-byte tile) and stores it at once;
// padding bytes are 0 and every byte of the buffer is written.
#include "backend.hpp"
#include "cuda/common.cuh"
#include "cuda/groups/group_scan.cuh"
#include "cuda/groups/launch_shape.cuh"
#include "cuda/scales/blocked_unit.cuh"
#include "cuda/scales/tuning.hpp"

namespace mxq::cuda::kernels::scales {
namespace {

constexpr int kChunk = kThreads * kItems;

struct SwizzleParams {
  const uint8_t* in;
  int64_t batch, rows, cols;
  uint8_t* out;
  int64_t out_bytes;
  int64_t units_per_cta;
};

// No groups: `batch` blocked matrices back to back.
__global__ void __launch_bounds__(kThreads) swizzle_plain_kernel(SwizzleParams p) {
  const int64_t per_batch = num::blocked_bytes(p.rows, p.cols), nc = num::blocked_cols(p.cols) / 4;
  const int64_t u0 = blockIdx.x * p.units_per_cta;
  const int64_t u1 = min(ceil_units(p.out_bytes), u0 + p.units_per_cta);
  for (int64_t u = u0 + threadIdx.x; u < u1; u += kThreads) {
    const int64_t off = u * kUnitBytes, b = off / per_batch;
    const num::RowCol first = num::blocked_position(off - b * per_batch, nc);
    const uint8_t* matrix = p.in + b * p.rows * p.cols;
    store_unit(p.out, p.out_bytes, off, [&](int k) {
      const UnitCell x = unit_cell(first, k);
      return x.r < p.rows && x.c < p.cols ? matrix[x.r * p.cols + x.c] : uint8_t{0};
    });
  }
}

// Groups along M (ends in rows, each group a blocked matrix starting on a 128-row tile of a
// Cp-wide buffer) or along K (ends in columns, each group an Rp x Q_g matrix after the previous).
template <bool AlongM>
__global__ void __launch_bounds__(kThreads) swizzle_grouped_kernel(SwizzleParams p, TokenGroups groups) {
  __shared__ kernels::groups::GroupChunkStorage<kChunk> s;
  const int64_t Rp = num::blocked_rows(p.rows), Cp = num::blocked_cols(p.cols);
  const int64_t bytes_per_pos = AlongM ? Cp : Rp;  // a padded row (along M) or column (along K)
  const int64_t u0 = blockIdx.x * p.units_per_cta;
  const int64_t u1 = min(ceil_units(p.out_bytes), u0 + p.units_per_cta);
  auto body = [&](const kernels::groups::GroupChunk<kChunk>& c) {
    const int64_t lo = max(u0, c.chunk_padded_begin() * bytes_per_pos / kUnitBytes);
    const int64_t hi = min(u1, c.chunk_padded_end() * bytes_per_pos / kUnitBytes);
    for (int64_t u = lo + threadIdx.x; u < hi; u += kThreads) {
      const int64_t off = u * kUnitBytes;
      const int j = c.find_by_padded_end(off / bytes_per_pos);
      const int64_t begin = c.begin_of(j), size = c.end_of(j) - begin, pbegin = c.padded_begin_of(j);
      const int64_t nc = AlongM ? Cp / 4 : (c.padded_end_of(j) - pbegin) / 4;
      const num::RowCol first = num::blocked_position(off - pbegin * bytes_per_pos, nc);
      store_unit(p.out, p.out_bytes, off, [&](int k) {
        const UnitCell x = unit_cell(first, k);
        if (AlongM) return x.r < size && x.c < p.cols ? p.in[(begin + x.r) * p.cols + x.c] : uint8_t{0};
        return x.r < p.rows && x.c < size ? p.in[x.r * p.cols + begin + x.c] : uint8_t{0};
      });
    }
    return c.chunk_padded_end() * bytes_per_pos / kUnitBytes < u1;
  };
  int64_t end = 0, padded_end = 0;
  const int64_t limit = AlongM ? p.rows : p.cols;
  if (AlongM)
    kernels::groups::for_each_group_chunk<kThreads, kItems>(
        groups.ends, groups.count, limit, kernels::groups::ScaleRowsAlongM{}, s, body, &end, &padded_end);
  else
    kernels::groups::for_each_group_chunk<kThreads, kItems>(
        groups.ends, groups.count, limit, kernels::groups::ScaleColsAlongK{}, s, body, &end, &padded_end);
  for (int64_t u = max(u0, padded_end * bytes_per_pos / kUnitBytes) + threadIdx.x; u < u1; u += kThreads)
    store_unit(p.out, p.out_bytes, u * kUnitBytes, [](int) { return uint8_t{0}; });
}

template <class Kernel, class... Args>
Status launch(const char* op, Kernel kernel, SwizzleParams p, void* stream, Args... args) {
  kernels::groups::RangeGrid g;
  const cudaError_t e = kernels::groups::range_grid(reinterpret_cast<const void*>(kernel), kThreads,
                                                    ceil_units(p.out_bytes), kMinUnitsPerCta, &g);
  if (e != cudaSuccess) return cuda_status(op, e);
  p.units_per_cta = g.per_cta;
  kernel<<<g.ctas, kThreads, 0, as_stream(stream)>>>(p, args...);
  return launch_status(op);
}

}  // namespace
}  // namespace mxq::cuda::kernels::scales

namespace mxq::cuda {

using namespace kernels::scales;  // this file's helpers above

Status swizzle(const SwizzleArgs& a) {
  const char* op = "swizzle";
  const int64_t out_bytes = blocked_buffer_bytes(a);
  if (out_bytes == 0) return {};
  const SwizzleParams p{a.in, a.batch, a.rows, a.cols, a.out, out_bytes, 0};
  switch (a.group_axis) {
    case ScaleGroups::along_m: return launch(op, swizzle_grouped_kernel<true>, p, a.stream, a.groups);
    case ScaleGroups::along_k: return launch(op, swizzle_grouped_kernel<false>, p, a.stream, a.groups);
    default: return launch(op, swizzle_plain_kernel, p, a.stream);
  }
}

}  // namespace mxq::cuda
