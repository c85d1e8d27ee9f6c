// Tensor amax (max |x| per batch, NaN wins) and the NVFP4 tensor scales derived from it.
//
// The amax needs every element before any block of the batch can be scaled, so with the amax
// computed here the input is read twice: once by the reduction below, once by the tile kernel.
// The reduction writes fp32 bit patterns with atomicMax on uint32 (non-negative floats order like
// their bits, NaN above Inf) into the s_enc output slots; a one-thread-per-batch kernel then turns
// each slot into s_enc / s_dec (it reads its slot before overwriting it), and the tile kernel, next
// on the same stream, reads both. docs/performance.md measures what the extra read costs.
#include <algorithm>

#include "backend.hpp"
#include "cuda/abs_max.cuh"
#include "cuda/common.cuh"
#include "cuda/quantize/tile_io.cuh"
#include "cuda/quantize/tensor_scale.hpp"
#include "cuda/quantize/tuning.hpp"

namespace mxq::cuda::kernels::quantize {
namespace {

struct AmaxProblem {
  const void* in = nullptr;
  int64_t rows = 0, cols = 0, row_stride = 0, batch_stride = 0;  // elements
  bool elem_aligned = true;
  uint32_t* out = nullptr;  // [batch], cleared
};

// Contiguous batches starting 16-byte aligned: 16-byte loads over the batch as one run, from its
// end to its start, so that the batch's first rows, which the tile kernel after it reads first,
// are the ones most likely still in L2.
template <class In>
__global__ void __launch_bounds__(kAmaxThreads) amax_contiguous_kernel(const AmaxProblem p) {
  using Raw = typename In::Raw;
  constexpr int kVec = 16 / static_cast<int>(sizeof(Raw));
  const Raw* base = static_cast<const Raw*>(p.in) + blockIdx.y * p.batch_stride;
  const uint4* v = reinterpret_cast<const uint4*>(base);
  const int64_t n = p.rows * p.cols, nvec = n / kVec;
  const auto load_from_end = [&](int64_t i) { return __ldg(v + (nvec - 1 - i)); };
  const int64_t stride = int64_t{gridDim.x} * kAmaxThreads;
  int64_t i = int64_t{blockIdx.x} * kAmaxThreads + threadIdx.x;
  uint32_t m = 0;
  for (; i + (kAmaxUnroll - 1) * stride < nvec; i += kAmaxUnroll * stride) {
    uint4 r[kAmaxUnroll];
#pragma unroll
    for (int u = 0; u < kAmaxUnroll; ++u) r[u] = load_from_end(i + u * stride);
#pragma unroll
    for (int u = 0; u < kAmaxUnroll; ++u) m = max(m, abs_max_bits<In>(r[u]));
  }
  for (; i < nvec; i += stride) m = max(m, abs_max_bits<In>(load_from_end(i)));
  for (int64_t j = nvec * kVec + int64_t{blockIdx.x} * kAmaxThreads + threadIdx.x; j < n; j += stride) {
    m = max(m, num::abs_bits(In::to_float(base[j])));
  }
  cta_commit_max<kAmaxThreads>(m, p.out + blockIdx.y);
}

// Any strides and alignment: CTAs take rows, threads walk along them.
template <class In>
__global__ void __launch_bounds__(kAmaxThreads) amax_rows_kernel(const AmaxProblem p) {
  using Raw = typename In::Raw;
  const Raw* base = static_cast<const Raw*>(p.in) + blockIdx.y * p.batch_stride;
  uint32_t m = 0;
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    for (int64_t c = threadIdx.x; c < p.cols; c += kAmaxThreads) {
      m = max(
          m, num::abs_bits(In::to_float(kernels::quantize::load_element(base + r * p.row_stride + c, p.elem_aligned))));
    }
  }
  cta_commit_max<kAmaxThreads>(m, p.out + blockIdx.y);
}

__global__ void tensor_scale_kernel(const float* amax, float* s_enc, float* s_dec, float* amax_out, int64_t batch) {
  for (int64_t b = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; b < batch; b += int64_t{gridDim.x} * blockDim.x) {
    const num::Nvfp4TensorScale ts = num::nvfp4_tensor_scale(amax[b]);  // amax may be s_enc[b] itself
    if (amax_out != nullptr) amax_out[b] = amax[b];
    s_enc[b] = ts.s_enc;
    s_dec[b] = ts.s_dec;
  }
}

int sm_count() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    cudaGetLastError();
    return 132;
  }
  return sms;
}

}  // namespace

Status tensor_amax_bits(const TensorView& in, uint32_t* bits, cudaStream_t stream) {
  if (in.batch == 0) return {};
  if (in.batch > 65535) return Status::error(Code::unsupported, "tensor_amax: more than 65535 batches");
  Status st =
      cuda_status("tensor_amax", cudaMemsetAsync(bits, 0, static_cast<size_t>(in.batch) * sizeof(uint32_t), stream));
  if (!st.ok() || in.rows == 0 || in.cols == 0) return st;
  const int64_t esize = dtype_size(in.dtype);
  AmaxProblem p;
  p.in = in.data;
  p.rows = in.rows;
  p.cols = in.cols;
  p.row_stride = in.rstride();
  p.batch_stride = in.bstride();
  p.elem_aligned = aligned_to(in.data, static_cast<uintptr_t>(esize));
  p.out = bits;
  const bool contiguous = (p.row_stride == p.cols || p.rows == 1) && aligned_to(in.data, 16) &&
                          (in.batch == 1 || (p.batch_stride * esize) % 16 == 0);
  const int64_t ctas_per_batch = std::max<int64_t>(1, int64_t{kAmaxCtasPerSm} * sm_count() / in.batch);
  const int64_t work =
      contiguous ? num::ceil_div(p.rows * p.cols * esize, int64_t{16} * kAmaxThreads * kAmaxUnroll) : p.rows;
  const dim3 grid(static_cast<unsigned>(std::clamp<int64_t>(work, 1, ctas_per_batch)), static_cast<unsigned>(in.batch));
  dispatch_input(in.dtype, [&](auto t) {
    using In = decltype(t);
    if (contiguous) {
      amax_contiguous_kernel<In><<<grid, kAmaxThreads, 0, stream>>>(p);
    } else {
      amax_rows_kernel<In><<<grid, kAmaxThreads, 0, stream>>>(p);
    }
  });
  return launch_status("tensor_amax");
}

Status write_nvfp4_tensor_scales(const TensorView& in, const float* given, float* s_enc, float* s_dec, float* amax_out,
                                 cudaStream_t stream) {
  if (in.batch == 0) return {};
  const float* amax = given;
  if (amax == nullptr) {
    const Status st = tensor_amax_bits(in, reinterpret_cast<uint32_t*>(s_enc), stream);
    if (!st.ok()) return st;
    amax = s_enc;
  }
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(num::ceil_div(in.batch, kAmaxThreads), 1024));
  tensor_scale_kernel<<<blocks, kAmaxThreads, 0, stream>>>(amax, s_enc, s_dec, amax_out, in.batch);
  return launch_status("quantize (nvfp4 tensor scales)");
}

}  // namespace mxq::cuda::kernels::quantize

namespace mxq::cuda {

Status tensor_amax(const TensorView& input, float* out, void* stream) {
  return kernels::quantize::tensor_amax_bits(input, reinterpret_cast<uint32_t*>(out), as_stream(stream));
}

}  // namespace mxq::cuda
