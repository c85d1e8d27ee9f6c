// Zero stores for the output bytes that belong to no token group (padding past the last group,
// rows past the last end, unused per-group scale columns), spread over the CTAs whose row tile lies
// past the last group, so that a grouped quantize writes every byte of its outputs in one kernel.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace mxq::cuda::qgroup {

// The CTA zeroes n bytes at p: bytes up to 16-byte alignment, then 16-byte stores.
__device__ __forceinline__ void zero_span(uint8_t* p, int64_t n) {
  if (n <= 0) return;
  const int64_t head = min(n, static_cast<int64_t>((16 - reinterpret_cast<uintptr_t>(p) % 16) % 16));
  const int64_t vecs = (n - head) / 16;
  for (int64_t i = threadIdx.x; i < head; i += blockDim.x) p[i] = 0;
  uint4* v = reinterpret_cast<uint4*>(p + head);
  for (int64_t i = threadIdx.x; i < vecs; i += blockDim.x) v[i] = make_uint4(0, 0, 0, 0);
  for (int64_t i = head + vecs * 16 + threadIdx.x; i < n; i += blockDim.x) p[i] = 0;
}

constexpr int64_t kZeroChunk = 4096;  // bytes per CTA step: one 16-byte store per thread

// Bytes [begin, end) of base, in 4 KiB chunks dealt round robin to CTAs cta of ctas.
__device__ __forceinline__ void zero_flat(uint8_t* base, int64_t begin, int64_t end, int64_t cta, int64_t ctas) {
  for (int64_t at = begin + cta * kZeroChunk; at < end; at += ctas * kZeroChunk) {
    zero_span(base + at, min(kZeroChunk, end - at));
  }
}

// Bytes [begin, end) of each row r in [r0, r1) of a pitched buffer, the column range dealt in
// 4 KiB chunks to CTAs part of parts (the rows are the CTA's own).
__device__ __forceinline__ void zero_columns(uint8_t* base, int64_t pitch, int64_t r0, int64_t r1, int64_t begin,
                                             int64_t end, int64_t part, int64_t parts) {
  for (int64_t at = begin + part * kZeroChunk; at < end; at += parts * kZeroChunk) {
    for (int64_t r = r0; r < r1; ++r) zero_span(base + r * pitch + at, min(kZeroChunk, end - at));
  }
}

}  // namespace mxq::cuda::qgroup
