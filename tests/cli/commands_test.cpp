// The commands' behaviour beyond the round trip: sharded checkpoints, --targets / --ignore,
// NVFP4 global scales shared by fused groups, --force,
// command-line and input errors with their exit codes, and atomic output.
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "cli_test_support.hpp"

namespace mxq::clitest {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// Two shards, an index and a config.json.
void write_sharded(const ScratchDir& dir, const std::string& name) {
  const std::string root = dir / name;
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  write_checkpoint(root + "/model-00001-of-00002.safetensors",
                   {normal_tensor("layers.0.q.weight", "BF16", {32, 64}, 1),
                    normal_tensor("layers.0.norm.weight", "BF16", {64}, 2)});
  write_checkpoint(root + "/model-00002-of-00002.safetensors",
                   {normal_tensor("layers.1.experts.w", "BF16", {2, 16, 64}, 3),
                    normal_tensor("layers.1.down.weight", "BF16", {16, 64}, 5),
                    normal_tensor("lm_head.weight", "BF16", {8, 64}, 4)});
  nlohmann::json index = {{"metadata", {{"total_size", 0}}},
                          {"weight_map",
                           {{"layers.0.q.weight", "model-00001-of-00002.safetensors"},
                            {"layers.0.norm.weight", "model-00001-of-00002.safetensors"},
                            {"layers.1.experts.w", "model-00002-of-00002.safetensors"},
                            {"layers.1.down.weight", "model-00002-of-00002.safetensors"},
                            {"lm_head.weight", "model-00002-of-00002.safetensors"}}}};
  write_text(root + "/model.safetensors.index.json", index.dump());
  write_text(root + "/config.json", R"({"model_type": "toy", "hidden_size": 64})");
  write_text(root + "/tokenizer.json", "{}");
}

TEST(Sharded, QuantizeAndDequantizeDirectories) {
  ScratchDir dir;
  write_sharded(dir, "in");
  const RunResult q = run_mxq("quantize " + dir / "in " + dir / "q --format nvfp4");
  ASSERT_EQ(q.exit_code, 0) << q.output;

  const nlohmann::json index = read_json(dir / "q/model.safetensors.index.json");
  const nlohmann::json expected_map = {{"layers.0.q.weight_packed", "model-00001-of-00002.safetensors"},
                                       {"layers.0.q.weight_scale", "model-00001-of-00002.safetensors"},
                                       {"layers.0.q.weight_global_scale", "model-00001-of-00002.safetensors"},
                                       {"layers.0.norm.weight", "model-00001-of-00002.safetensors"},
                                       {"layers.1.experts.w", "model-00002-of-00002.safetensors"},
                                       {"layers.1.down.weight_packed", "model-00002-of-00002.safetensors"},
                                       {"layers.1.down.weight_scale", "model-00002-of-00002.safetensors"},
                                       {"layers.1.down.weight_global_scale", "model-00002-of-00002.safetensors"},
                                       {"lm_head.weight", "model-00002-of-00002.safetensors"}};
  EXPECT_EQ(index["weight_map"], expected_map);
  const nlohmann::json config = read_json(dir / "q/config.json");
  EXPECT_EQ(config["model_type"], "toy");
  EXPECT_EQ(config["quantization_config"]["format"], "nvfp4-pack-quantized");
  EXPECT_EQ(config["quantization_config"]["config_groups"]["group_0"]["weights"]["strategy"], "tensor_group");
  EXPECT_TRUE(file_exists(dir / "q/tokenizer.json"));
  for (const auto& [tensor, shard] : expected_map.items()) {
    st::SafetensorsFile file(dir / "q/" + shard.get<std::string>());
    EXPECT_NE(file.view().find(tensor), nullptr) << tensor;
  }
  {
    st::SafetensorsFile second(dir / "q/model-00002-of-00002.safetensors");
    EXPECT_EQ(second.view().find("layers.1.down.weight_global_scale")->shape, std::vector<int64_t>{1});
    EXPECT_EQ(second.view().find("layers.1.experts.w")->dtype, "BF16");
  }

  const RunResult inspect = run_mxq("inspect " + dir / "q --stats " + dir / "in");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_NE(inspect.output.find("model-00002-of-00002.safetensors"), std::string::npos);

  const RunResult d = run_mxq("dequantize " + dir / "q " + dir / "d");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_EQ(read_json(dir / "d/config.json").count("quantization_config"), 0u);
  st::SafetensorsFile first(dir / "d/model-00001-of-00002.safetensors");
  ASSERT_NE(first.view().find("layers.0.q.weight"), nullptr);
  EXPECT_EQ(first.view().find("layers.0.q.weight")->shape, (std::vector<int64_t>{32, 64}));
}

TEST(Sharded, BadIndexIsRejected) {
  ScratchDir dir;
  write_sharded(dir, "in");
  // A shard name that climbs out of the directory.
  write_text(dir / "in/model.safetensors.index.json",
             R"({"weight_map": {"layers.0.q.weight": "../model-00001-of-00002.safetensors"}})");
  RunResult r = run_mxq("inspect " + dir / "in");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("not a plain file name"), std::string::npos) << r.output;
  // A tensor the index places in the wrong shard.
  write_text(dir / "in/model.safetensors.index.json",
             R"({"weight_map": {"layers.0.q.weight": "model-00002-of-00002.safetensors"}})");
  r = run_mxq("inspect " + dir / "in");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  // A missing shard, and an index that is not JSON.
  write_text(dir / "in/model.safetensors.index.json", R"({"weight_map": {"x": "nope.safetensors"}})");
  EXPECT_EQ(run_mxq("inspect " + dir / "in").exit_code, 3);
  write_text(dir / "in/model.safetensors.index.json", "{");
  EXPECT_EQ(run_mxq("inspect " + dir / "in").exit_code, 3);
}

std::vector<std::string> tensors_of_dtype(const std::string& path, const std::string& dtype) {
  st::SafetensorsFile file(path);
  std::vector<std::string> names;
  for (const auto& t : file.view().tensors())
    if (t.dtype == dtype) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Selection, TargetsAndIgnore) {
  ScratchDir dir;
  write_checkpoint(
      dir / "in.safetensors",
      {normal_tensor("a.q_proj.weight", "BF16", {8, 64}, 1), normal_tensor("a.k_proj.weight", "BF16", {8, 64}, 2),
       normal_tensor("a.experts.w", "BF16", {2, 8, 64}, 3), normal_tensor("lm_head.weight", "BF16", {8, 64}, 4)});
  auto quantized = [&](const std::string& flags) {
    const RunResult r =
        run_mxq("quantize " + dir / "in.safetensors " + dir / "q.safetensors" + " --format mxfp8 --force " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return tensors_of_dtype(dir / "q.safetensors", "F8_E4M3");
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(quantized(""), (Names{"a.k_proj.weight", "a.q_proj.weight"}));
  EXPECT_EQ(quantized("--targets q_proj"), (Names{"a.q_proj.weight"}));
  // --ignore replaces the default (lm_head, embeddings, routers, gates, norms).
  EXPECT_EQ(quantized("--ignore 'k_proj'"), (Names{"a.q_proj.weight", "lm_head.weight"}));
  EXPECT_EQ(quantized("--ignore ''"), (Names{"a.k_proj.weight", "a.q_proj.weight", "lm_head.weight"}));
  EXPECT_EQ(quantized("--targets 'proj' --ignore '^a\\.k'"), (Names{"a.q_proj.weight"}));
  // Fused 3-D experts stay bf16 even when targeted: compressed-tensors has no layout for them.
  const RunResult experts = run_mxq("quantize " + dir / "in.safetensors " + dir / "e.safetensors" +
                                    " --format mxfp8 --targets experts --ignore ''");
  EXPECT_EQ(experts.exit_code, 1) << experts.output;

  const RunResult none = run_mxq("quantize " + dir / "in.safetensors " + dir / "n.safetensors" +
                                 " --format mxfp8 --targets nothing_matches");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("no tensor selected"), std::string::npos);
  EXPECT_FALSE(file_exists(dir / "n.safetensors"));
}

// What MoE checkpoints hold beside their linear weights is kept by default: routers and gates
// (Qwen2-MoE's 1 x H shared_expert_gate too), 2-D expert biases (gpt-oss), norms, embeddings.
TEST(Selection, DefaultsKeepRoutersGatesBiasesAndNorms) {
  ScratchDir dir;
  write_checkpoint(dir / "in.safetensors",
                   {normal_tensor("model.embed_tokens.weight", "BF16", {16, 64}, 1),
                    normal_tensor("model.layers.0.mlp.gate.weight", "BF16", {8, 64}, 2),
                    normal_tensor("model.layers.0.mlp.shared_expert_gate.weight", "BF16", {1, 64}, 3),
                    normal_tensor("model.layers.0.mlp.router.weight", "BF16", {8, 64}, 4),
                    normal_tensor("model.layers.0.mlp.experts.gate_up_proj_bias", "BF16", {4, 64}, 5),
                    normal_tensor("model.layers.0.self_attn.q_proj.bias", "BF16", {64}, 6),
                    normal_tensor("model.layers.0.post_attention_layernorm.weight", "BF16", {64}, 7),
                    normal_tensor("model.norm.weight", "BF16", {64}, 8),
                    normal_tensor("model.layers.0.mlp.shared_expert.up_proj.weight", "BF16", {32, 64}, 9)});
  const RunResult r = run_mxq("quantize " + dir / "in.safetensors " + dir / "q.safetensors --format nvfp4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(tensors_of_dtype(dir / "q.safetensors", "BF16").size(), 8u);
  st::SafetensorsFile out(dir / "q.safetensors");
  EXPECT_NE(out.view().find("model.layers.0.mlp.shared_expert.up_proj.weight_packed"), nullptr);
  const auto config = nlohmann::json::parse(out.view().metadata().at("quantization_config"));
  EXPECT_EQ(config["ignore"],
            nlohmann::json::array({"model.embed_tokens", "model.layers.0.mlp.gate",
                                   "model.layers.0.mlp.shared_expert_gate", "model.layers.0.mlp.router"}));
}

float global_scale_of(const st::SafetensorsView& v, const std::string& weight) {
  const st::TensorInfo* t = v.find(weight + "_global_scale");
  EXPECT_NE(t, nullptr) << weight;
  float s = 0;
  if (t) std::memcpy(&s, v.data(*t), 4);
  return s;
}

// vLLM fuses q/k/v and gate/up into one layer with one NVFP4 global scale: the members must carry
// the same scale, from the amax over all of them (here across two shards).
TEST(SharedScale, FusedGroupsShareTheirNvfp4GlobalScale) {
  ScratchDir dir;
  const std::string root = dir / "in";
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  auto scaled = [](Tensor t, float k) {  // bf16 values times a power of two: exact
    for (size_t i = 0; i + 1 < t.bytes.size(); i += 2) {
      const uint16_t h = static_cast<uint16_t>(t.bytes[i] | (t.bytes[i + 1] << 8));
      const uint16_t s = num::float_to_bf16_rne(num::bf16_to_float(h) * k);
      t.bytes[i] = static_cast<uint8_t>(s);
      t.bytes[i + 1] = static_cast<uint8_t>(s >> 8);
    }
    return t;
  };
  const std::string attn = "model.layers.0.self_attn.", mlp = "model.layers.0.mlp.";
  write_checkpoint(root + "/a.safetensors", {normal_tensor(attn + "q_proj.weight", "BF16", {16, 64}, 1),
                                             scaled(normal_tensor(attn + "k_proj.weight", "BF16", {16, 64}, 2), 8.0f),
                                             normal_tensor(mlp + "gate_proj.weight", "BF16", {16, 64}, 4)});
  write_checkpoint(root + "/b.safetensors", {scaled(normal_tensor(attn + "v_proj.weight", "BF16", {16, 64}, 3), 0.25f),
                                             scaled(normal_tensor(mlp + "up_proj.weight", "BF16", {16, 64}, 5), 4.0f),
                                             scaled(normal_tensor(attn + "o_proj.weight", "BF16", {16, 64}, 6), 2.0f)});
  nlohmann::json index = {{"weight_map",
                           {{attn + "q_proj.weight", "a.safetensors"},
                            {attn + "k_proj.weight", "a.safetensors"},
                            {mlp + "gate_proj.weight", "a.safetensors"},
                            {attn + "v_proj.weight", "b.safetensors"},
                            {mlp + "up_proj.weight", "b.safetensors"},
                            {attn + "o_proj.weight", "b.safetensors"}}}};
  write_text(root + "/model.safetensors.index.json", index.dump());

  const RunResult r = run_mxq("quantize " + root + " " + dir / "q --format nvfp4 --no-stats");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  st::SafetensorsFile a(dir / "q/a.safetensors"), b(dir / "q/b.safetensors");
  const float q = global_scale_of(a.view(), attn + "q_proj.weight");
  const float k = global_scale_of(a.view(), attn + "k_proj.weight");
  const float v = global_scale_of(b.view(), attn + "v_proj.weight");
  EXPECT_EQ(q, k);
  EXPECT_EQ(q, v);
  const float gate = global_scale_of(a.view(), mlp + "gate_proj.weight");
  EXPECT_EQ(gate, global_scale_of(b.view(), mlp + "up_proj.weight"));
  EXPECT_NE(gate, q);
  // o_proj is in no group: its own scale. The scale falls as the amax grows (448 * 6 / amax), and
  // the amaxes are about 7 (o), 14 (gate/up, from up) and 28 (q/k/v, from k).
  const float o = global_scale_of(b.view(), attn + "o_proj.weight");
  EXPECT_GT(o, gate);
  EXPECT_GT(gate, q);

  // --shared-scale names the groups instead of the defaults: here q and o only.
  const RunResult custom =
      run_mxq("quantize " + root + " " + dir / "c --format nvfp4 --no-stats " + "--shared-scale q_proj,o_proj");
  ASSERT_EQ(custom.exit_code, 0) << custom.output;
  st::SafetensorsFile ca(dir / "c/a.safetensors"), cb(dir / "c/b.safetensors");
  EXPECT_EQ(global_scale_of(ca.view(), attn + "q_proj.weight"), global_scale_of(cb.view(), attn + "o_proj.weight"));
  EXPECT_NE(global_scale_of(ca.view(), attn + "k_proj.weight"), global_scale_of(cb.view(), attn + "v_proj.weight"));
  EXPECT_EQ(run_mxq("quantize " + root + " " + dir / "d --format nvfp4 --shared-scale q_proj").exit_code, 2);
}

// A compressed-tensors checkpoint from another tool carries no mxq metadata: its config.json says
// what it holds, and it reads as the same checkpoint with the metadata.
TEST(Reading, CompressedTensorsWithoutMxqMetadata) {
  ScratchDir dir;
  write_sharded(dir, "in");
  ASSERT_EQ(run_mxq("quantize " + dir / "in " + dir / "q --format mxfp4 --no-stats").exit_code, 0);
  const std::string plain = dir / "plain";
  ASSERT_EQ(::mkdir(plain.c_str(), 0755), 0);
  for (const char* other : {"model.safetensors.index.json", "config.json"})
    write_text(plain + "/" + other, read_json(dir / "q/" + other).dump());
  for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    st::SafetensorsFile q(dir / "q/" + shard);
    std::vector<Tensor> tensors;
    for (const auto& t : q.view().tensors())
      tensors.push_back(
          {t.name, t.dtype, t.shape, std::vector<uint8_t>(q.view().data(t), q.view().data(t) + t.bytes())});
    write_checkpoint(plain + "/" + shard, tensors, {{"format", "pt"}});
  }
  const RunResult inspect = run_mxq("inspect " + plain);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_NE(inspect.output.find("mxfp4 data of layers.0.q.weight"), std::string::npos) << inspect.output;
  ASSERT_EQ(run_mxq("dequantize " + dir / "q " + dir / "d1").exit_code, 0);
  const RunResult d = run_mxq("dequantize " + plain + " " + dir / "d2");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    st::SafetensorsFile a(dir / "d1/" + shard), b(dir / "d2/" + shard);
    ASSERT_EQ(a.view().tensors().size(), b.view().tensors().size());
    for (const auto& t : a.view().tensors()) {
      const st::TensorInfo* u = b.view().find(t.name);
      ASSERT_NE(u, nullptr) << t.name;
      EXPECT_EQ(u->shape, t.shape);
      EXPECT_EQ(std::memcmp(a.view().data(t), b.view().data(*u), t.bytes()), 0) << t.name;
    }
  }
}

// A checkpoint directory's side files: regular files are copied, a symlink is not followed (its
// target is not part of the checkpoint), a shard named unlike *.safetensors is not copied over its
// quantized self, and a config.json nested too deep is refused before anything is written.
TEST(Output, SideFilesAreRegularFilesOnly) {
  ScratchDir dir;
  write_sharded(dir, "in");
  write_text(dir / "secret.txt", "private");
  ASSERT_EQ(::symlink((dir / "secret.txt").c_str(), (dir / "in/notes.txt").c_str()), 0);
  write_text(dir / "in/README.md", "a model");
  const RunResult q = run_mxq("quantize " + dir / "in " + dir / "q --format mxfp8 --no-stats");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  EXPECT_NE(q.output.find("notes.txt is a symbolic link; not copied"), std::string::npos) << q.output;
  EXPECT_FALSE(file_exists(dir / "q/notes.txt"));
  EXPECT_TRUE(file_exists(dir / "q/README.md"));

  // A shard called weights.bin: quantized, and kept so.
  const std::string bin = dir / "bin";
  ASSERT_EQ(::mkdir(bin.c_str(), 0755), 0);
  write_checkpoint(bin + "/weights.bin", {normal_tensor("a.weight", "BF16", {8, 64}, 1)});
  write_text(bin + "/model.safetensors.index.json", R"({"weight_map": {"a.weight": "weights.bin"}})");
  ASSERT_EQ(run_mxq("quantize " + bin + " " + dir / "qb --format mxfp8").exit_code, 0);
  st::SafetensorsFile qb(dir / "qb/weights.bin");
  ASSERT_NE(qb.view().find("a.weight"), nullptr);
  EXPECT_EQ(qb.view().find("a.weight")->dtype, "F8_E4M3");

  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "[";
  write_text(dir / "in/config.json", "{\"a\": " + deep + "}");
  const RunResult d = run_mxq("quantize " + dir / "in " + dir / "qd --format mxfp8");
  EXPECT_EQ(d.exit_code, 3) << d.output;
  EXPECT_NE(d.output.find("nests deeper than 64 levels"), std::string::npos) << d.output;
  EXPECT_FALSE(file_exists(dir / "qd"));
  write_text(dir / "in/config.json", R"({"s": "a \\\" [[[[ string", "model_type": "toy"})");
  EXPECT_EQ(run_mxq("quantize " + dir / "in " + dir / "qs --format mxfp8").exit_code, 0);
}

// An existing output is refused unless --force; a special file never.
TEST(Output, ExistingOutputNeedsForce) {
  ScratchDir dir;
  write_checkpoint(dir / "in.safetensors", {normal_tensor("a.weight", "BF16", {8, 64}, 1)});
  const std::string q = "quantize " + dir / "in.safetensors " + dir / "q.safetensors --format mxfp8";
  ASSERT_EQ(run_mxq(q).exit_code, 0);
  const RunResult again = run_mxq(q);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("exists; give --force"), std::string::npos) << again.output;
  EXPECT_EQ(run_mxq(q + " --force --json " + dir / "summary.json").exit_code, 0);
  const nlohmann::json summary = read_json(dir / "summary.json");
  EXPECT_EQ(summary["format"], "mxfp8");
  EXPECT_EQ(summary["layout"], "compressed-tensors");
  EXPECT_EQ(summary["quantized"], 1);
  ASSERT_EQ(summary["tensors"].size(), 1u);
  EXPECT_EQ(summary["tensors"][0]["name"], "a.weight");
  EXPECT_EQ(summary["tensors"][0]["shape"], nlohmann::json::array({8, 64}));
  EXPECT_EQ(summary["tensors"][0]["bytes_after"], 8 * 64 + 8 * 2);
  EXPECT_GT(summary["tensors"][0]["sqnr_db"].get<double>(), 28.0);
  const RunResult special = run_mxq("quantize " + dir / "in.safetensors /dev/null --format mxfp8 --force");
  EXPECT_EQ(special.exit_code, 2);
  EXPECT_NE(special.output.find("not a regular file or directory"), std::string::npos) << special.output;
}

TEST(Errors, ExitCodesAndMessages) {
  ScratchDir dir;
  write_checkpoint(dir / "in.safetensors", {normal_tensor("w", "BF16", {8, 64}, 1)});
  const std::string in = dir / "in.safetensors", out = dir / "out.safetensors";
  struct Case {
    std::string args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", 2, "A subcommand is required"},
      {"frobnicate", 2, "A subcommand is required"},
      {"quantize " + in + " " + out, 2, "--format is required"},
      {"quantize " + in + " " + out + " --format mxfp6", 2,
       "--format: mxfp6 is not one of {mxfp4,mxfp8,mxfp8_e5m2,nvfp4}"},
      {"quantize " + in + " " + out + " --format 0", 2, "--format: 0 is not one of"},
      {"quantize " + in + " " + out + " --format mxfp8 --scale-rule up", 2,
       "--scale-rule: up is not one of {floor,rceil}"},
      {"demo --backend 1", 2, "--backend: 1 is not one of {auto,cpu,cuda}"},
      {"quantize " + in + " " + out + " --format mxfp8 --targets '('", 2, "invalid --targets"},
      {"quantize " + dir / "missing.safetensors " + out + " --format mxfp8", 3, "no such file"},
      {"quantize " + in + " " + in + " --format mxfp8", 2, "must differ from the input"},
      {"quantize " + in + " " + dir.path() + " --format mxfp8", 2, "is a directory"},
      {"dequantize " + in + " " + out, 3, "not a quantized checkpoint mxq reads"},
      {"inspect " + dir / "missing.safetensors", 3, "no such file"},
      {"inspect " + in + " --stats " + dir / "missing.safetensors", 3, "no such file"},
  };
  for (const Case& c : cases) {
    const RunResult r = run_mxq(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
  EXPECT_FALSE(file_exists(out));
  EXPECT_EQ(run_mxq("--version").exit_code, 0);
  EXPECT_EQ(run_mxq("quantize --help").exit_code, 0);
}

// A quantized file whose scale tensor does not match its data is untrusted input, not a crash.
TEST(Errors, InconsistentQuantizedWeightIsRejected) {
  ScratchDir dir;
  const std::map<std::string, std::string> meta = {
      {"mxq_format", "mxfp4"}, {"mxq_scale_rule", "rceil"}, {"mxq_scale_layout", "linear"}};
  write_checkpoint(dir / "q.safetensors",
                   {Tensor{"w.weight_packed", "U8", {64, 64}, std::vector<uint8_t>(64 * 64)},
                    Tensor{"w.weight_scale", "U8", {64, 2}, std::vector<uint8_t>(64 * 2)}},
                   meta);
  for (const std::string& command :
       {"dequantize " + dir / "q.safetensors " + dir / "d.safetensors", "inspect " + dir / "q.safetensors"}) {
    const RunResult r = run_mxq(command);
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find("wrong dtype or shape"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(file_exists(dir / "d.safetensors"));
}

TEST(Writer, UncommittedOutputLeavesNothing) {
  ScratchDir dir;
  {
    st::SafetensorsWriter writer(dir / "x.safetensors", {{"a", "U8", {4}}, {"b", "U8", {4}}}, {});
    const uint8_t bytes[4] = {1, 2, 3, 4};
    writer.write("a", bytes, 4);
    EXPECT_THROW(writer.write("a", bytes, 1), st::WriteError);  // past its size
    EXPECT_THROW(writer.commit(), st::WriteError);              // b never written
  }
  EXPECT_FALSE(file_exists(dir / "x.safetensors"));
  const RunResult ls = run_mxq("inspect " + dir.path());  // the directory holds nothing at all
  EXPECT_NE(ls.exit_code, 0);
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + dir.path() + "')\"").c_str()), 0);
  EXPECT_THROW(st::SafetensorsWriter(dir / "y.safetensors", {{"a", "U8", {1}}, {"a", "U8", {1}}}, {}), st::WriteError);
}

}  // namespace
}  // namespace mxq::clitest

namespace mxq::clitest {
namespace {

int temp_files_in(const std::string& dir) {
  int n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) n += std::string(e->d_name).rfind(".mxq-tmp-", 0) == 0;
    ::closedir(d);
  }
  return n;
}

// A 128 MB checkpoint: long enough to quantize that a test can act while the output is written.
void write_big_checkpoint(const std::string& path) {
  std::vector<Tensor> big;
  for (int i = 0; i < 8; ++i)
    big.push_back(normal_tensor("l" + std::to_string(i) + ".weight", "BF16", {1024, 4096}, i));
  write_checkpoint(path, big);
}

// Starts `mxq quantize IN OUT --format mxfp8 --backend cpu --force --quiet` (stderr to `stderr_fd`
// when >= 0) and returns once its temporary output file exists (false: it never appeared).
bool start_quantize(const ScratchDir& dir, int stderr_fd, pid_t* pid) {
  *pid = ::fork();
  if (*pid == 0) {
    if (stderr_fd >= 0) ::dup2(stderr_fd, STDERR_FILENO);
    ::execl(MXQ_CLI_PATH, "mxq", "quantize", (dir / "in.safetensors").c_str(), (dir / "q.safetensors").c_str(),
            "--format", "mxfp8", "--backend", "cpu", "--force", "--quiet", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 20000; ++i) {
    if (temp_files_in(dir.path()) > 0) return true;
    ::usleep(500);
  }
  return false;
}

// Names and metadata from a file cannot drive the terminal: control characters print as \xNN.
TEST(Inspect, ControlCharactersArePrintedEscaped) {
  ScratchDir dir;
  write_checkpoint(dir / "in.safetensors", {normal_tensor("evil\x1b[2Jname.weight", "BF16", {8, 64}, 1)},
                   {{"note\x07", "ring\x1b]0;title\x07"}});
  const RunResult r = run_mxq("inspect " + dir / "in.safetensors");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.output.find('\x07'), std::string::npos);
  EXPECT_NE(r.output.find("evil\\x1B[2Jname.weight"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("note\\x07 = ring\\x1B]0;title\\x07"), std::string::npos) << r.output;
}

// A run stopped by SIGTERM or SIGINT while it writes leaves no temporary file behind.
TEST(Writer, SignalsRemoveTheTemporaryFile) {
  ScratchDir dir;
  write_big_checkpoint(dir / "in.safetensors");
  for (int sig : {SIGTERM, SIGINT}) {
    pid_t pid = 0;
    const bool seen = start_quantize(dir, -1, &pid);
    ASSERT_GT(pid, 0);
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!seen || !WIFSIGNALED(status)) GTEST_SKIP() << "the run ended before it could be stopped";
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_EQ(temp_files_in(dir.path()), 0) << "signal " << sig;
    EXPECT_FALSE(file_exists(dir / "q.safetensors"));
  }
}

// Outputs get the permission bits of the input they replace, less the umask, and a failed write is
// an I/O failure (exit 1), not a malformed input (3).
TEST(Writer, OutputModesFollowTheInputAndTheUmask) {
  ScratchDir dir;
  write_checkpoint(dir / "in.safetensors", {normal_tensor("a.weight", "BF16", {8, 64}, 1)});
  const std::string mxq = MXQ_CLI_PATH;
  auto mode_of = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 0777;
  };
  ASSERT_EQ(::chmod((dir / "in.safetensors").c_str(), 0640), 0);
  ASSERT_EQ(std::system(("umask 022; " + mxq + " quantize " + dir / "in.safetensors " + dir / "a.safetensors" +
                         " --format mxfp8 > /dev/null")
                            .c_str()),
            0);
  EXPECT_EQ(mode_of(dir / "a.safetensors"), 0640u);
  ASSERT_EQ(::chmod((dir / "in.safetensors").c_str(), 0666), 0);
  ASSERT_EQ(std::system(("umask 077; " + mxq + " quantize " + dir / "in.safetensors " + dir / "b.safetensors" +
                         " --format mxfp8 > /dev/null")
                            .c_str()),
            0);
  EXPECT_EQ(mode_of(dir / "b.safetensors"), 0600u);
  const RunResult missing =
      run_mxq("quantize " + dir / "in.safetensors " + dir / "no/such/dir/q.safetensors --format mxfp8");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("cannot create a temporary file"), std::string::npos) << missing.output;
}

// An input truncated while it is mapped (reading past its new end raises SIGBUS): a message, the
// malformed-input exit code, and no temporary file left behind.
TEST(Writer, InputTruncatedWhileReadIsReported) {
  ScratchDir dir;
  write_big_checkpoint(dir / "in.safetensors");
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t pid = 0;
  const bool seen = start_quantize(dir, pipe_fds[1], &pid);
  ASSERT_GT(pid, 0);
  ::close(pipe_fds[1]);
  ASSERT_EQ(::truncate((dir / "in.safetensors").c_str(), 4096), 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  char buf[4096];
  const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
  ::close(pipe_fds[0]);
  const std::string err(buf, n > 0 ? size_t(n) : 0);
  if (!seen || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
    GTEST_SKIP() << "the run ended before the input could be cut";
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 3) << err;
  EXPECT_NE(err.find("truncated or changed while being read"), std::string::npos) << err;
  EXPECT_EQ(temp_files_in(dir.path()), 0);
}

}  // namespace
}  // namespace mxq::clitest
