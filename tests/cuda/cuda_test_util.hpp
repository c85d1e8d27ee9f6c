// Helpers of the GPU tests: skip (exit 77) without a device, device buffers, running cuda ops twice
// over two poison patterns (every output byte written), comparing with the cpu backend byte for
// byte, CUDA graph capture and replay, and the token-group cases the grouped tests share.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <mxq/mxq.hpp>

#include "cuda/quantize_grouped/forced_kernel.hpp"
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

// MXQ_GROUPED_COLWISE=windows or =tiles (the _windows ctests, scripts/gpu.sh): the test program
// forces that grouped colwise kernel wherever a case can take either (the library reads no
// environment; the test sets its internal hook).
inline const bool kGroupedColwiseForced = [] {
  namespace grouped = mxq::cuda::kernels::quantize_grouped;
  const char* e = std::getenv("MXQ_GROUPED_COLWISE");
  if (e == nullptr) return false;
  if (std::strcmp(e, "windows") == 0) grouped::force_colwise_kernel(grouped::ColwiseKernel::windows);
  if (std::strcmp(e, "tiles") == 0) grouped::force_colwise_kernel(grouped::ColwiseKernel::tiles);
  return true;
}();

// MXQ_GROUPED_ROWWISE=tiles (the _group_tiles ctests): grouped rowwise alone on the group tiles
// wherever the tuning would take tiles of input rows.
inline const bool kGroupedRowwiseForced = [] {
  namespace grouped = mxq::cuda::kernels::quantize_grouped;
  const char* e = std::getenv("MXQ_GROUPED_ROWWISE");
  if (e == nullptr || std::strcmp(e, "tiles") != 0) return false;
  grouped::force_rowwise_kernel(grouped::RowwiseKernel::group_tiles);
  return true;
}();

// MXQ_TEST_QUICK=1 (compute-sanitizer runs) keeps only small shapes.
inline bool quick_mode() {
  const char* e = std::getenv("MXQ_TEST_QUICK");
  return e != nullptr && *e != '\0' && *e != '0';
}

#define MXQ_CUDA_CHECK(expr)                                                       \
  do {                                                                             \
    const cudaError_t mxq_e_ = (expr);                                             \
    ASSERT_EQ(mxq_e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(mxq_e_); \
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
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }

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

// A device copy of a host vector (an empty vector gives an empty buffer).
template <class T>
DeviceBuffer device_copy(const std::vector<T>& v) {
  DeviceBuffer d(v.size() * sizeof(T));
  d.upload(v.data(), d.size());
  return d;
}

// The outputs of one quantize call in device memory, each allocated at the size the API reports;
// the optional ones (nvfp4 tensor scales, padded offsets) are handed to the op only when it has them.
struct DeviceOutputs {
  DeviceBuffer row_data, row_scales, col_data, col_scales, s_enc, s_dec, padded_starts, padded_ends;
  explicit DeviceOutputs(const QuantizeSizes& s)
      : row_data(size_t(s.row_data_bytes)),
        row_scales(size_t(s.row_scale_bytes)),
        col_data(size_t(s.col_data_bytes)),
        col_scales(size_t(s.col_scale_bytes)),
        s_enc(size_t(s.tensor_scale_count) * 4),
        s_dec(size_t(s.tensor_scale_count) * 4),
        padded_starts(size_t(s.padded_offset_count) * 4),
        padded_ends(size_t(s.padded_offset_count) * 4) {}
  void fill(uint8_t p) const {
    for (const DeviceBuffer* b :
         {&row_data, &row_scales, &col_data, &col_scales, &s_enc, &s_dec, &padded_starts, &padded_ends}) {
      b->fill(p);
    }
  }
  QuantizeOutputs outputs(Direction d) const {
    QuantizeOutputs o;
    if (has_rowwise(d)) {
      o.row_data = row_data.get();
      o.row_scales = row_scales.get();
    }
    if (has_colwise(d)) {
      o.col_data = col_data.get();
      o.col_scales = col_scales.get();
    }
    if (s_enc.size()) {
      o.s_enc = reinterpret_cast<float*>(s_enc.get());
      o.s_dec = reinterpret_cast<float*>(s_dec.get());
    }
    if (padded_starts.size()) {
      o.padded_starts = reinterpret_cast<int32_t*>(padded_starts.get());
      o.padded_ends = reinterpret_cast<int32_t*>(padded_ends.get());
    }
    return o;
  }
  QuantizeResult download(const QuantizeSizes& s) const {
    QuantizeResult r;
    r.sizes = s;
    r.row_data = row_data.download();
    r.row_scales = row_scales.download();
    r.col_data = col_data.download();
    r.col_scales = col_scales.download();
    r.s_enc = download_as<float>(s_enc);
    r.s_dec = download_as<float>(s_dec);
    r.padded_starts = download_as<int32_t>(padded_starts);
    r.padded_ends = download_as<int32_t>(padded_ends);
    return r;
  }

 private:
  template <class T>
  static std::vector<T> download_as(const DeviceBuffer& b) {
    const std::vector<uint8_t> bytes = b.download();
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!bytes.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
};

// Runs `op` (an mxq call on the cuda backend, returning Status) twice: after poison(kPoisonA), then
// after poison(kPoisonB). EXPECTs success and a clean device sync each time; returns download() of
// both runs, for every_byte_written (a byte that differs was not written) and the comparisons.
template <class Poison, class Op, class Download>
auto run_poisoned_twice(Poison&& poison, Op&& op, Download&& download) -> std::array<decltype(download()), 2> {
  std::array<decltype(download()), 2> r;
  const uint8_t patterns[2] = {kPoisonA, kPoisonB};
  for (int i = 0; i < 2; ++i) {
    poison(patterns[i]);
    const Status st = op();
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    r[i] = download();
  }
  return r;
}

// The cuda quantize `a` (its outputs in `out`, of sizes `s`), run with two poison patterns; EXPECTs
// that every output byte was written and returns the outputs.
inline QuantizeResult quantize_poisoned_twice(const QuantizeArgs& a, const DeviceOutputs& out, const QuantizeSizes& s) {
  const auto r =
      run_poisoned_twice([&](uint8_t p) { out.fill(p); }, [&] { return quantize(a); }, [&] { return out.download(s); });
  expect_every_byte_written(r[0], r[1], "cuda ");
  return r[0];
}

// The cuda dequantize `a` (a.out is out.get()), run with two poison patterns; EXPECTs that every
// output byte was written and returns the output.
inline std::vector<uint8_t> dequantize_poisoned_twice(const DequantizeArgs& a, const DeviceBuffer& out) {
  const auto r = run_poisoned_twice([&](uint8_t p) { out.fill(p); }, [&] { return dequantize(a); },
                                    [&] { return out.download(); });
  EXPECT_TRUE(every_byte_written(r[0], r[1], "cuda dequantize out"));
  return r[0];
}

// Quantizes `h` on the cuda backend (input `offset` bytes into its allocation; nvfp4: `amax` the
// caller-given tensor amax per batch, empty: computed), twice with two poison patterns; EXPECTs
// success and that every output byte was written.
inline QuantizeResult run_cuda_quantize(const HostTensor& h, const QuantizeParams& params, size_t offset = 0,
                                        const std::vector<float>& amax = {}) {
  DeviceTensor in(h, offset);
  const DeviceBuffer amax_dev = device_copy(amax);
  QuantizeArgs a;
  a.input = in.view;
  a.params = params;
  a.backend = Backend::cuda;
  a.tensor_amax = amax.empty() ? nullptr : reinterpret_cast<const float*>(amax_dev.get());
  QuantizeSizes s;
  const Status st = quantize_sizes(a, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  DeviceOutputs out(s);
  a.out = out.outputs(params.direction);
  return quantize_poisoned_twice(a, out, s);
}

// A stream, and the graph of the work captured on it. Each step returns the first CUDA error, for
// MXQ_CUDA_CHECK at the call site; the destructor EXPECTs a clean teardown.
class CapturedGraph {
 public:
  CapturedGraph() { EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess); }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() {
    if (exec_) {
      EXPECT_EQ(cudaGraphExecDestroy(exec_), cudaSuccess);
    }
    if (graph_) {
      EXPECT_EQ(cudaGraphDestroy(graph_), cudaSuccess);
    }
    if (stream_) {
      EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
    }
  }
  cudaStream_t stream() const { return stream_; }
  cudaError_t begin_capture(cudaStreamCaptureMode mode) { return cudaStreamBeginCapture(stream_, mode); }
  // Ends the capture and instantiates the graph.
  cudaError_t end_capture() {
    const cudaError_t e = cudaStreamEndCapture(stream_, &graph_);
    return e != cudaSuccess ? e : cudaGraphInstantiate(&exec_, graph_, 0);
  }
  // Waits for all earlier work of the device, launches the graph and waits for it. The tests'
  // uploads (cudaMemcpy from pageable memory may return before its DMA is done) and poison fills
  // (cudaMemset is asynchronous) go to the legacy default stream, which this non-blocking stream
  // does not wait for: without the device sync a replay could read stale inputs or be overwritten
  // by the poison, as every graph test showed under compute-sanitizer with 8 processes sharing
  // the GPU.
  cudaError_t replay() {
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGraphLaunch(exec_, stream_);
    return e != cudaSuccess ? e : cudaStreamSynchronize(stream_);
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// G cumulative group ends whose sizes are drawn from `sizes` (the edge cases of a test).
inline std::vector<int32_t> ends_of_random_sizes(Rng& rng, int64_t G, const std::vector<int64_t>& sizes) {
  std::vector<int32_t> ends;
  int64_t end = 0;
  for (int64_t g = 0; g < G; ++g) {
    end += sizes[size_t(rng.uniform(0, int64_t(sizes.size()) - 1))];
    ends.push_back(int32_t(end));
  }
  return ends;
}

// Alignments of the token groups of each direction (0: unpadded).
struct Padding {
  int32_t rowwise, colwise;
};

// A cpu quantize request in both directions with token groups `ends`.
inline QuantizeRequest grouped_request(Format f, ScaleRule r, ScaleLayout l, const std::vector<int32_t>& ends,
                                       Padding pad) {
  QuantizeRequest q;
  q.params.format = f;
  q.params.rule = r;
  q.params.layout = l;
  q.params.direction = Direction::both;
  q.ends = ends;
  q.pad_rowwise = pad.rowwise;
  q.pad_colwise = pad.colwise;
  q.backend = Backend::cpu;
  return q;
}

// Group ends that are not monotone, negative or past M (the grouped ops clamp them like the cpu).
inline const std::vector<std::vector<int32_t>> kBadGroupEnds = {
    {40, 10, 500, 3, 200}, {-5, 100, 99, 1 << 30}, {260, 260, 7, -1}, {0x7FFFFFFF, 12}};
// Eight bad ends over M = 1000 rows, for a graph replay.
inline const std::vector<int32_t> kBadGroupEndsOf1000Rows = {900, 10, 1 << 20, 5, 999, 0, 1000, 3};

// Empty groups, no rows, no columns, and rows past the last end: (M, K, ends).
struct EmptyGroupsCase {
  int64_t rows, cols;
  std::vector<int32_t> ends;
};
inline const std::vector<EmptyGroupsCase> kEmptyGroupsCases = {
    {0, 64, {0, 0, 0, 0}},  {300, 96, {0, 0, 0}}, {300, 96, {0, 0, 0, 300}},
    {256, 256, {128, 256}}, {48, 0, {20}},        {16, 0, {6, 10, 15, 16}}};

inline std::string describe(const HostTensor& h, const QuantizeParams& p, size_t offset) {
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "dtype %d shape (%lld,%lld,%lld) strides (%lld,%lld) offset %zu format %d rule %d layout %d direction %d",
      int(h.dtype), (long long)h.batch, (long long)h.rows, (long long)h.cols, (long long)h.rstride(),
      (long long)h.bstride(), offset, int(p.format), int(p.rule), int(p.layout), int(p.direction));
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
    expect_outputs_equal(cpu, run_cuda_quantize(h, p, offset), d);
  }
}

}  // namespace mxq::test
