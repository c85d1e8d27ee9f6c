// Every `op: quantize` case of the torchao golden vectors (tests/data/golden/manifest.json),
// byte for byte, through the public API on the CPU backend.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <mxq/mxq.hpp>

#include "support/quantize_runner.hpp"
#include "support/reference_quantize.hpp"
#include "support/test_util.hpp"

namespace mxq::test {
namespace {

Format format_named(const std::string& s) {
  if (s == "mxfp8") return Format::mxfp8;
  if (s == "mxfp8_e5m2") return Format::mxfp8_e5m2;
  if (s == "mxfp4") return Format::mxfp4;
  if (s == "nvfp4") return Format::nvfp4;
  ADD_FAILURE() << "unknown format " << s;
  return Format::mxfp8;
}

DType dtype_named(const std::string& s) {
  if (s == "bfloat16") return DType::bf16;
  if (s == "float16") return DType::fp16;
  if (s == "float32") return DType::fp32;
  ADD_FAILURE() << "unknown input dtype " << s;
  return DType::bf16;
}

std::vector<uint8_t> load(const nlohmann::json& tensor) {
  const std::string path = golden_dir() + "/" + tensor.at("file").get<std::string>();
  std::vector<uint8_t> bytes = read_file_bytes(path);
  EXPECT_FALSE(bytes.empty()) << "cannot read " << path;
  return bytes;
}

TEST(GoldenQuantize, AllManifestCasesByteForByte) {
  std::ifstream f(golden_dir() + "/manifest.json");
  ASSERT_TRUE(f.good()) << "missing " << golden_dir() << "/manifest.json";
  const nlohmann::json manifest = nlohmann::json::parse(f);
  int cases = 0;
  for (const nlohmann::json& c : manifest.at("cases")) {
    if (c.at("op") != "quantize") continue;
    ++cases;
    SCOPED_TRACE(c.at("name").get<std::string>());
    ASSERT_EQ(c.at("direction"), "rowwise");
    ASSERT_EQ(c.at("scale_layout"), "linear");
    const nlohmann::json& in = c.at("input");
    const auto shape = in.at("shape").get<std::vector<int64_t>>();
    ASSERT_EQ(shape.size(), 2u);
    HostTensor x(dtype_named(in.at("dtype")), 1, shape[0], shape[1]);
    const std::vector<uint8_t> bytes = load(in);
    ASSERT_EQ(bytes.size(), x.bytes.size() - size_t(x.cols * dtype_size(x.dtype)));  // HostTensor keeps one spare row
    std::copy(bytes.begin(), bytes.end(), x.bytes.begin());

    QuantizeRequest r;
    r.params.format = format_named(c.at("format"));
    r.params.rule = c.at("scale_rule") == "floor" ? ScaleRule::floor : ScaleRule::rceil;
    r.params.layout = ScaleLayout::linear;
    r.params.direction = Direction::rowwise;
    const QuantizeResult q = run_quantize(x, r);
    EXPECT_TRUE(bytes_equal(load(c.at("data")), q.row_data, "data"));
    EXPECT_TRUE(bytes_equal(load(c.at("scales")), q.row_scales, "scales"));
    // The tests' independent scalar reference must agree with torchao too.
    const QuantizeResult ref = reference_quantize(x, r, q.sizes);
    EXPECT_TRUE(bytes_equal(load(c.at("data")), ref.row_data, "reference data"));
    EXPECT_TRUE(bytes_equal(load(c.at("scales")), ref.row_scales, "reference scales"));
  }
  EXPECT_EQ(cases, 36);
}

}  // namespace
}  // namespace mxq::test
