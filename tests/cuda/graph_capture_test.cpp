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
  CapturedGraph graph;
  HostTensor h = normal_tensor(rng, DType::bf16, B, M, K);
  DeviceTensor in(h);

  QuantizeArgs q;
  q.input = in.view;
  q.params.direction = Direction::both;
  q.params.layout = ScaleLayout::blocked;
  q.backend = Backend::cuda;
  q.stream = graph.stream();
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
  d.stream = graph.stream();
  int64_t n = 0;
  ASSERT_TRUE(dequantize_size(d, &n).ok());
  DeviceBuffer deq(size_t(n * 4));
  d.out = deq.get();

  MXQ_CUDA_CHECK(graph.begin_capture(cudaStreamCaptureModeGlobal));
  const Status qs = quantize(q);
  const Status ds = dequantize(d);
  MXQ_CUDA_CHECK(graph.end_capture());
  ASSERT_TRUE(qs.ok()) << qs.message();
  ASSERT_TRUE(ds.ok()) << ds.message();

  for (int replay = 0; replay < 3; ++replay) {
    SCOPED_TRACE(::testing::Message() << "replay " << replay);
    h = normal_tensor(rng, DType::bf16, B, M, K);
    in.buf.upload(h.bytes.data(), h.bytes.size());
    out.fill(uint8_t(kPoisonA + replay));
    deq.fill(kPoisonB);
    MXQ_CUDA_CHECK(graph.replay());

    QuantizeRequest req;
    req.params = q.params;
    const QuantizeResult cpu = run_quantize(h, req);
    expect_outputs_equal(cpu, out.download(s), Direction::both);
    const std::vector<float> ref = run_dequantize(req, Direction::colwise, B, M, K, cpu, DType::fp32);
    EXPECT_TRUE(bytes_equal(as_bytes(ref), deq.download(), "dequantized"));
  }
}

}  // namespace
}  // namespace mxq::test
