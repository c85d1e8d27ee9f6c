// Caller arrays of float / int32 need not be aligned (numpy can hand out such views): the CPU
// backend reads and writes them bytewise. Every op gives the bytes it gives on aligned arrays.
// (Under UBSan, which CI runs, an aligned-only access would abort this test.)
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include <mxq/mxq.hpp>

namespace mxq {
namespace {

// `n` elements of T at an address one byte past alignment, inside `storage`.
template <class T>
T* unaligned(std::vector<uint8_t>& storage, size_t n) {
  storage.assign(n * sizeof(T) + 1, 0);
  return reinterpret_cast<T*>(storage.data() + 1);
}

struct Outputs {
  std::vector<uint8_t> row_data, row_scales, col_data, col_scales, s_enc, s_dec, starts, ends, amax;
};

Outputs run(const std::vector<float>& x, int64_t M, int64_t K, const std::vector<int32_t>& ends_in, bool misalign) {
  std::vector<uint8_t> ends_store, amax_in_store;
  int32_t* ends = misalign ? unaligned<int32_t>(ends_store, ends_in.size()) : nullptr;
  std::vector<int32_t> ends_aligned = ends_in;
  if (misalign) std::memcpy(ends, ends_in.data(), ends_in.size() * 4);
  QuantizeArgs q;
  q.input = {x.data(), DType::fp32, 1, M, K};
  q.params = {Format::nvfp4, ScaleRule::rceil, ScaleLayout::blocked, Direction::both};
  q.groups.groups = {misalign ? ends : ends_aligned.data(), static_cast<int64_t>(ends_in.size())};
  q.groups.pad_rowwise = q.groups.pad_colwise = 32;
  const float amax_value = 5.0f;
  float* amax_in = misalign ? unaligned<float>(amax_in_store, 1) : nullptr;
  if (misalign) std::memcpy(amax_in, &amax_value, 4);
  q.tensor_amax = misalign ? amax_in : &amax_value;
  q.backend = Backend::cpu;
  QuantizeSizes s;
  EXPECT_TRUE(quantize_sizes(q, &s).ok());
  Outputs o;
  o.row_data.resize(size_t(s.row_data_bytes));
  o.row_scales.resize(size_t(s.row_scale_bytes));
  o.col_data.resize(size_t(s.col_data_bytes));
  o.col_scales.resize(size_t(s.col_scale_bytes));
  const size_t off = misalign ? 1 : 0;  // float / int32 outputs one byte past alignment
  for (auto* v : {&o.s_enc, &o.s_dec, &o.amax}) v->assign(4 + off, 0);
  for (auto* v : {&o.starts, &o.ends}) v->assign(4 * ends_in.size() + off, 0);
  q.out = {o.row_data.data(),
           o.row_scales.data(),
           o.col_data.data(),
           o.col_scales.data(),
           reinterpret_cast<float*>(o.s_enc.data() + off),
           reinterpret_cast<float*>(o.s_dec.data() + off),
           reinterpret_cast<int32_t*>(o.starts.data() + off),
           reinterpret_cast<int32_t*>(o.ends.data() + off),
           reinterpret_cast<float*>(o.amax.data() + off)};
  const Status st = quantize(q);
  EXPECT_TRUE(st.ok()) << st.message();
  for (auto* v : {&o.s_enc, &o.s_dec, &o.amax, &o.starts, &o.ends}) v->erase(v->begin(), v->begin() + off);
  return o;
}

TEST(UnalignedArrays, QuantizeWithGroupsPadsAndTensorScales) {
  const int64_t M = 96, K = 64;
  std::vector<float> x(size_t(M * K));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  const std::vector<int32_t> ends = {10, 10, 70, 96};
  const Outputs a = run(x, M, K, ends, false), u = run(x, M, K, ends, true);
  EXPECT_EQ(a.row_data, u.row_data);
  EXPECT_EQ(a.row_scales, u.row_scales);
  EXPECT_EQ(a.col_data, u.col_data);
  EXPECT_EQ(a.col_scales, u.col_scales);
  EXPECT_EQ(a.s_enc, u.s_enc);
  EXPECT_EQ(a.s_dec, u.s_dec);
  EXPECT_EQ(a.starts, u.starts);
  EXPECT_EQ(a.ends, u.ends);
  EXPECT_EQ(a.amax, u.amax);
}

TEST(UnalignedArrays, PadAndValidateReadUnalignedEnds) {
  std::vector<uint8_t> store;
  int32_t* ends = unaligned<int32_t>(store, 3);
  const int32_t values[3] = {4, 4, 20};
  std::memcpy(ends, values, sizeof values);
  EXPECT_TRUE(validate_group_ends({ends, 3}, 20, Backend::cpu).ok());
  std::vector<uint16_t> in(20 * 8, 0x3F80);
  PadArgs p;
  p.input = {in.data(), DType::bf16, 1, 20, 8};
  p.groups = {ends, 3};
  p.alignment = 8;
  int64_t rows = 0;
  ASSERT_TRUE(pad_rows(p, &rows).ok());
  std::vector<uint16_t> out(size_t(rows * 8));
  std::vector<uint8_t> s_store, e_store;
  p.out = out.data();
  p.padded_starts = unaligned<int32_t>(s_store, 3);
  p.padded_ends = unaligned<int32_t>(e_store, 3);
  ASSERT_TRUE(pad(p).ok());
  int32_t starts[3];
  std::memcpy(starts, p.padded_starts, sizeof starts);
  EXPECT_EQ(starts[0], 0);
  EXPECT_EQ(starts[1], 8);
  EXPECT_EQ(starts[2], 8);
}

}  // namespace
}  // namespace mxq
