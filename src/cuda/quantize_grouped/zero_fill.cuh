// Zero stores for the output bytes that belong to no token group (padding past the last group,
// rows past the last end, unused per-group scale columns), spread over the CTAs whose row tile lies
// past the last group, so that a grouped quantize writes every byte of its outputs in one kernel.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace mxq::cuda::kernels::quantize_grouped {

// `lanes` threads (lane = 0 .. lanes - 1) zero n bytes at p: bytes up to 16-byte alignment, then
// 16-byte stores, then the last bytes.
__device__ __forceinline__ void zero_span(uint8_t* p, int64_t n, int lane, int lanes) {
  if (n <= 0) return;
  const int64_t head = min(n, static_cast<int64_t>((16 - reinterpret_cast<uintptr_t>(p) % 16) % 16));
  const int64_t vecs = (n - head) / 16;
  if (lane < head) p[lane] = 0;
  uint4* v = reinterpret_cast<uint4*>(p + head);
  for (int64_t i = lane; i < vecs; i += lanes) v[i] = make_uint4(0, 0, 0, 0);
  for (int64_t i = head + vecs * 16 + lane; i < n; i += lanes) p[i] = 0;
}

constexpr int64_t kZeroChunk = 4096;  // bytes per step of a CTA: one 16-byte store per thread

// Bytes [begin, end) of base, in 4 KiB chunks dealt round robin to CTAs cta of ctas.
__device__ __forceinline__ void zero_flat(uint8_t* base, int64_t begin, int64_t end, int64_t cta, int64_t ctas) {
  for (int64_t at = begin + cta * kZeroChunk; at < end; at += ctas * kZeroChunk) {
    zero_span(base + at, min(kZeroChunk, end - at), threadIdx.x, blockDim.x);
  }
}

// Bytes [begin, end) of each row r in [r0, r1) of a pitched buffer, as (row, 4 KiB piece) units
// dealt to the warps of CTAs part of parts: narrow spans over many rows (the padding after the
// last group, a few bytes per transposed row) and wide spans over few rows both keep every warp
// busy (a CTA walking the rows one by one made the last CTAs of a kernel a long tail).
__device__ __forceinline__ void zero_columns(uint8_t* base, int64_t pitch, int64_t r0, int64_t r1, int64_t begin,
                                             int64_t end, int64_t part, int64_t parts) {
  if (end <= begin || r1 <= r0) return;
  const int64_t pieces = (end - begin + kZeroChunk - 1) / kZeroChunk;
  const int64_t units = (r1 - r0) * pieces;
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Spans of at most 4 KiB (a group's padding rows in one column tile, the bytes past the last
  // group of a transposed row) are one piece per row: no 64-bit division for them.
  const bool one_piece = pieces == 1;
  for (int64_t u = part * warps + warp; u < units; u += parts * warps) {
    const int64_t r = r0 + (one_piece ? u : u / pieces), at = begin + (one_piece ? 0 : (u % pieces) * kZeroChunk);
    zero_span(base + r * pitch + at, min(kZeroChunk, end - at), lane, 32);
  }
}

}  // namespace mxq::cuda::kernels::quantize_grouped
