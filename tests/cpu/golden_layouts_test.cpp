// The layout cases of the torchao golden vectors (tests/data/golden/manifest.json): `swizzle`,
// `swizzle_groups_m`, `swizzle_groups_k` and `pad`, byte for byte through the public API on the
// cpu backend, and each inverse (unswizzle, unpad) back to the input.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <mxq/mxq.hpp>

#include "support/test_util.hpp"

namespace mxq::test {
namespace {

using nlohmann::json;

std::vector<uint8_t> load(const json& tensor) {
  const std::string path = golden_dir() + "/" + tensor.at("file").get<std::string>();
  std::vector<uint8_t> bytes = read_file_bytes(path);
  EXPECT_FALSE(bytes.empty()) << "cannot read " << path;
  return bytes;
}

template <class T>
std::vector<T> load_as(const json& tensor) {
  const std::vector<uint8_t> bytes = load(tensor);
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

std::vector<int64_t> shape_of(const json& tensor) { return tensor.at("shape").get<std::vector<int64_t>>(); }

DType dtype_named(const std::string& s) {
  if (s == "bfloat16") return DType::bf16;
  if (s == "float16") return DType::fp16;
  if (s == "float32") return DType::fp32;
  if (s == "uint8") return DType::u8;
  ADD_FAILURE() << "unknown dtype " << s;
  return DType::u8;
}

std::vector<json> cases_of(const std::string& op) {
  std::ifstream f(golden_dir() + "/manifest.json");
  EXPECT_TRUE(f.good()) << "missing " << golden_dir() << "/manifest.json";
  std::vector<json> out;
  if (!f.good()) return out;
  const json manifest = json::parse(f);  // named: a temporary would die before the loop runs
  for (const json& c : manifest.at("cases"))
    if (c.at("op") == op) out.push_back(c);
  return out;
}

// Swizzles the case's input and compares with its output; then unswizzles the golden output back.
void check_swizzle_case(const json& c, ScaleGroups axis) {
  SCOPED_TRACE(c.at("name").get<std::string>());
  const std::vector<uint8_t> in = load(c.at("input"));
  const std::vector<uint8_t> want = load(c.at("output"));
  const auto shape = shape_of(c.at("input"));
  SwizzleArgs a;
  a.in = in.data();
  a.rows = shape[0];
  a.cols = shape[1];
  a.group_axis = axis;
  std::vector<int32_t> ends;
  if (axis != ScaleGroups::none) {
    ends = load_as<int32_t>(c.at("ends"));
    a.groups = {ends.data(), static_cast<int64_t>(ends.size())};
    // padded_starts (G + 1 entries): where each group's blocked matrix starts, in rows (along M)
    // or columns (along K): prefix sums of 128- resp. 4-rounded group sizes.
    const std::vector<int64_t> starts = load_as<int64_t>(c.at("padded_starts"));
    ASSERT_EQ(starts.size(), ends.size() + 1);
    const int64_t unit = axis == ScaleGroups::along_m ? 128 : 4;
    int64_t prev = 0, pos = 0;
    for (size_t g = 0; g < ends.size(); ++g) {
      EXPECT_EQ(starts[g], pos) << "group " << g;
      pos += (ends[g] - prev + unit - 1) / unit * unit;
      prev = ends[g];
    }
  }
  a.backend = Backend::cpu;
  int64_t bytes = 0;
  ASSERT_TRUE(swizzle_size(a, &bytes).ok());
  ASSERT_EQ(bytes, static_cast<int64_t>(want.size()));
  std::vector<uint8_t> out = poisoned(want.size(), kPoisonA);
  a.out = out.data();
  ASSERT_TRUE(swizzle(a).ok());
  EXPECT_TRUE(bytes_equal(want, out, "swizzle output"));

  std::vector<uint8_t> golden_blocked = want;
  a.out = golden_blocked.data();
  std::vector<uint8_t> back = poisoned(in.size(), kPoisonA);
  ASSERT_TRUE(unswizzle(a, back.data()).ok());
  EXPECT_TRUE(bytes_equal(in, back, "unswizzle(golden output)"));
}

TEST(GoldenLayouts, Swizzle) {
  const auto cases = cases_of("swizzle");
  EXPECT_GE(cases.size(), 5u);
  for (const json& c : cases) check_swizzle_case(c, ScaleGroups::none);
}

TEST(GoldenLayouts, SwizzleGroupsAlongM) {
  const auto cases = cases_of("swizzle_groups_m");
  EXPECT_GE(cases.size(), 2u);
  for (const json& c : cases) check_swizzle_case(c, ScaleGroups::along_m);
}

TEST(GoldenLayouts, SwizzleGroupsAlongK) {
  const auto cases = cases_of("swizzle_groups_k");
  EXPECT_GE(cases.size(), 2u);
  for (const json& c : cases) check_swizzle_case(c, ScaleGroups::along_k);
}

TEST(GoldenLayouts, Pad) {
  const auto cases = cases_of("pad");
  EXPECT_GE(cases.size(), 2u);
  for (const json& c : cases) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const std::vector<uint8_t> in = load(c.at("input"));
    const std::vector<uint8_t> want = load(c.at("output"));
    const std::vector<int32_t> ends = load_as<int32_t>(c.at("ends"));
    const auto shape = shape_of(c.at("input"));
    PadArgs p;
    p.input = {in.data(), dtype_named(c.at("input").at("dtype")), 1, shape[0], shape[1], 0, 0};
    p.groups = {ends.data(), static_cast<int64_t>(ends.size())};
    p.alignment = c.at("alignment").get<int32_t>();
    p.backend = Backend::cpu;
    int64_t rows = 0;
    ASSERT_TRUE(pad_rows(p, &rows).ok());
    ASSERT_EQ(rows, shape_of(c.at("output"))[0]);
    std::vector<uint8_t> out = poisoned(want.size(), kPoisonA);
    std::vector<int32_t> starts(ends.size(), -1), pends(ends.size(), -1);
    p.out = out.data();
    p.padded_starts = starts.data();
    p.padded_ends = pends.data();
    ASSERT_TRUE(pad(p).ok());
    EXPECT_TRUE(bytes_equal(want, out, "pad output"));
    EXPECT_EQ(starts, load_as<int32_t>(c.at("padded_starts")));
    EXPECT_EQ(pends, load_as<int32_t>(c.at("padded_ends")));

    UnpadArgs u;
    u.input = {want.data(), p.input.dtype, 1, rows, shape[1], 0, 0};
    u.groups = p.groups;
    u.alignment = p.alignment;
    u.rows = shape[0];
    u.backend = Backend::cpu;
    std::vector<uint8_t> back = poisoned(in.size(), kPoisonA);
    u.out = back.data();
    ASSERT_TRUE(unpad(u).ok());
    ASSERT_EQ(ends.back(), shape[0]);  // every row is in a group, so unpad restores the input
    EXPECT_TRUE(bytes_equal(in, back, "unpad(golden output)"));
  }
}

}  // namespace
}  // namespace mxq::test
