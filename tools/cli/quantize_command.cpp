// `mxq quantize IN OUT --format F`: quantizes the selected 2-D float weights of a checkpoint
// (selection.hpp) rowwise along their input dimension and writes a compressed-tensors checkpoint
// (compressed_tensors.hpp); every other tensor is copied unchanged. Works shard by shard and
// tensor by tensor: inputs are memory-mapped, one quantized tensor is held at a time.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "background_jobs.hpp"
#include "backend_memory.hpp"
#include "checkpoint.hpp"
#include "checkpoint_output.hpp"
#include "cli_error.hpp"
#include "commands.hpp"
#include "compressed_tensors.hpp"
#include "enum_names.hpp"
#include "gpt_oss.hpp"
#include "progress.hpp"
#include "safetensors_writer.hpp"
#include "selection.hpp"
#include "sqnr.hpp"
#include "table.hpp"
#include "weight_codec.hpp"

namespace mxq::cli {
namespace {

struct QuantizeOptions {
  std::string in, out;
  QuantSettings settings;
  std::string targets = kDefaultTargets, ignore = kDefaultIgnore;
  std::vector<std::string> shared_scales;  // --shared-scale lists; empty: default_scale_groups()
  Backend backend = Backend::auto_;
  std::string json;  // a JSON summary to write, when given
  bool quiet = false, force = false, stats = true;
};

// Options whose checkpoint a loader would read wrongly, refused with the reason.
void refuse_misread_settings(const QuantSettings& s) {
  if (s.layout == ScaleLayout::blocked)
    throw CliError(kExitUsage,
                   "--scale-layout blocked: compressed-tensors loaders (vLLM, transformers) read "
                   "scales as linear (rows, K/block) matrices and would misread the 128x4 tiles; "
                   "swizzle the scales when loading instead (mxq.swizzle)");
  if (s.format == Format::mxfp8_e5m2)
    throw CliError(kExitUsage,
                   "--format mxfp8_e5m2: compressed-tensors has no e5m2 MX format; loaders would "
                   "read the codes as e4m3");
}

// The larger of two amaxes; NaN wins, as in the library's tensor amax.
float nan_max(float a, float b) { return a != a || b != b ? std::numeric_limits<float>::quiet_NaN() : std::max(a, b); }

// One input tensor's fate: quantized, or copied with the reason when it was a float matrix.
struct Plan {
  const st::TensorInfo* tensor;
  bool quantize = false;
  std::string kept_reason;  // non-empty for float 2-D/3-D tensors left as they are
};

// A line of the summary: a quantized weight, or a float matrix kept with the reason.
struct Outcome {
  std::string name, dtype;
  std::vector<int64_t> shape;
  int64_t bytes_before;
  std::string action;
  int64_t bytes_after;
  std::optional<double> sqnr_db;
};

Outcome outcome(const st::TensorInfo& t, const std::string& action, int64_t bytes_after,
                std::optional<double> sqnr_db) {
  return {t.name, t.dtype, t.shape, static_cast<int64_t>(t.bytes()), action, bytes_after, sqnr_db};
}

// Where the quantized weights go: compressed-tensors (Linear weights), or gpt-oss's own MXFP4
// layout for its fused experts (a gpt-oss checkpoint quantized to mxfp4).
enum class Layout { compressed_tensors, gpt_oss };

std::string module_of(const std::string& name) {
  const std::string suffix = ".weight";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0
             ? name.substr(0, name.size() - suffix.size())
             : name;
}

std::vector<Plan> plan_shard(const st::SafetensorsView& view, const QuantSettings& s, const Selection& sel,
                             Layout layout) {
  std::vector<Plan> plans;
  for (const st::TensorInfo& t : view.tensors()) {
    Plan p{&t, false, layout == Layout::gpt_oss ? gpt_oss::kept_reason(t) : sel.kept_reason(t, s.format)};
    p.quantize = p.kept_reason.empty();
    const bool matrix = float_dtype(t.dtype) && (t.shape.size() == 2 || t.shape.size() == 3);
    if (!matrix || p.kept_reason == kBiasOr1D) p.kept_reason.clear();  // plain copies
    plans.push_back(p);
  }
  return plans;
}

std::vector<st::TensorSpec> output_specs(const std::vector<Plan>& plans, const QuantSettings& s, Layout layout) {
  std::vector<st::TensorSpec> specs;
  for (const Plan& p : plans) {
    const st::TensorInfo& t = *p.tensor;
    if (!p.quantize) {
      specs.push_back({t.name, t.dtype, t.shape});
      continue;
    }
    if (layout == Layout::gpt_oss) {
      specs.push_back({gpt_oss::blocks_name(t.name), "U8", gpt_oss::blocks_shape(t.shape)});
      specs.push_back({gpt_oss::scales_name(t.name), "U8", gpt_oss::scales_shape(t.shape)});
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
  const QuantSettings& s = opt.settings;
  refuse_misread_settings(s);
  const Backend backend = resolve_backend(opt.backend);
  const Selection sel(opt.targets, opt.ignore);
  std::vector<ScaleGroup> scale_groups;
  for (const std::string& g : opt.shared_scales) scale_groups.push_back(parse_scale_group(g));
  if (opt.shared_scales.empty()) scale_groups = default_scale_groups();
  const Checkpoint in(opt.in);
  const Layout layout =
      gpt_oss::is_gpt_oss(model_config(in)) && s.format == Format::mxfp4 ? Layout::gpt_oss : Layout::compressed_tensors;
  CheckpointOutput out(in, opt.out, opt.force);

  // A first pass over the headers: total bytes for the progress bar, the ignore list (the Linear
  // modules kept) and, for nvfp4, the amax of each fused group over all its members and shards.
  int64_t total_bytes = 0, quantized_count = 0;
  std::vector<std::string> ignored;
  std::map<std::string, float> group_amax;
  for (size_t i = 0; i < in.shard_names().size(); ++i) {
    const auto file = in.open_shard(i);
    for (const Plan& p : plan_shard(file->view(), s, sel, layout)) {
      total_bytes += static_cast<int64_t>(p.tensor->bytes());
      quantized_count += p.quantize;
      if (!p.kept_reason.empty() && p.tensor->shape.size() == 2) ignored.push_back(module_of(p.tensor->name));
      const auto key = scale_group_key(p.tensor->name, scale_groups);
      if (p.quantize && s.format == Format::nvfp4 && key) {
        const float a = weight_amax(backend, *p.tensor, file->view().data(*p.tensor))[0];
        file->release(*p.tensor);
        auto [it, fresh] = group_amax.emplace(*key, a);
        if (!fresh) it->second = nan_max(it->second, a);
      }
    }
  }
  if (quantized_count == 0)
    throw CliError(kExitFailure, "no tensor selected for quantization (check --targets/--ignore)");
  const nlohmann::json config =
      layout == Layout::gpt_oss ? gpt_oss::quantization_config() : quantization_config(s, ignored);

  std::printf("mxq quantize: %s -> %s, format %s, scale rule %s, scale layout %s, backend %s, %s\n", opt.in.c_str(),
              opt.out.c_str(), to_string(s.format), to_string(s.rule), to_string(s.layout), to_string(backend),
              layout == Layout::gpt_oss ? "gpt-oss MXFP4 experts" : "compressed-tensors");
  std::vector<Outcome> outcomes;  // quantized weights and kept float matrices, for the summary
  Progress progress(total_bytes, !opt.quiet);
  int64_t bytes_before = 0, bytes_after = 0, copied = 0;
  const auto start = std::chrono::steady_clock::now();
  std::set<std::string> written_names;
  // Outputs are written in order on a background thread while the next weights are quantized; two
  // encoders take turns, and an encoder is reused only once the writes from its buffers are done.
  // Their buffers serve every weight of the run.
  WeightEncoder encoders[2] = {WeightEncoder(backend, s), WeightEncoder(backend, s)};
  int turn = 0;

  for (size_t i = 0; i < in.shard_names().size(); ++i) {
    const auto file = in.open_shard(i);
    const st::SafetensorsView& view = file->view();
    const std::vector<Plan> plans = plan_shard(view, s, sel, layout);
    const std::vector<st::TensorSpec> specs = output_specs(plans, s, layout);
    for (const st::TensorSpec& spec : specs)
      if (!written_names.insert(spec.name).second)
        throw CliError(kExitBadInput, "output tensor '" + spec.name + "' would exist twice (the input already has it)");

    std::map<std::string, std::string> metadata = view.metadata();
    metadata.emplace("format", "pt");  // transformers refuses safetensors without it
    for (const auto& [key, value] : settings_metadata(s)) metadata[key] = value;
    metadata["quantization_config"] = config.dump();
    st::SafetensorsWriter writer(out.shard_path(i), specs, metadata, st::permission_bits(in.shard_path(i)));
    BackgroundJobs writing;  // declared after what its jobs use, so it stops first on an error
    uint64_t encoder_writes[2] = {0, 0};  // the ticket of the last write from each encoder's buffers

    for (const Plan& p : plans) {
      const st::TensorInfo& t = *p.tensor;
      if (!p.quantize) {
        writing.submit([&writer, &file, &t] {
          // A piece at a time, each released once written, so a large tensor is never resident whole.
          constexpr uint64_t kPiece = uint64_t{8} << 20;
          const uint8_t* data = file->view().data(t);
          for (uint64_t at = 0; at < t.bytes() || at == 0; at += kPiece) {
            const uint64_t n = std::min<uint64_t>(kPiece, t.bytes() - at);
            writer.write(t.name, data + at, n);
            file->release_bytes(data + at, n);
          }
        });
        out.add_to_index(t.name, i, t.bytes());
        ++copied;
        if (!p.kept_reason.empty())
          outcomes.push_back(outcome(t, "kept: " + p.kept_reason, static_cast<int64_t>(t.bytes()), std::nullopt));
      } else if (layout == Layout::gpt_oss) {
        const gpt_oss::Encoded w = gpt_oss::encode(backend, s.rule, t, view.data(t), opt.stats);
        writing.wait_all();
        writer.write(gpt_oss::blocks_name(t.name), w.blocks.data(), w.blocks.size());
        writer.write(gpt_oss::scales_name(t.name), w.scales.data(), w.scales.size());
        file->release(t);
        out.add_to_index(gpt_oss::blocks_name(t.name), i, w.blocks.size());
        out.add_to_index(gpt_oss::scales_name(t.name), i, w.scales.size());
        const int64_t after = static_cast<int64_t>(w.blocks.size() + w.scales.size());
        bytes_before += static_cast<int64_t>(t.bytes());
        bytes_after += after;
        outcomes.push_back(outcome(t, "mxfp4 (gpt-oss blocks)", after, w.sqnr_db));
      } else {
        const auto key = scale_group_key(t.name, scale_groups);
        const auto shared = key ? group_amax.find(*key) : group_amax.end();
        WeightEncoder& encoder = encoders[turn];
        writing.wait(encoder_writes[turn]);
        const EncodedWeight w =
            encoder.encode(t, view.data(t), shared != group_amax.end() ? &shared->second : nullptr, opt.stats);
        file->release(t);
        const QuantizedNames names = quantized_names(t.name, s.format);
        encoder_writes[turn] = writing.submit([&writer, names, w] {
          writer.write(names.data, w.data.data, w.data.size);
          writer.write(names.scale, w.scales.data, w.scales.size);
          if (!names.global_scale.empty()) writer.write(names.global_scale, w.global_scale.data, w.global_scale.size);
        });
        turn ^= 1;
        out.add_to_index(names.data, i, w.data.size);
        out.add_to_index(names.scale, i, w.scales.size);
        int64_t after = static_cast<int64_t>(w.data.size + w.scales.size);
        if (!names.global_scale.empty()) {
          out.add_to_index(names.global_scale, i, w.global_scale.size);
          after += static_cast<int64_t>(w.global_scale.size);
        }
        bytes_before += static_cast<int64_t>(t.bytes());
        bytes_after += after;
        outcomes.push_back(outcome(t, to_string(s.format), after, w.sqnr_db));
      }
      progress.advance(static_cast<int64_t>(t.bytes()), t.name);
    }
    writing.wait_all();
    writer.commit();
  }
  out.finish([&](nlohmann::json& cfg) { cfg["quantization_config"] = config; });
  progress.finish();

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n");
  Table table({"tensor", "shape", "dtype", "format", "bytes before", "bytes after", "SQNR dB"});
  for (const Outcome& o : outcomes)
    table.add({o.name, format_shape(o.shape), o.dtype, o.action, std::to_string(o.bytes_before),
               std::to_string(o.bytes_after), o.sqnr_db ? format_db(*o.sqnr_db) : "-"});
  table.print(stdout);
  if (!opt.json.empty()) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const Outcome& o : outcomes)
      tensors.push_back(
          {{"name", o.name},
           {"shape", o.shape},
           {"dtype", o.dtype},
           {"action", o.action},
           {"bytes_before", o.bytes_before},
           {"bytes_after", o.bytes_after},
           {"sqnr_db", o.sqnr_db && std::isfinite(*o.sqnr_db) ? nlohmann::json(*o.sqnr_db) : nlohmann::json(nullptr)}});
    const nlohmann::json summary = {{"input", opt.in},
                                    {"output", opt.out},
                                    {"format", to_string(s.format)},
                                    {"scale_rule", to_string(s.rule)},
                                    {"backend", to_string(backend)},
                                    {"layout", layout == Layout::gpt_oss ? "gpt-oss-mxfp4" : "compressed-tensors"},
                                    {"quantized", quantized_count},
                                    {"copied", copied},
                                    {"input_bytes", total_bytes},
                                    {"quantized_bytes_before", bytes_before},
                                    {"quantized_bytes_after", bytes_after},
                                    {"seconds", seconds},
                                    {"tensors", tensors}};
    write_file_atomically(opt.json, summary.dump(2) + "\n");
  }
  std::printf("\n%lld tensors quantized: %s -> %s (%.2fx); %lld copied unchanged; %.2f s, %.1f MB/s\n",
              static_cast<long long>(quantized_count), format_bytes(bytes_before).c_str(),
              format_bytes(bytes_after).c_str(), bytes_after ? static_cast<double>(bytes_before) / bytes_after : 0.0,
              static_cast<long long>(copied), seconds, seconds > 0 ? total_bytes / seconds / 1e6 : 0.0);
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto opt = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Quantize a safetensors checkpoint (file or sharded directory) to compressed-tensors");
  cmd->add_option("IN", opt->in, "input .safetensors file or checkpoint directory")->required();
  cmd->add_option("OUT", opt->out, "output file (file input) or directory (directory input)")->required();
  cmd->add_option("--format", opt->settings.format, "mxfp8, mxfp8_e5m2, mxfp4 or nvfp4")
      ->required()
      ->transform(options::name_choice(format_names()));
  cmd->add_option("--scale-rule", opt->settings.rule, "E8M0 scale rule: rceil or floor")
      ->transform(options::name_choice(scale_rule_names()));
  cmd->add_option("--scale-layout", opt->settings.layout,
                  "scales as stored: linear, what loaders read (blocked is refused: loaders would "
                  "misread it)")
      ->transform(options::name_choice(scale_layout_names()));
  cmd->add_option("--targets", opt->targets, "quantize tensors whose name matches (regex; 2-D weights only)")
      ->capture_default_str();
  cmd->add_option("--ignore", opt->ignore, "never quantize tensors whose name matches (regex)")->capture_default_str();
  cmd->add_option("--shared-scale", opt->shared_scales,
                  "nvfp4: modules under one parent that share a global scale, comma-separated "
                  "(repeatable; replaces the defaults q_proj,k_proj,v_proj gate_proj,up_proj w1,w3 "
                  "q_a_proj,kv_a_proj_with_mqa)");
  cmd->add_flag("--force", opt->force, "overwrite OUT if it exists");
  cmd->add_option("--json", opt->json,
                  "also write a JSON summary (every tensor's fate, sizes, SQNR, time) to this file");
  cmd->add_flag("!--no-stats", opt->stats,
                "skip the SQNR of each weight (its decode and sums: in the quantize pass on the cpu backend, a second "
                "pass on cuda)");
  cmd->add_option("--backend", opt->backend, "auto, cpu or cuda")->transform(options::name_choice(backend_names()));
  cmd->add_flag("--quiet", opt->quiet, "no progress bar");
  cmd->callback([opt] { run_quantize(*opt); });
}

}  // namespace mxq::cli
