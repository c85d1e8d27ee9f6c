// Helpers of the GPU tests: skip (exit 77) without a device, device buffers, and running the
// cuda backend on host tensors with poisoned outputs, to compare byte for byte with the cpu backend.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <mxq/mxq.hpp>

#include "support/quantize_runner.hpp"
#include "support/test_util.hpp"

namespace mxq::test {

// Runs before main (and so before gtest): a test program without a device exits 77 (ctest: skipped).
inline const bool kCudaDevicePresent = [] {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "no CUDA device: GPU tests skipped\n");
    std::exit(77);
  }
  return true;
}();

// MXQ_TEST_QUICK=1 (compute-sanitizer runs) keeps only small shapes.
inline bool quick_mode() {
  const char* e = std::getenv("MXQ_TEST_QUICK");
  return e != nullptr && *e != '\0' && *e != '0';
}

#define MXQ_CUDA_CHECK(expr)                                                                   \
  do {                                                                                         \
    const cudaError_t mxq_e_ = (expr);                                                         \
    ASSERT_EQ(mxq_e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(mxq_e_);             \
  } while (0)

// Device memory owned by a test (the ops themselves never allocate).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0 && cudaMalloc(&ptr_, bytes) != cudaSuccess) {
      ptr_ = nullptr;
      ADD_FAILURE() << "cudaMalloc of " << bytes << " bytes failed";
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() { if (ptr_) cudaFree(ptr_); }

  uint8_t* get() const { return static_cast<uint8_t*>(ptr_); }
  size_t size() const { return bytes_; }
  void upload(const void* src, size_t n, size_t offset = 0) const {
    if (n) {
      EXPECT_EQ(cudaMemcpy(get() + offset, src, n, cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  std::vector<uint8_t> download(size_t offset = 0, size_t n = SIZE_MAX) const {
    if (n == SIZE_MAX) n = bytes_ - offset;
    std::vector<uint8_t> v(n);
    if (n) {
      EXPECT_EQ(cudaMemcpy(v.data(), get() + offset, n, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return v;
  }
  void fill(uint8_t pattern) const {
    if (bytes_) {
      EXPECT_EQ(cudaMemset(ptr_, pattern, bytes_), cudaSuccess);
    }
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A host tensor copied to the device, `offset` bytes past a 256-byte aligned allocation (offset 2
// makes every row and the base pointer unaligned).
struct DeviceTensor {
  DeviceBuffer buf;
  TensorView view;
  DeviceTensor(const HostTensor& h, size_t offset = 0) : buf(h.bytes.size() + offset) {
    buf.upload(h.bytes.data(), h.bytes.size(), offset);
    view = h.view();
    view.data = buf.get() + offset;
  }
};

// The outputs of one quantize call in device memory.
struct DeviceOutputs {
  DeviceBuffer row_data, row_scales, col_data, col_scales;
  explicit DeviceOutputs(const QuantizeSizes& s)
      : row_data(size_t(s.row_data_bytes)), row_scales(size_t(s.row_scale_bytes)),
        col_data(size_t(s.col_data_bytes)), col_scales(size_t(s.col_scale_bytes)) {}
  void fill(uint8_t p) const { row_data.fill(p); row_scales.fill(p); col_data.fill(p); col_scales.fill(p); }
  QuantizeOutputs outputs(Direction d) const {
    QuantizeOutputs o;
    if (has_rowwise(d)) { o.row_data = row_data.get(); o.row_scales = row_scales.get(); }
    if (has_colwise(d)) { o.col_data = col_data.get(); o.col_scales = col_scales.get(); }
    return o;
  }
  QuantizeResult download(const QuantizeSizes& s) const {
    QuantizeResult r;
    r.sizes = s;
    r.row_data = row_data.download();
    r.row_scales = row_scales.download();
    r.col_data = col_data.download();
    r.col_scales = col_scales.download();
    return r;
  }
};

// Quantizes `h` on the cuda backend (input `offset` bytes into its allocation), twice with two
// poison patterns; EXPECTs success and that every output byte was written.
inline QuantizeResult run_cuda_quantize(const HostTensor& h, const QuantizeParams& params, size_t offset = 0) {
  DeviceTensor in(h, offset);
  QuantizeArgs a;
  a.input = in.view;
  a.params = params;
  a.backend = Backend::cuda;
  QuantizeSizes s;
  const Status st = quantize_sizes(a, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  DeviceOutputs out(s);
  a.out = out.outputs(params.direction);
  QuantizeResult r[2];
  const uint8_t patterns[2] = {kPoisonA, kPoisonB};
  for (int i = 0; i < 2; ++i) {
    out.fill(patterns[i]);
    const Status q = quantize(a);
    EXPECT_TRUE(q.ok()) << q.message();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    r[i] = out.download(s);
  }
  EXPECT_TRUE(every_byte_written(r[0].row_data, r[1].row_data, "cuda row_data"));
  EXPECT_TRUE(every_byte_written(r[0].row_scales, r[1].row_scales, "cuda row_scales"));
  EXPECT_TRUE(every_byte_written(r[0].col_data, r[1].col_data, "cuda col_data"));
  EXPECT_TRUE(every_byte_written(r[0].col_scales, r[1].col_scales, "cuda col_scales"));
  return r[0];
}

inline std::string describe(const HostTensor& h, const QuantizeParams& p, size_t offset) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "dtype %d shape (%lld,%lld,%lld) strides (%lld,%lld) offset %zu format %d rule %d layout %d direction %d",
                int(h.dtype), (long long)h.batch, (long long)h.rows, (long long)h.cols,
                (long long)h.rstride(), (long long)h.bstride(), offset, int(p.format), int(p.rule),
                int(p.layout), int(p.direction));
  return buf;
}

// Quantizes `h` with direction both on the cpu backend, then rowwise, colwise and both on the cuda
// backend, and EXPECTs every output byte equal.
inline void expect_cuda_matches_cpu(const HostTensor& h, QuantizeParams p, size_t offset = 0) {
  SCOPED_TRACE(describe(h, p, offset));
  QuantizeRequest req;
  req.params = p;
  req.params.direction = Direction::both;
  req.backend = Backend::cpu;
  const QuantizeResult cpu = run_quantize(h, req);
  for (Direction d : {Direction::rowwise, Direction::colwise, Direction::both}) {
    p.direction = d;
    SCOPED_TRACE(::testing::Message() << "cuda direction " << int(d));
    const QuantizeResult gpu = run_cuda_quantize(h, p, offset);
    if (has_rowwise(d)) {
      EXPECT_TRUE(bytes_equal(cpu.row_data, gpu.row_data, "row_data"));
      EXPECT_TRUE(bytes_equal(cpu.row_scales, gpu.row_scales, "row_scales"));
    }
    if (has_colwise(d)) {
      EXPECT_TRUE(bytes_equal(cpu.col_data, gpu.col_data, "col_data"));
      EXPECT_TRUE(bytes_equal(cpu.col_scales, gpu.col_scales, "col_scales"));
    }
  }
}

}  // namespace mxq::test
