#include "quantize_runner.hpp"

#include <chrono>

#include "cli_error.hpp"

namespace mxq::cli {

int64_t Quantized::bytes() const {
  return sizes.row_data_bytes + sizes.row_scale_bytes + sizes.col_data_bytes + sizes.col_scale_bytes +
         sizes.tensor_scale_count * static_cast<int64_t>(sizeof(float));
}

Quantized quantize_on(Backend backend, const QuantizeJob& job) {
  Quantized q;
  quantize_into(backend, job, q);
  return q;
}

QuantizeArgs prepare_into(Backend backend, const QuantizeJob& job, Quantized& q) {
  QuantizeArgs args;
  args.input = job.input;
  args.params = job.params;
  args.groups = job.groups;
  args.tensor_amax = job.tensor_amax;
  args.backend = backend;

  q.sizes = QuantizeSizes();
  check(quantize_sizes(args, &q.sizes), "quantize_sizes");
  const QuantizeSizes& s = q.sizes;
  const bool row = has_rowwise(job.params.direction), col = has_colwise(job.params.direction);
  if (row) {
    q.row_data.resize(backend, s.row_data_bytes);
    q.row_scales.resize(backend, s.row_scale_bytes);
    args.out.row_data = q.row_data.data();
    args.out.row_scales = q.row_scales.as<uint8_t>();
  }
  if (col) {
    q.col_data.resize(backend, s.col_data_bytes);
    q.col_scales.resize(backend, s.col_scale_bytes);
    args.out.col_data = q.col_data.data();
    args.out.col_scales = q.col_scales.as<uint8_t>();
  }
  if (s.tensor_scale_count > 0) {
    q.s_enc.resize(backend, s.tensor_scale_count * sizeof(float));
    q.s_dec.resize(backend, s.tensor_scale_count * sizeof(float));
    args.out.s_enc = q.s_enc.as<float>();
    args.out.s_dec = q.s_dec.as<float>();
  }
  return args;
}

void quantize_into(Backend backend, const QuantizeJob& job, Quantized& q) {
  const QuantizeArgs args = prepare_into(backend, job, q);
  synchronize(backend);
  const auto start = std::chrono::steady_clock::now();
  check(quantize(args), "quantize");
  synchronize(backend);
  q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<float> dequantize_on(Backend backend, const QuantizeJob& job, const Quantized& q, Direction direction) {
  DequantizeArgs args;
  args.params = job.params;
  args.params.direction = direction;
  args.batch = job.input.batch;
  args.rows = job.input.rows;
  args.cols = job.input.cols;
  args.groups = job.groups;
  const bool row = direction == Direction::rowwise;
  args.data = row ? q.row_data.data() : q.col_data.data();
  args.scales = static_cast<const uint8_t*>(row ? q.row_scales.data() : q.col_scales.data());
  args.s_dec = static_cast<const float*>(q.s_dec.data());
  args.out_dtype = DType::fp32;
  args.backend = backend;

  int64_t elements = 0;
  check(dequantize_size(args, &elements), "dequantize_size");
  BackendBuffer out(backend, elements * sizeof(float));
  args.out = out.data();
  check(dequantize(args), "dequantize");
  return out.download_all<float>();
}

}  // namespace mxq::cli
