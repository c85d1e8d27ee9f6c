// More than 2^31 elements (65600 x 32768 bf16, 4.3 GB): proves 64-bit indexing. The input is
// generated on the device from a fresh seed; rows around the start, the end and element 2^31 are
// copied back and compared with the cpu reference byte for byte, for both directions.
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

__global__ void fill_bf16(uint16_t* x, uint64_t n, uint64_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const uint32_t exponent = 112 + static_cast<uint32_t>((z >> 8) % 31);  // 2^-15 .. 2^15
    x[i] = static_cast<uint16_t>(((z >> 63) << 15) | (exponent << 7) | (z & 0x7F));
  }
}

TEST(CudaQuantize, MoreThan2Pow31Elements) {
  if (quick_mode()) GTEST_SKIP() << "MXQ_TEST_QUICK";
  MXQ_FRESH_RNG(rng);
  constexpr int64_t M = 65600, K = 32768, SR = K / 32, SC = (M + 31) / 32;
  static_assert(M * K > (int64_t{1} << 31), "beyond 32-bit indexing");
  DeviceBuffer input(size_t(M * K * 2));
  fill_bf16<<<4096, 256>>>(reinterpret_cast<uint16_t*>(input.get()), uint64_t(M * K), rng.bits32());
  MXQ_CUDA_CHECK(cudaGetLastError());

  QuantizeArgs a;
  a.input.data = input.get();
  a.input.dtype = DType::bf16;
  a.input.rows = M;
  a.input.cols = K;
  a.params.layout = ScaleLayout::linear;
  a.params.direction = Direction::both;
  a.backend = Backend::cuda;
  QuantizeSizes s;
  ASSERT_TRUE(quantize_sizes(a, &s).ok());
  DeviceOutputs out(s);
  out.fill(kPoisonA);
  a.out = out.outputs(Direction::both);
  const Status st = quantize(a);
  ASSERT_TRUE(st.ok()) << st.message();
  MXQ_CUDA_CHECK(cudaDeviceSynchronize());

  // Row ranges start on 128-row boundaries, so their colwise blocks are the global ones.
  const int64_t ranges[][2] = {{0, 128}, {M - 192, M}};  // the second holds element 2^31 (row 65536)
  for (const auto& range : ranges) {
    const int64_t r0 = range[0], n = range[1] - range[0];
    SCOPED_TRACE(::testing::Message() << "rows " << r0 << ".." << r0 + n);
    HostTensor h(DType::bf16, 1, n, K);
    MXQ_CUDA_CHECK(cudaMemcpy(h.bytes.data(), input.get() + r0 * K * 2, size_t(n * K * 2), cudaMemcpyDeviceToHost));
    QuantizeRequest req;
    req.params = a.params;
    const QuantizeResult cpu = run_quantize(h, req);

    EXPECT_TRUE(bytes_equal(cpu.row_data, out.row_data.download(size_t(r0 * K), size_t(n * K)), "row_data"));
    EXPECT_TRUE(bytes_equal(cpu.row_scales, out.row_scales.download(size_t(r0 * SR), size_t(n * SR)), "row_scales"));
    std::vector<uint8_t> col(size_t(K * n)), col_scales(size_t(K * n / 32));
    MXQ_CUDA_CHECK(cudaMemcpy2D(col.data(), n, out.col_data.get() + r0, M, n, K, cudaMemcpyDeviceToHost));
    MXQ_CUDA_CHECK(
        cudaMemcpy2D(col_scales.data(), n / 32, out.col_scales.get() + r0 / 32, SC, n / 32, K, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(bytes_equal(cpu.col_data, col, "col_data"));
    EXPECT_TRUE(bytes_equal(cpu.col_scales, col_scales, "col_scales"));
  }
}

}  // namespace
}  // namespace mxq::test
