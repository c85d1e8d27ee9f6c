// Runs mxq::quantize / mxq::dequantize on host buffers for the tests: every output is allocated at
// the size the API reports, poisoned, and the op is run twice (two poison patterns) to prove that
// every byte was written.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <mxq/mxq.hpp>

#include "support/test_util.hpp"

namespace mxq::test {

struct QuantizeRequest {
  QuantizeParams params;
  std::vector<int32_t> ends;  // token-group ends; empty: no groups
  int32_t pad_rowwise = 0;
  int32_t pad_colwise = 0;
  std::vector<float> tensor_amax;  // nvfp4: caller-given amax per batch; empty: computed
  Backend backend = Backend::cpu;
};

struct QuantizeResult {
  QuantizeSizes sizes;
  std::vector<uint8_t> row_data, row_scales, col_data, col_scales;
  std::vector<float> s_enc, s_dec;
  std::vector<int32_t> padded_starts, padded_ends;
};

// EXPECTs that every output byte of a quantize call was written: `a` and `b` are the outputs of
// two runs over buffers poisoned with kPoisonA and kPoisonB. Failures name the output after `label_prefix`.
void expect_every_byte_written(const QuantizeResult& a, const QuantizeResult& b, const std::string& label_prefix);

// EXPECTs success and that every output byte was written.
QuantizeResult run_quantize(const HostTensor& input, const QuantizeRequest& req);

// Dequantizes one direction of `q` (req.params.direction is replaced by `dir`) into fp32 values of
// the output dtype (the op writes out_dtype; the values are widened back exactly).
std::vector<float> run_dequantize(const QuantizeRequest& req, Direction dir, int64_t batch, int64_t rows, int64_t cols,
                                  const QuantizeResult& q, DType out_dtype = DType::fp32);

// EXPECTs the outputs of direction `d` byte for byte equal, and the tensor scales and padded
// offsets (empty on both sides where the call has none).
inline void expect_outputs_equal(const QuantizeResult& want, const QuantizeResult& got, Direction d) {
  if (has_rowwise(d)) {
    EXPECT_TRUE(bytes_equal(want.row_data, got.row_data, "row_data"));
    EXPECT_TRUE(bytes_equal(want.row_scales, got.row_scales, "row_scales"));
  }
  if (has_colwise(d)) {
    EXPECT_TRUE(bytes_equal(want.col_data, got.col_data, "col_data"));
    EXPECT_TRUE(bytes_equal(want.col_scales, got.col_scales, "col_scales"));
  }
  EXPECT_TRUE(bytes_equal(as_bytes(want.s_enc), as_bytes(got.s_enc), "s_enc"));
  EXPECT_TRUE(bytes_equal(as_bytes(want.s_dec), as_bytes(got.s_dec), "s_dec"));
  EXPECT_TRUE(bytes_equal(as_bytes(want.padded_starts), as_bytes(got.padded_starts), "padded_starts"));
  EXPECT_TRUE(bytes_equal(as_bytes(want.padded_ends), as_bytes(got.padded_ends), "padded_ends"));
}

}  // namespace mxq::test
