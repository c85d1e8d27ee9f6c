// `mxq quantize IN OUT --format F`: quantizes the selected 2-D / 3-D float weights of a checkpoint
// rowwise along their input dimension and writes a compressed-tensors checkpoint
// (compressed_tensors.hpp); every other tensor is copied unchanged. Works shard by shard and
// tensor by tensor: inputs are memory-mapped, one quantized tensor is held at a time.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <regex>
#include <set>

#include "backend_memory.hpp"
#include "checkpoint.hpp"
#include "checkpoint_output.hpp"
#include "cli_error.hpp"
#include "commands.hpp"
#include "compressed_tensors.hpp"
#include "enum_names.hpp"
#include "progress.hpp"
#include "safetensors_writer.hpp"
#include "sqnr.hpp"
#include "table.hpp"
#include "weight_codec.hpp"

namespace mxq::cli {
namespace {

// Kept in bf16 by default, as quantization recipes do: embeddings, the LM head, MoE routers.
constexpr const char* kDefaultExclude = R"((^|\.)(lm_head|embed_tokens|wte|wpe|router|gate)\.)";

struct QuantizeOptions {
  std::string in, out;
  QuantSettings settings;
  std::string include, exclude = kDefaultExclude;
  Backend backend = Backend::auto_;
  bool quiet = false;
};

struct Selection {
  std::regex include, exclude;
  bool has_include = false, has_exclude = false;
};

Selection make_selection(const QuantizeOptions& opt) {
  Selection s;
  try {
    s.has_include = !opt.include.empty();
    s.has_exclude = !opt.exclude.empty();
    if (s.has_include) s.include = std::regex(opt.include);
    if (s.has_exclude) s.exclude = std::regex(opt.exclude);
  } catch (const std::regex_error& e) {
    throw CliError(kExitUsage, std::string("invalid --include/--exclude regex: ") + e.what());
  }
  return s;
}

// One input tensor's fate: quantized, or copied with the reason when it was a float matrix.
struct Plan {
  const st::TensorInfo* tensor;
  bool quantize = false;
  std::string kept_reason;  // non-empty for float 2-D/3-D tensors left as they are
};

std::string module_of(const std::string& name) {
  const std::string suffix = ".weight";
  return name.size() > suffix.size() &&
                 name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0
             ? name.substr(0, name.size() - suffix.size())
             : name;
}

std::vector<Plan> plan_shard(const st::SafetensorsView& view, const QuantizeOptions& opt,
                             const Selection& sel) {
  std::vector<Plan> plans;
  for (const st::TensorInfo& t : view.tensors()) {
    Plan p{&t, false, ""};
    const bool matrix = float_dtype(t.dtype) && (t.shape.size() == 2 || t.shape.size() == 3);
    const std::string reason = unquantizable_reason(t, opt.settings.format);
    if (sel.has_include && !std::regex_search(t.name, sel.include))
      p.kept_reason = "not included";
    else if (sel.has_exclude && std::regex_search(t.name, sel.exclude))
      p.kept_reason = "excluded";
    else if (!reason.empty())
      p.kept_reason = reason;
    else
      p.quantize = true;
    if (!matrix && !p.quantize) p.kept_reason.clear();  // biases, norms, integers: plain copies
    plans.push_back(p);
  }
  return plans;
}

std::vector<st::TensorSpec> output_specs(const std::vector<Plan>& plans, const QuantSettings& s) {
  std::vector<st::TensorSpec> specs;
  for (const Plan& p : plans) {
    const st::TensorInfo& t = *p.tensor;
    if (!p.quantize) {
      specs.push_back({t.name, t.dtype, t.shape});
      continue;
    }
    const QuantizedNames names = quantized_names(t.name, s.format);
    specs.push_back({names.data, data_dtype(s.format), data_shape(t.shape, s.format)});
    specs.push_back({names.scale, scale_dtype(s.format), scale_shape(t.shape, s)});
    if (!names.global_scale.empty())
      specs.push_back({names.global_scale, "F32", {t.shape.size() == 3 ? t.shape[0] : 1}});
  }
  return specs;
}

void run_quantize(const QuantizeOptions& opt) {
  const Backend backend = resolve_backend(opt.backend);
  const Selection sel = make_selection(opt);
  const Checkpoint in(opt.in);
  CheckpointOutput out(in, opt.out);
  const QuantSettings& s = opt.settings;

  // A first pass over the headers: total bytes for the progress bar and the ignore list.
  int64_t total_bytes = 0, quantized_count = 0;
  std::vector<std::string> ignored;
  for (size_t i = 0; i < in.shard_names().size(); ++i) {
    const auto file = in.open_shard(i);
    for (const Plan& p : plan_shard(file->view(), opt, sel)) {
      total_bytes += static_cast<int64_t>(p.tensor->bytes());
      quantized_count += p.quantize;
      if (!p.kept_reason.empty()) ignored.push_back(module_of(p.tensor->name));
    }
  }
  if (quantized_count == 0)
    throw CliError(kExitFailure, "no tensor selected for quantization (check --include/--exclude)");
  const nlohmann::json config = quantization_config(s, ignored);

  std::printf("mxq quantize: %s -> %s, format %s, scale rule %s, scale layout %s, backend %s\n",
              opt.in.c_str(), opt.out.c_str(), to_string(s.format), to_string(s.rule),
              to_string(s.layout), to_string(backend));
  Table table({"tensor", "shape", "dtype", "format", "bytes before", "bytes after", "SQNR dB"});
  Progress progress(total_bytes, !opt.quiet);
  Sqnr overall;
  int64_t bytes_before = 0, bytes_after = 0, copied = 0;
  const auto start = std::chrono::steady_clock::now();
  std::set<std::string> written_names;

  for (size_t i = 0; i < in.shard_names().size(); ++i) {
    const auto file = in.open_shard(i);
    const st::SafetensorsView& view = file->view();
    const std::vector<Plan> plans = plan_shard(view, opt, sel);
    const std::vector<st::TensorSpec> specs = output_specs(plans, s);
    for (const st::TensorSpec& spec : specs)
      if (!written_names.insert(spec.name).second)
        throw CliError(kExitBadInput, "output tensor '" + spec.name +
                                          "' would exist twice (the input already has it)");

    std::map<std::string, std::string> metadata = view.metadata();
    metadata.emplace("format", "pt");  // transformers refuses safetensors without it
    for (const auto& [key, value] : settings_metadata(s)) metadata[key] = value;
    metadata["quantization_config"] = config.dump();
    st::SafetensorsWriter writer(out.shard_path(i), specs, metadata);

    for (const Plan& p : plans) {
      const st::TensorInfo& t = *p.tensor;
      if (!p.quantize) {
        writer.write(t.name, view.data(t), t.bytes());
        out.add_to_index(t.name, i, t.bytes());
        ++copied;
        if (!p.kept_reason.empty())
          table.add({t.name, format_shape(t.shape), t.dtype, "kept: " + p.kept_reason,
                     std::to_string(t.bytes()), std::to_string(t.bytes()), "-"});
      } else {
        const EncodedWeight w = encode_weight(backend, s, t, view.data(t));
        const QuantizedNames names = quantized_names(t.name, s.format);
        writer.write(names.data, w.data.data(), w.data.size());
        writer.write(names.scale, w.scales.data(), w.scales.size());
        out.add_to_index(names.data, i, w.data.size());
        out.add_to_index(names.scale, i, w.scales.size());
        int64_t after = static_cast<int64_t>(w.data.size() + w.scales.size());
        if (!names.global_scale.empty()) {
          writer.write(names.global_scale, w.global_scale.data(), w.global_scale.size() * 4);
          out.add_to_index(names.global_scale, i, w.global_scale.size() * 4);
          after += static_cast<int64_t>(w.global_scale.size() * 4);
        }
        bytes_before += static_cast<int64_t>(t.bytes());
        bytes_after += after;
        table.add({t.name, format_shape(t.shape), t.dtype, to_string(s.format),
                   std::to_string(t.bytes()), std::to_string(after), format_db(w.sqnr_db)});
      }
      progress.advance(static_cast<int64_t>(t.bytes()), t.name);
    }
    writer.commit();
  }
  out.finish([&](nlohmann::json& cfg) { cfg["quantization_config"] = config; });
  progress.finish();

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n");
  table.print(stdout);
  std::printf("\n%lld tensors quantized: %s -> %s (%.2fx); %lld copied unchanged; %.2f s, %.1f MB/s\n",
              static_cast<long long>(quantized_count), format_bytes(bytes_before).c_str(),
              format_bytes(bytes_after).c_str(),
              bytes_after ? static_cast<double>(bytes_before) / bytes_after : 0.0,
              static_cast<long long>(copied), seconds,
              seconds > 0 ? total_bytes / seconds / 1e6 : 0.0);
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto opt = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Quantize a safetensors checkpoint (file or sharded directory) to compressed-tensors");
  cmd->add_option("IN", opt->in, "input .safetensors file or checkpoint directory")->required();
  cmd->add_option("OUT", opt->out, "output file (file input) or directory (directory input)")
      ->required();
  cmd->add_option("--format", opt->settings.format, "mxfp8, mxfp8_e5m2, mxfp4 or nvfp4")
      ->required()
      ->transform(options::name_choice(format_names()));
  cmd->add_option("--scale-rule", opt->settings.rule, "E8M0 scale rule: rceil or floor")
      ->transform(options::name_choice(scale_rule_names()));
  cmd->add_option("--scale-layout", opt->settings.layout,
                  "scales as stored: linear (what loaders read) or blocked (128x4 swizzle)")
      ->transform(options::name_choice(scale_layout_names()));
  cmd->add_option("--include", opt->include, "quantize only tensors whose name matches (regex)");
  cmd->add_option("--exclude", opt->exclude, "never quantize tensors whose name matches (regex)")
      ->capture_default_str();
  cmd->add_option("--backend", opt->backend, "auto, cpu or cuda")
      ->transform(options::name_choice(backend_names()));
  cmd->add_flag("--quiet", opt->quiet, "no progress bar");
  cmd->callback([opt] { run_quantize(*opt); });
}

}  // namespace mxq::cli
