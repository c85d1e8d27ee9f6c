// Dequantize: x = decode(q) * 2^(b - 127) (MX) or decode(q) * sf * s_dec (nvfp4) in fp32
// (num::dequantize_element), rounded to the output dtype. 4-bit codes are read from their nibble. One CTA of 32 x 8 threads converts a 32 x 32 tile of the (rows, cols) output;
// colwise data is (cols, rows), so its tile goes through shared memory to keep both the code
// reads and the output writes coalesced.
#pragma once
#include <cstdint>

#include <mxq/numerics.hpp>

namespace mxq::cuda::dequant {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;

struct Problem {
  const uint8_t* data = nullptr;
  const uint8_t* scales = nullptr;
  void* out = nullptr;
  int64_t M = 0, K = 0;            // output (rows, cols) per batch
  int64_t scale_cols = 0;          // logical scale columns (rowwise ceil(K/b), colwise ceil(M/b))
  int64_t scale_batch = 0;         // bytes of one batch's scales
  bool blocked = true;
  int64_t tiles_m = 0, tiles_k = 0;
  const float* s_dec = nullptr;    // nvfp4: [batch]
};

struct Bf16Out {
  static __device__ __forceinline__ void store(void* out, int64_t i, float x) {
    static_cast<uint16_t*>(out)[i] = num::float_to_bf16_rne(x);
  }
};
struct Fp16Out {
  static __device__ __forceinline__ void store(void* out, int64_t i, float x) {
    static_cast<uint16_t*>(out)[i] = num::float_to_fp16_rne(x);
  }
};
struct Fp32Out {
  static __device__ __forceinline__ void store(void* out, int64_t i, float x) {
    static_cast<float*>(out)[i] = x;
  }
};

__device__ __forceinline__ int64_t scale_offset(const Problem& p, int64_t r, int64_t c) {
  return p.blocked ? num::blocked_offset(r, c, num::blocked_cols(p.scale_cols) / 4) : r * p.scale_cols + c;
}

// Code number i of a batch's data (element 2i of a 4-bit pair in the low nibble).
template <class Fmt>
__device__ __forceinline__ uint32_t code_at(const uint8_t* data, int64_t i) {
  if constexpr (Fmt::elem_bits == 8) {
    return data[i];
  } else {
    return (data[i >> 1] >> ((i & 1) * 4)) & 0xFu;
  }
}

template <class Fmt, class Out, bool COLWISE>
__global__ void __launch_bounds__(kTile * kRowsPerPass) dequantize_tile_kernel(const Problem p) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t t = blockIdx.x;
  const int64_t k0 = (t % p.tiles_k) * kTile;
  const int64_t m0 = ((t / p.tiles_k) % p.tiles_m) * kTile;
  const int64_t b = t / (p.tiles_k * p.tiles_m);
  const uint8_t* data = p.data + b * p.M * p.K * Fmt::elem_bits / 8;
  const float s_dec = Fmt::nv ? p.s_dec[b] : 1.0f;
  const uint8_t* scales = p.scales + b * p.scale_batch;
  const int64_t out_base = b * p.M * p.K;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if constexpr (!COLWISE) {
    for (int i = ty; i < kTile; i += kRowsPerPass) {
      const int64_t m = m0 + i, k = k0 + tx;
      if (m < p.M && k < p.K) {
        const float x = num::dequantize_element<Fmt>(code_at<Fmt>(data, m * p.K + k), scales[scale_offset(p, m, k / Fmt::block)], s_dec);
        Out::store(p.out, out_base + m * p.K + k, x);
      }
    }
  } else {
    for (int i = ty; i < kTile; i += kRowsPerPass) {  // read along m (contiguous in the codes)
      const int64_t k = k0 + i, m = m0 + tx;
      if (m < p.M && k < p.K) {
        tile[i][tx] = num::dequantize_element<Fmt>(code_at<Fmt>(data, k * p.M + m), scales[scale_offset(p, k, m / Fmt::block)], s_dec);
      }
    }
    __syncthreads();
    for (int i = ty; i < kTile; i += kRowsPerPass) {  // write along k (contiguous in the output)
      const int64_t m = m0 + i, k = k0 + tx;
      if (m < p.M && k < p.K) Out::store(p.out, out_base + m * p.K + k, tile[tx][i]);
    }
  }
}

}  // namespace mxq::cuda::dequant
