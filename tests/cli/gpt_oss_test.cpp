// A gpt-oss checkpoint quantized to mxfp4 gets gpt-oss's own layout for its fused experts
// (<name>_blocks / _scales, quant_method "mxfp4"), checked here by decoding the blocks the way
// transformers' gpt-oss loader does (E2M1 table, low nibble first, exponent - 127, then (E, out, in)
// transposed to (E, in, out)) and comparing with `mxq dequantize` and the original weights.
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "cli_test_support.hpp"

namespace mxq::clitest {
namespace {

constexpr float kE2M1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

// transformers' reading of one expert weight: (E, in, out) floats from _blocks and _scales.
std::vector<float> loader_decode(const st::SafetensorsView& v, const std::string& name, int64_t E, int64_t in,
                                 int64_t out) {
  const uint8_t* blocks = v.data(*v.find(name + "_blocks"));
  const uint8_t* scales = v.data(*v.find(name + "_scales"));
  std::vector<float> w(static_cast<size_t>(E * in * out));
  for (int64_t e = 0; e < E; ++e)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) {
        const int64_t row = e * out + o;  // (E, out) rows of in/32 blocks of 16 bytes
        const uint8_t byte = blocks[row * (in / 2) + i / 2];
        const int code = i % 2 == 0 ? byte & 0xF : byte >> 4;
        const int exponent = scales[row * (in / 32) + i / 32] - 127;
        w[static_cast<size_t>((e * in + i) * out + o)] = std::ldexp(kE2M1[code], exponent);
      }
  return w;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

TEST(GptOss, FusedExpertsInTheLoadersMxfp4Layout) {
  ScratchDir dir;
  const std::string root = dir / "in";
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  const std::string L = "model.layers.0.";
  const std::vector<Tensor> model = {normal_tensor(L + "mlp.experts.gate_up_proj", "BF16", {2, 64, 96}, 1),
                                     normal_tensor(L + "mlp.experts.gate_up_proj_bias", "BF16", {2, 96}, 2),
                                     normal_tensor(L + "mlp.experts.down_proj", "BF16", {2, 64, 64}, 3),
                                     normal_tensor(L + "mlp.router.weight", "BF16", {2, 64}, 4),
                                     normal_tensor(L + "self_attn.q_proj.weight", "BF16", {64, 64}, 5)};
  write_checkpoint(root + "/model.safetensors", model);
  write_text(root + "/config.json", R"({"model_type": "gpt_oss", "hidden_size": 64})");

  const RunResult q = run_mxq("quantize " + root + " " + dir / "q --format mxfp4 --backend cpu");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  const nlohmann::json config = read_json(dir / "q/config.json");
  EXPECT_EQ(config["quantization_config"]["quant_method"], "mxfp4");
  EXPECT_EQ(config["model_type"], "gpt_oss");

  st::SafetensorsFile out(dir / "q/model.safetensors");
  const auto& v = out.view();
  for (const auto& [name, in, o] :
       {std::tuple{L + "mlp.experts.gate_up_proj", 64, 96}, std::tuple{L + "mlp.experts.down_proj", 64, 64}}) {
    ASSERT_NE(v.find(name + "_blocks"), nullptr) << name;
    EXPECT_EQ(v.find(name), nullptr) << "the bf16 original is replaced";
    EXPECT_EQ(v.find(name + "_blocks")->dtype, "U8");
    EXPECT_EQ(v.find(name + "_blocks")->shape, (std::vector<int64_t>{2, o, in / 32, 16}));
    EXPECT_EQ(v.find(name + "_scales")->shape, (std::vector<int64_t>{2, o, in / 32}));
  }
  for (const char* kept : {"mlp.experts.gate_up_proj_bias", "mlp.router.weight", "self_attn.q_proj.weight"})
    EXPECT_EQ(v.find(L + kept)->dtype, "BF16") << kept;

  const RunResult inspect = run_mxq("inspect " + dir / "q --stats " + root);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_NE(inspect.output.find("mxfp4 (gpt-oss blocks) data of " + L + "mlp.experts.down_proj"), std::string::npos)
      << inspect.output;

  const RunResult d = run_mxq("dequantize " + dir / "q " + dir / "d --backend cpu");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_EQ(read_json(dir / "d/config.json").count("quantization_config"), 0u);
  st::SafetensorsFile back(dir / "d/model.safetensors");
  const std::string name = L + "mlp.experts.gate_up_proj";
  const st::TensorInfo* w = back.view().find(name);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, "BF16");
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 64, 96}));
  const std::vector<float> loader = loader_decode(v, name, 2, 64, 96);
  double signal = 0, noise = 0;
  for (size_t i = 0; i < loader.size(); ++i) {
    const uint8_t* p = back.view().data(*w) + 2 * i;
    const float got = num::bf16_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8)));
    ASSERT_EQ(got, loader[i]) << "element " << i;
    const uint8_t* o = model[0].bytes.data() + 2 * i;
    const float x = num::bf16_to_float(static_cast<uint16_t>(o[0] | (o[1] << 8)));
    signal += double(x) * x;
    noise += double(x - got) * (x - got);
  }
  const double db = 10 * std::log10(signal / noise);
  EXPECT_GT(db, 13) << "blocked along the output dimension would be far worse";
  EXPECT_LT(db, 25);
}

// Without gpt-oss's config, or in another format, the fused experts stay bf16.
TEST(GptOss, OtherFormatsKeepTheExperts) {
  ScratchDir dir;
  const std::string root = dir / "in";
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  write_checkpoint(root + "/model.safetensors",
                   {normal_tensor("model.layers.0.mlp.experts.gate_up_proj", "BF16", {2, 64, 96}, 1),
                    normal_tensor("model.layers.0.self_attn.q_proj.weight", "BF16", {64, 64}, 5)});
  write_text(root + "/config.json", R"({"model_type": "gpt_oss"})");
  const RunResult q = run_mxq("quantize " + root + " " + dir / "q --format nvfp4 --backend cpu");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  st::SafetensorsFile out(dir / "q/model.safetensors");
  EXPECT_EQ(out.view().find("model.layers.0.mlp.experts.gate_up_proj")->dtype, "BF16");
  EXPECT_NE(out.view().find("model.layers.0.self_attn.q_proj.weight_packed"), nullptr);
  EXPECT_EQ(read_json(dir / "q/config.json")["quantization_config"]["quant_method"], "compressed-tensors");
}

}  // namespace
}  // namespace mxq::clitest
