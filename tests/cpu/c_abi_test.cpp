// The C ABI (include/mxq/mxq.h): every call gives the same bytes as the C++ API, errors give the
// mxq::Code value and a per-thread message, and the struct layouts that ctypes mirrors are pinned.
#include <mxq/mxq.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <mxq/mxq.hpp>

#include "support/test_util.hpp"

namespace mxq::test {
namespace {

// LP64 layouts (natural alignment): a change here breaks every ctypes mirror of these structs.
static_assert(sizeof(mxq_tensor_view) == 56 && offsetof(mxq_tensor_view, dtype) == 48, "mxq_tensor_view");
static_assert(sizeof(mxq_token_groups) == 16, "mxq_token_groups");
static_assert(offsetof(mxq_quantize_args, format) == 56 && offsetof(mxq_quantize_args, groups) == 72 &&
                  offsetof(mxq_quantize_args, pad_rowwise) == 88 && offsetof(mxq_quantize_args, tensor_amax) == 96 &&
                  offsetof(mxq_quantize_args, padded_ends) == 160 && offsetof(mxq_quantize_args, backend) == 168 &&
                  offsetof(mxq_quantize_args, stream) == 176 && offsetof(mxq_quantize_args, amax) == 184 &&
                  sizeof(mxq_quantize_args) == 192,
              "mxq_quantize_args");
static_assert(sizeof(struct mxq_quantize_sizes) == 64, "mxq_quantize_sizes");
static_assert(offsetof(mxq_dequantize_args, batch) == 16 && offsetof(mxq_dequantize_args, groups) == 40 &&
                  offsetof(mxq_dequantize_args, data) == 64 && offsetof(mxq_dequantize_args, out_dtype) == 96 &&
                  offsetof(mxq_dequantize_args, stream) == 104 && sizeof(mxq_dequantize_args) == 112,
              "mxq_dequantize_args");
static_assert(offsetof(mxq_pad_args, alignment) == 72 && offsetof(mxq_pad_args, out) == 80 &&
                  offsetof(mxq_pad_args, amax) == 120 && sizeof(mxq_pad_args) == 128,
              "mxq_pad_args");
static_assert(offsetof(mxq_unpad_args, rows) == 80 && offsetof(mxq_unpad_args, amax) == 112 &&
                  sizeof(mxq_unpad_args) == 120,
              "mxq_unpad_args");
static_assert(offsetof(mxq_swizzle_args, group_axis) == 32 && offsetof(mxq_swizzle_args, groups) == 40 &&
                  sizeof(mxq_swizzle_args) == 80,
              "mxq_swizzle_args");
static_assert(sizeof(mxq_swiglu_params) == 16, "mxq_swiglu_params");
static_assert(offsetof(mxq_swiglu_args, swiglu) == 192 && offsetof(mxq_swiglu_args, weights) == 208 &&
                  offsetof(mxq_swiglu_args, activation) == 216 && sizeof(mxq_swiglu_args) == 224,
              "mxq_swiglu_args");
static_assert(offsetof(mxq_swiglu_backward_args, grad) == 192 && offsetof(mxq_swiglu_backward_args, swiglu) == 248 &&
                  offsetof(mxq_swiglu_backward_args, weights) == 264 &&
                  offsetof(mxq_swiglu_backward_args, grad_weights) == 280 && sizeof(mxq_swiglu_backward_args) == 288,
              "mxq_swiglu_backward_args");

// The C constants are the C++ enum values.
static_assert(MXQ_ERR_INVALID_OFFSETS == int(Code::invalid_offsets) && MXQ_ERR_UNSUPPORTED == int(Code::unsupported) &&
              MXQ_ERR_CUDA == int(Code::cuda_error) && MXQ_ERR_INVALID_ARGUMENT == int(Code::invalid_argument));
static_assert(MXQ_DTYPE_U8 == int(DType::u8) && MXQ_DTYPE_FP32 == int(DType::fp32) &&
              MXQ_DTYPE_FP16 == int(DType::fp16));
static_assert(MXQ_FORMAT_NVFP4 == int(Format::nvfp4) && MXQ_FORMAT_MXFP4 == int(Format::mxfp4) &&
              MXQ_FORMAT_MXFP8_E5M2 == int(Format::mxfp8_e5m2));
static_assert(MXQ_RULE_FLOOR == int(ScaleRule::floor) && MXQ_LAYOUT_BLOCKED == int(ScaleLayout::blocked));
static_assert(MXQ_DIRECTION_BOTH == int(Direction::both) && MXQ_DIRECTION_COLWISE == int(Direction::colwise));
static_assert(MXQ_BACKEND_CUDA == int(Backend::cuda) && MXQ_BACKEND_CPU == int(Backend::cpu) &&
              MXQ_BACKEND_CUDA_UNCHECKED == int(Backend::cuda_unchecked));
static_assert(MXQ_SCALE_GROUPS_ALONG_K == int(ScaleGroups::along_k) &&
              MXQ_SCALE_GROUPS_ALONG_M == int(ScaleGroups::along_m));

constexpr int64_t M = 96, K = 64;

struct Fixture {
  HostTensor x;
  std::vector<int32_t> ends = {10, 10, 70};
  Fixture() {
    Rng rng = Rng::fresh();
    x = normal_tensor(rng, DType::bf16, 1, M, K);
  }
  mxq_tensor_view c_view() const { return {x.bytes.data(), 1, M, K, 0, 0, MXQ_DTYPE_BF16}; }
  mxq_token_groups c_groups() const { return {ends.data(), static_cast<int64_t>(ends.size())}; }
  TokenGroups groups() const { return {ends.data(), static_cast<int64_t>(ends.size())}; }
};

struct QuantizeOut {
  std::vector<uint8_t> row_data, row_scales, col_data, col_scales;
  std::vector<float> s_enc, s_dec;
  std::vector<int32_t> starts, ends;
  explicit QuantizeOut(const QuantizeSizes& s)
      : row_data(size_t(s.row_data_bytes), 1),
        row_scales(size_t(s.row_scale_bytes), 1),
        col_data(size_t(s.col_data_bytes), 1),
        col_scales(size_t(s.col_scale_bytes), 1),
        s_enc(size_t(s.tensor_scale_count), -1),
        s_dec(size_t(s.tensor_scale_count), -1),
        starts(size_t(s.padded_offset_count), -1),
        ends(size_t(s.padded_offset_count), -1) {}
  bool operator==(const QuantizeOut& o) const {
    return row_data == o.row_data && row_scales == o.row_scales && col_data == o.col_data &&
           col_scales == o.col_scales && s_enc == o.s_enc && s_dec == o.s_dec && starts == o.starts && ends == o.ends;
  }
};

TEST(CAbi, QuantizeAndDequantizeMatchTheCppApi) {
  Fixture f;
  mxq_quantize_args ca{};
  ca.input = f.c_view();
  ca.format = MXQ_FORMAT_NVFP4;
  ca.rule = MXQ_RULE_FLOOR;
  ca.layout = MXQ_LAYOUT_BLOCKED;
  ca.direction = MXQ_DIRECTION_BOTH;
  ca.groups = f.c_groups();
  ca.pad_rowwise = ca.pad_colwise = 32;
  ca.backend = MXQ_BACKEND_CPU;

  QuantizeArgs a;
  a.input = f.x.view();
  a.params = {Format::nvfp4, ScaleRule::floor, ScaleLayout::blocked, Direction::both};
  a.groups = {f.groups(), 32, 32};
  a.backend = Backend::cpu;

  struct mxq_quantize_sizes cs {};
  ASSERT_EQ(mxq_quantize_sizes(&ca, &cs), MXQ_OK) << mxq_last_error();
  QuantizeSizes s;
  ASSERT_TRUE(quantize_sizes(a, &s).ok());
  EXPECT_EQ(cs.row_data_rows, s.row_data_rows);
  EXPECT_EQ(cs.col_data_cols, s.col_data_cols);
  EXPECT_EQ(cs.row_data_bytes, s.row_data_bytes);
  EXPECT_EQ(cs.row_scale_bytes, s.row_scale_bytes);
  EXPECT_EQ(cs.col_data_bytes, s.col_data_bytes);
  EXPECT_EQ(cs.col_scale_bytes, s.col_scale_bytes);
  EXPECT_EQ(cs.tensor_scale_count, s.tensor_scale_count);
  EXPECT_EQ(cs.padded_offset_count, s.padded_offset_count);
  EXPECT_EQ(s.padded_offset_count, 3);

  QuantizeOut via_c(s), via_cpp(s);
  ca.row_data = via_c.row_data.data();
  ca.row_scales = via_c.row_scales.data();
  ca.col_data = via_c.col_data.data();
  ca.col_scales = via_c.col_scales.data();
  ca.s_enc = via_c.s_enc.data();
  ca.s_dec = via_c.s_dec.data();
  ca.padded_starts = via_c.starts.data();
  ca.padded_ends = via_c.ends.data();
  ASSERT_EQ(mxq_quantize(&ca), MXQ_OK) << mxq_last_error();
  a.out = {via_cpp.row_data.data(), via_cpp.row_scales.data(), via_cpp.col_data.data(), via_cpp.col_scales.data(),
           via_cpp.s_enc.data(),    via_cpp.s_dec.data(),      via_cpp.starts.data(),   via_cpp.ends.data()};
  ASSERT_TRUE(quantize(a).ok());
  EXPECT_TRUE(via_c == via_cpp);
  EXPECT_NE(via_c.s_enc[0], -1.0f);

  // Dequantize the colwise half both ways.
  mxq_dequantize_args cd{};
  cd.format = MXQ_FORMAT_NVFP4;
  cd.rule = MXQ_RULE_FLOOR;
  cd.layout = MXQ_LAYOUT_BLOCKED;
  cd.direction = MXQ_DIRECTION_COLWISE;
  cd.batch = 1;
  cd.rows = M;
  cd.cols = K;
  cd.groups = f.c_groups();
  cd.pad_rowwise = cd.pad_colwise = 32;
  cd.data = via_c.col_data.data();
  cd.scales = via_c.col_scales.data();
  cd.s_dec = via_c.s_dec.data();
  cd.out_dtype = MXQ_DTYPE_FP32;
  cd.backend = MXQ_BACKEND_CPU;
  int64_t n_c = 0, n = 0;
  ASSERT_EQ(mxq_dequantize_size(&cd, &n_c), MXQ_OK) << mxq_last_error();

  DequantizeArgs d;
  d.params = {Format::nvfp4, ScaleRule::floor, ScaleLayout::blocked, Direction::colwise};
  d.rows = M;
  d.cols = K;
  d.groups = a.groups;
  d.data = via_cpp.col_data.data();
  d.scales = via_cpp.col_scales.data();
  d.s_dec = via_cpp.s_dec.data();
  d.out_dtype = DType::fp32;
  d.backend = Backend::cpu;
  ASSERT_TRUE(dequantize_size(d, &n).ok());
  ASSERT_EQ(n_c, n);
  std::vector<float> out_c(size_t(n), -1), out_cpp(size_t(n), -2);
  cd.out = out_c.data();
  d.out = out_cpp.data();
  ASSERT_EQ(mxq_dequantize(&cd), MXQ_OK) << mxq_last_error();
  ASSERT_TRUE(dequantize(d).ok());
  EXPECT_EQ(std::memcmp(out_c.data(), out_cpp.data(), out_c.size() * 4), 0);

  float amax_c = -1, amax_cpp = -2;
  const mxq_tensor_view v = f.c_view();
  ASSERT_EQ(mxq_tensor_amax(&v, &amax_c, MXQ_BACKEND_CPU, nullptr), MXQ_OK);
  ASSERT_TRUE(tensor_amax(f.x.view(), &amax_cpp, Backend::cpu).ok());
  EXPECT_EQ(amax_c, amax_cpp);
  EXPECT_GT(amax_c, 0.0f);
}

TEST(CAbi, PadUnpadSwizzleMatchTheCppApi) {
  Fixture f;
  mxq_pad_args cp{};
  cp.input = f.c_view();
  cp.groups = f.c_groups();
  cp.alignment = 64;
  cp.backend = MXQ_BACKEND_AUTO;
  int64_t rows = 0;
  ASSERT_EQ(mxq_pad_rows(&cp, &rows), MXQ_OK);
  ASSERT_EQ(rows, (M + 3 * 64 + 63) / 64 * 64);
  std::vector<uint8_t> out_c(size_t(rows * K * 2), 0xA5), out_cpp(out_c.size(), 0x5A);
  std::vector<int32_t> ps_c(3), pe_c(3), ps(3), pe(3);
  cp.out = out_c.data();
  cp.padded_starts = ps_c.data();
  cp.padded_ends = pe_c.data();
  ASSERT_EQ(mxq_pad(&cp), MXQ_OK) << mxq_last_error();
  PadArgs p;
  p.input = f.x.view();
  p.groups = f.groups();
  p.alignment = 64;
  p.out = out_cpp.data();
  p.padded_starts = ps.data();
  p.padded_ends = pe.data();
  ASSERT_TRUE(pad(p).ok());
  EXPECT_EQ(out_c, out_cpp);
  EXPECT_EQ(ps_c, ps);
  EXPECT_EQ(pe_c, pe);

  mxq_unpad_args cu{};
  cu.input = {out_c.data(), 1, rows, K, 0, 0, MXQ_DTYPE_BF16};
  cu.groups = f.c_groups();
  cu.alignment = 64;
  cu.rows = M;
  std::vector<uint8_t> back(size_t(M * K * 2), 0xA5);
  cu.out = back.data();
  ASSERT_EQ(mxq_unpad(&cu), MXQ_OK) << mxq_last_error();
  std::vector<uint8_t> want(f.x.bytes.begin(), f.x.bytes.begin() + 70 * K * 2);
  want.resize(back.size(), 0);  // rows past the last end (70) are 0
  EXPECT_EQ(back, want);

  // Swizzle the first 96 x 8 bytes of the input as a scale matrix, groups along M.
  mxq_swizzle_args cs{};
  cs.in = f.x.bytes.data();
  cs.batch = 1;
  cs.rows = M;
  cs.cols = 8;
  cs.group_axis = MXQ_SCALE_GROUPS_ALONG_M;
  cs.groups = f.c_groups();
  int64_t bytes_c = 0, bytes = 0;
  ASSERT_EQ(mxq_swizzle_size(&cs, &bytes_c), MXQ_OK);
  SwizzleArgs s;
  s.in = f.x.bytes.data();
  s.rows = M;
  s.cols = 8;
  s.group_axis = ScaleGroups::along_m;
  s.groups = f.groups();
  ASSERT_TRUE(swizzle_size(s, &bytes).ok());
  ASSERT_EQ(bytes_c, bytes);
  std::vector<uint8_t> blk_c(size_t(bytes), 0xA5), blk(size_t(bytes), 0x5A);
  cs.out = blk_c.data();
  s.out = blk.data();
  ASSERT_EQ(mxq_swizzle(&cs), MXQ_OK) << mxq_last_error();
  ASSERT_TRUE(swizzle(s).ok());
  EXPECT_EQ(blk_c, blk);
  std::vector<uint8_t> lin_c(size_t(M * 8), 0xA5), lin(size_t(M * 8), 0x5A);
  ASSERT_EQ(mxq_unswizzle(&cs, lin_c.data()), MXQ_OK) << mxq_last_error();
  ASSERT_TRUE(unswizzle(s, lin.data()).ok());
  EXPECT_EQ(lin_c, lin);

  const mxq_token_groups g = f.c_groups();
  EXPECT_EQ(mxq_validate_group_ends(&g, M, MXQ_BACKEND_CPU, nullptr), MXQ_OK);
}

TEST(CAbi, ErrorsGiveTheCodeAndAThreadLocalMessage) {
  EXPECT_EQ(mxq_quantize(nullptr), MXQ_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(mxq_last_error(), "mxq_quantize: args is null");

  Fixture f;
  mxq_quantize_args ca{};
  ca.input = f.c_view();
  ca.format = 9;
  ca.direction = MXQ_DIRECTION_ROWWISE;
  struct mxq_quantize_sizes cs {};
  EXPECT_EQ(mxq_quantize_sizes(&ca, &cs), MXQ_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mxq_last_error()).find("quantize_sizes: params.format (9) is not a format"), std::string::npos)
      << mxq_last_error();
  EXPECT_EQ(cs.row_data_bytes, 0);  // nothing written on error

  // A success leaves the last error alone ("the last failed call").
  EXPECT_STREQ(mxq_version_string(), "0.1.0");
  EXPECT_STREQ(mxq_version_string(), version());
  const std::string before = mxq_last_error();

  const int32_t bad_ends[] = {5, 3};
  const mxq_token_groups g{bad_ends, 2};
  std::string other_thread_before, other_thread_after;
  int32_t other_code = 0;
  std::thread t([&] {
    other_thread_before = mxq_last_error();
    other_code = mxq_validate_group_ends(&g, 10, MXQ_BACKEND_CPU, nullptr);
    other_thread_after = mxq_last_error();
  });
  t.join();
  EXPECT_EQ(other_thread_before, "");
  EXPECT_EQ(other_code, MXQ_ERR_INVALID_OFFSETS);
  EXPECT_NE(other_thread_after.find("groups.ends[1] (3) is less than groups.ends[0] (5)"), std::string::npos);
  EXPECT_EQ(std::string(mxq_last_error()), before);  // this thread's message is untouched

  mxq_pad_args cp{};
  cp.input = f.c_view();
  cp.alignment = 48;
  EXPECT_EQ(mxq_pad(&cp), MXQ_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(mxq_last_error(), "pad: alignment (48) must be a power of two in [1, 4096]");

  std::vector<uint8_t> host_in(16, 1), host_out(512, 0);
  mxq_swizzle_args sw{};
  sw.in = host_in.data();
  sw.batch = 1;
  sw.rows = sw.cols = 4;
  sw.out = host_out.data();
  sw.backend = MXQ_BACKEND_CUDA;  // host memory: no CUDA here, or the wrong kind of memory
  EXPECT_EQ(mxq_swizzle(&sw), mxq_cuda_available() ? MXQ_ERR_INVALID_ARGUMENT : MXQ_ERR_UNSUPPORTED);
  EXPECT_EQ(mxq_cuda_available(), cuda_available() ? 1 : 0);

  for (auto call :
       {+[] { return mxq_dequantize(nullptr); }, +[] { return mxq_pad(nullptr); }, +[] { return mxq_unpad(nullptr); },
        +[] { return mxq_swizzle(nullptr); }, +[] { return mxq_unswizzle(nullptr, nullptr); },
        +[] { return mxq_tensor_amax(nullptr, nullptr, 0, nullptr); },
        +[] { return mxq_validate_group_ends(nullptr, 0, 0, nullptr); },
        +[] { return mxq_quantize_sizes(nullptr, nullptr); }}) {
    EXPECT_EQ(call(), MXQ_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mxq_last_error()).find(" is null"), std::string::npos) << mxq_last_error();
  }
}

}  // namespace
}  // namespace mxq::test
