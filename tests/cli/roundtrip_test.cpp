// quantize -> inspect -> dequantize round trips of small generated checkpoints in every format:
// exact output names, dtypes and shapes read back with mxq's reader, copied tensors unchanged,
// the recorded settings and quantization_config, and SQNR against the original.
#include <nlohmann/json.hpp>

#include <cmath>

#include "cli_test_support.hpp"

namespace mxq::clitest {
namespace {

struct FormatCase {
  const char* name;
  double min_sqnr_db;  // the least SQNR each format must reach on standard-normal data
  const char* data_dtype;
  const char* scale_dtype;
  int block;
  bool fp4;
};

const FormatCase kFormats[] = {{"mxfp8", 28, "F8_E4M3", "U8", 32, false},
                               {"mxfp4", 13, "U8", "U8", 32, true},
                               {"nvfp4", 16, "U8", "F8_E4M3", 16, true}};

float value_at(const uint8_t* bytes, const std::string& dtype, int64_t i) {
  if (dtype == "F32") {
    float f;
    std::memcpy(&f, bytes + 4 * i, 4);
    return f;
  }
  const uint16_t h = static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
  return dtype == "BF16" ? num::bf16_to_float(h) : num::fp16_to_float(h);
}

double sqnr_db(const Tensor& ref, const st::SafetensorsView& view, const st::TensorInfo& t) {
  double signal = 0, noise = 0;
  for (int64_t i = 0; i < elements(ref.shape); ++i) {
    const double x = value_at(ref.bytes.data(), ref.dtype, i);
    const double y = value_at(view.data(t), t.dtype, i);
    signal += x * x;
    noise += (x - y) * (x - y);
  }
  return 10 * std::log10(signal / noise);
}

std::vector<Tensor> small_model() {
  Tensor steps{"model.step", "I64", {2}, std::vector<uint8_t>(16, 7)};
  return {normal_tensor("model.layers.0.self_attn.q_proj.weight", "BF16", {64, 128}, 1),
          normal_tensor("model.layers.0.mlp.experts.gate_up_proj", "BF16", {3, 32, 64}, 2),
          normal_tensor("model.layers.0.mlp.down_proj.weight", "F32", {16, 64}, 3),
          normal_tensor("model.layers.0.mlp.up_proj.weight", "F16", {8, 96}, 4),
          normal_tensor("model.layers.0.input_layernorm.weight", "F32", {128}, 5),
          normal_tensor("lm_head.weight", "BF16", {10, 64}, 6),
          steps};
}

class RoundTrip : public ::testing::TestWithParam<FormatCase> {};

TEST_P(RoundTrip, QuantizeInspectDequantize) {
  const FormatCase f = GetParam();
  ScratchDir dir;
  const std::vector<Tensor> model = small_model();
  write_checkpoint(dir / "in.safetensors", model, {{"source", "test"}});

  const RunResult q =
      run_mxq("quantize " + dir / "in.safetensors " + dir / "q.safetensors" + " --format " + f.name + " --backend cpu");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  EXPECT_NE(q.output.find("model.layers.0.self_attn.q_proj.weight"), std::string::npos);

  {
    st::SafetensorsFile out(dir / "q.safetensors");
    const auto& v = out.view();
    // Quantized: the 2-D weights whose input dim is a multiple of the block (all here).
    const std::vector<std::pair<std::string, std::vector<int64_t>>> weights = {
        {"model.layers.0.self_attn.q_proj.weight", {64, 128}},
        {"model.layers.0.mlp.down_proj.weight", {16, 64}},
        {"model.layers.0.mlp.up_proj.weight", {8, 96}}};
    // Copied: the fused 3-D experts (no compressed-tensors layout), the norm, lm_head (ignored by
    // default), the step counter.
    size_t expected_count = 4;
    for (const auto& [name, shape] : weights) {
      std::vector<int64_t> data_shape = shape, scale_shape = shape;
      if (f.fp4) data_shape.back() /= 2;
      scale_shape.back() /= f.block;
      const st::TensorInfo* data = v.find(f.fp4 ? name + "_packed" : name);
      const st::TensorInfo* scale = v.find(name + "_scale");
      ASSERT_NE(data, nullptr) << name;
      ASSERT_NE(scale, nullptr) << name;
      EXPECT_EQ(data->dtype, f.data_dtype);
      EXPECT_EQ(data->shape, data_shape);
      EXPECT_EQ(scale->dtype, f.scale_dtype);
      EXPECT_EQ(scale->shape, scale_shape);
      expected_count += 2;
      if (std::string(f.name) == "nvfp4") {
        const st::TensorInfo* global = v.find(name + "_global_scale");
        ASSERT_NE(global, nullptr);
        EXPECT_EQ(global->dtype, "F32");
        EXPECT_EQ(global->shape, std::vector<int64_t>{shape.size() == 3 ? shape[0] : 1});
        float s;
        std::memcpy(&s, v.data(*global), 4);
        EXPECT_TRUE(std::isfinite(s) && s > 0);
        ++expected_count;
      } else {
        EXPECT_EQ(v.find(name + "_global_scale"), nullptr);
      }
      if (f.fp4) {
        EXPECT_EQ(v.find(name), nullptr) << "the bf16 original must be replaced";
      }
    }
    EXPECT_EQ(v.tensors().size(), expected_count);
    for (const char* kept : {"model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.input_layernorm.weight",
                             "lm_head.weight", "model.step"}) {
      const st::TensorInfo* t = v.find(kept);
      ASSERT_NE(t, nullptr) << kept;
      const auto& orig = *std::find_if(model.begin(), model.end(), [&](const Tensor& m) { return m.name == kept; });
      EXPECT_EQ(t->dtype, orig.dtype);
      EXPECT_EQ(t->shape, orig.shape);
      EXPECT_EQ(std::memcmp(v.data(*t), orig.bytes.data(), orig.bytes.size()), 0) << kept;
    }
    EXPECT_EQ(v.metadata().at("mxq_format"), f.name);
    EXPECT_EQ(v.metadata().at("mxq_scale_layout"), "linear");
    EXPECT_EQ(v.metadata().at("format"), "pt");
    EXPECT_EQ(v.metadata().at("source"), "test");
    const auto config = nlohmann::json::parse(v.metadata().at("quantization_config"));
    EXPECT_EQ(config["quant_method"], "compressed-tensors");
    EXPECT_EQ(config["ignore"], nlohmann::json::array({"lm_head"}));
    EXPECT_EQ(config["config_groups"]["group_0"]["weights"]["group_size"], f.block);
    EXPECT_EQ(config["config_groups"]["group_0"]["weights"]["num_bits"], f.fp4 ? 4 : 8);
  }

  const RunResult inspect = run_mxq("inspect " + dir / "q.safetensors --stats " + dir / "in.safetensors --backend cpu");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_NE(inspect.output.find(std::string("format ") + f.name), std::string::npos);
  EXPECT_NE(inspect.output.find("scales of model.layers.0.mlp.down_proj.weight"), std::string::npos) << inspect.output;

  const RunResult d = run_mxq("dequantize " + dir / "q.safetensors " + dir / "d.safetensors --backend cpu");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  st::SafetensorsFile back(dir / "d.safetensors");
  EXPECT_EQ(back.view().tensors().size(), model.size());
  EXPECT_EQ(back.view().metadata().count("mxq_format"), 0u);
  for (const Tensor& m : model) {
    const st::TensorInfo* t = back.view().find(m.name);
    ASSERT_NE(t, nullptr) << m.name;
    EXPECT_EQ(t->shape, m.shape) << m.name;
    const bool was_quantized = m.shape.size() == 2 && m.name != "lm_head.weight";
    if (!was_quantized) {
      EXPECT_EQ(t->dtype, m.dtype);
      EXPECT_EQ(std::memcmp(back.view().data(*t), m.bytes.data(), m.bytes.size()), 0);
      continue;
    }
    EXPECT_EQ(t->dtype, "BF16");
    const double db = sqnr_db(m, back.view(), *t);
    std::printf("%-12s %-42s SQNR %.2f dB\n", f.name, m.name.c_str(), db);
    EXPECT_GE(db, f.min_sqnr_db) << m.name;
    EXPECT_LE(db, f.min_sqnr_db + 15) << m.name << ": suspiciously exact";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, RoundTrip, ::testing::ValuesIn(kFormats),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RoundTripOptions, FloorRuleAndPartialInputDims) {
  ScratchDir dir;
  write_checkpoint(dir / "in.safetensors", {normal_tensor("big.weight", "BF16", {40, 96}, 9),
                                            normal_tensor("odd.weight", "BF16", {4, 48}, 10)});
  const RunResult q = run_mxq("quantize " + dir / "in.safetensors " + dir / "q.safetensors" +
                              " --format mxfp8 --scale-rule floor --no-stats");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  EXPECT_NE(q.output.find("not a multiple of 32"), std::string::npos) << q.output;
  st::SafetensorsFile out(dir / "q.safetensors");
  ASSERT_NE(out.view().find("big.weight_scale"), nullptr);
  EXPECT_EQ(out.view().find("big.weight_scale")->shape, (std::vector<int64_t>{40, 3}));
  EXPECT_EQ(out.view().find("odd.weight")->dtype, "BF16");  // K = 48 kept as it is
  EXPECT_EQ(out.view().metadata().at("mxq_scale_rule"), "floor");

  const RunResult d = run_mxq("dequantize " + dir / "q.safetensors " + dir / "d.safetensors");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  const RunResult stats = run_mxq("inspect " + dir / "d.safetensors --stats " + dir / "in.safetensors");
  ASSERT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("inf"), std::string::npos) << "odd.weight is copied exactly";
}

// Settings whose checkpoint a loader would misread are refused, naming the option and the reason.
TEST(RoundTripOptions, SettingsLoadersMisreadAreRefused) {
  ScratchDir dir;
  write_checkpoint(dir / "in.safetensors", {normal_tensor("a.weight", "BF16", {8, 64}, 1)});
  const RunResult blocked =
      run_mxq("quantize " + dir / "in.safetensors " + dir / "q.safetensors" + " --format mxfp8 --scale-layout blocked");
  EXPECT_EQ(blocked.exit_code, 2);
  EXPECT_NE(blocked.output.find("--scale-layout blocked: compressed-tensors loaders"), std::string::npos)
      << blocked.output;
  const RunResult e5m2 =
      run_mxq("quantize " + dir / "in.safetensors " + dir / "q.safetensors" + " --format mxfp8_e5m2");
  EXPECT_EQ(e5m2.exit_code, 2);
  EXPECT_NE(e5m2.output.find("--format mxfp8_e5m2: compressed-tensors has no e5m2"), std::string::npos) << e5m2.output;
  EXPECT_FALSE(file_exists(dir / "q.safetensors"));
}

}  // namespace
}  // namespace mxq::clitest
