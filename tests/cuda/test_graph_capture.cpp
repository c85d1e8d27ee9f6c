// quantize and dequantize are captured in a CUDA graph (global capture mode: no sync, no
// allocation inside) and replayed with new input data each time; every replay's outputs are
// compared with the cpu reference.
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.hpp"

namespace mxq::test {
namespace {

TEST(CudaGraph, QuantizeAndDequantizeReplayWithFreshInputs) {
  MXQ_FRESH_RNG(rng);
  constexpr int64_t B = 2, M = 257, K = 384;
  cudaStream_t stream;
  MXQ_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  HostTensor h = normal_tensor(rng, DType::bf16, B, M, K);
  DeviceTensor in(h);

  QuantizeArgs q;
  q.input = in.view;
  q.params.direction = Direction::both;
  q.params.layout = ScaleLayout::blocked;
  q.backend = Backend::cuda;
  q.stream = stream;
  QuantizeSizes s;
  ASSERT_TRUE(quantize_sizes(q, &s).ok());
  DeviceOutputs out(s);
  q.out = out.outputs(Direction::both);

  DequantizeArgs d;
  d.params = q.params;
  d.params.direction = Direction::colwise;
  d.batch = B;
  d.rows = M;
  d.cols = K;
  d.data = out.col_data.get();
  d.scales = out.col_scales.get();
  d.out_dtype = DType::fp32;
  d.backend = Backend::cuda;
  d.stream = stream;
  int64_t n = 0;
  ASSERT_TRUE(dequantize_size(d, &n).ok());
  DeviceBuffer deq(size_t(n * 4));
  d.out = deq.get();

  cudaGraph_t graph;
  MXQ_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status qs = quantize(q);
  const Status ds = dequantize(d);
  MXQ_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  ASSERT_TRUE(qs.ok()) << qs.message();
  ASSERT_TRUE(ds.ok()) << ds.message();
  cudaGraphExec_t exec;
  MXQ_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  for (int replay = 0; replay < 3; ++replay) {
    SCOPED_TRACE(::testing::Message() << "replay " << replay);
    h = normal_tensor(rng, DType::bf16, B, M, K);
    in.buf.upload(h.bytes.data(), h.bytes.size());
    out.fill(uint8_t(kPoisonA + replay));
    deq.fill(kPoisonB);
    MXQ_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    MXQ_CUDA_CHECK(cudaStreamSynchronize(stream));

    QuantizeRequest req;
    req.params = q.params;
    const QuantizeResult cpu = run_quantize(h, req);
    const QuantizeResult gpu = out.download(s);
    EXPECT_TRUE(bytes_equal(cpu.row_data, gpu.row_data, "row_data"));
    EXPECT_TRUE(bytes_equal(cpu.row_scales, gpu.row_scales, "row_scales"));
    EXPECT_TRUE(bytes_equal(cpu.col_data, gpu.col_data, "col_data"));
    EXPECT_TRUE(bytes_equal(cpu.col_scales, gpu.col_scales, "col_scales"));
    const std::vector<float> ref = run_dequantize(req, Direction::colwise, B, M, K, cpu, DType::fp32);
    std::vector<uint8_t> ref_bytes(ref.size() * 4);
    std::memcpy(ref_bytes.data(), ref.data(), ref_bytes.size());
    EXPECT_TRUE(bytes_equal(ref_bytes, deq.download(), "dequantized"));
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
}  // namespace mxq::test
