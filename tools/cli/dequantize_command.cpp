// `mxq dequantize IN OUT`: the inverse of `mxq quantize`: every quantized weight (found through the
// settings recorded in the metadata, or gpt-oss MXFP4 experts of any gpt-oss checkpoint) becomes a
// bf16 tensor of its original name and shape; every other tensor is copied. Weights are dequantized in bounded pieces
// straight into the output.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <set>

#include "backend_memory.hpp"
#include "checkpoint.hpp"
#include "checkpoint_output.hpp"
#include "cli_error.hpp"
#include "commands.hpp"
#include "compressed_tensors.hpp"
#include "enum_names.hpp"
#include "gpt_oss.hpp"
#include "stored_weights.hpp"
#include "progress.hpp"
#include "safetensors_writer.hpp"
#include "table.hpp"
#include "weight_codec.hpp"

namespace mxq::cli {
namespace {

struct DequantizeOptions {
  std::string in, out;
  Backend backend = Backend::auto_;
  bool quiet = false, force = false;
};

// mxq's own record in the shard's metadata, else a standard compressed-tensors config.json.
QuantSettings settings_of(const st::SafetensorsFile& file, const nlohmann::json& config) {
  if (auto s = settings_from_metadata(file.view().metadata())) return *s;
  if (auto s = settings_from_config(config)) return *s;
  throw CliError(kExitBadInput, file.path() +
                                    ": not a quantized checkpoint mxq reads (no mxq metadata, and "
                                    "config.json holds no compressed-tensors mxfp8 / mxfp4 / nvfp4 or "
                                    "gpt-oss mxfp4 quantization_config)");
}

void run_dequantize(const DequantizeOptions& opt) {
  const Backend backend = resolve_backend(opt.backend);
  const Checkpoint in(opt.in);
  // gpt-oss MXFP4 checkpoints (mxq's or others') say so in config.json; compressed-tensors ones
  // written by mxq carry their settings in each shard's metadata.
  const nlohmann::json config = model_config(in);
  const bool gpt_oss_checkpoint = gpt_oss::is_mxfp4_checkpoint(config);
  CheckpointOutput out(in, opt.out, opt.force);
  Table table({"tensor", "shape", "from", "bytes before", "bytes after"});
  int64_t weights = 0, copied = 0;

  for (size_t i = 0; i < in.shard_names().size(); ++i) {
    const auto file = in.open_shard(i);
    const st::SafetensorsView& view = file->view();
    const std::optional<QuantSettings> s =
        gpt_oss_checkpoint ? settings_from_metadata(view.metadata()) : std::optional(settings_of(*file, config));

    const std::vector<FoundWeight> stored = find_stored_weights(view, s);
    std::set<std::string> consumed;  // scales and global scales of a stored weight
    for (const FoundWeight& f : stored) {
      consumed.insert(f.weight.scale->name);
      if (f.weight.global_scale) consumed.insert(f.weight.global_scale->name);
    }
    std::vector<st::TensorSpec> specs;
    std::vector<const FoundWeight*> weight_of_spec;
    size_t next_weight = 0;
    for (const st::TensorInfo& t : view.tensors()) {
      if (next_weight < stored.size() && stored[next_weight].weight.data == &t) {
        const FoundWeight& f = stored[next_weight++];
        specs.push_back({f.weight.name, "BF16", f.weight.shape});
        weight_of_spec.push_back(&f);
      } else if (!consumed.count(t.name)) {
        specs.push_back({t.name, t.dtype, t.shape});
        weight_of_spec.push_back(nullptr);
      }
    }

    std::map<std::string, std::string> metadata;
    for (const auto& [key, value] : view.metadata())
      if (key.rfind("mxq_", 0) != 0 && key != "quantization_config") metadata[key] = value;
    st::SafetensorsWriter writer(out.shard_path(i), specs, metadata, st::permission_bits(in.shard_path(i)));
    Progress progress(static_cast<int64_t>(specs.size()), !opt.quiet);

    for (size_t k = 0; k < specs.size(); ++k) {
      const st::TensorSpec& spec = specs[k];
      out.add_to_index(spec.name, i, spec.bytes());
      if (const FoundWeight* f = weight_of_spec[k]) {
        const StoredWeight* w = &f->weight;
        decode_found(backend, view, *f, DType::bf16, [&](const void* values, int64_t, int64_t count) {
          writer.write(spec.name, values, static_cast<uint64_t>(count) * 2);
        });
        writer.write(spec.name, nullptr, 0);  // an empty weight is still written
        const uint64_t before = w->data->bytes() + w->scale->bytes() + (w->global_scale ? w->global_scale->bytes() : 0);
        table.add({spec.name, format_shape(spec.shape), f->format_name(), std::to_string(before),
                   std::to_string(spec.bytes())});
        ++weights;
      } else {
        const st::TensorInfo& t = *view.find(spec.name);
        writer.write(t.name, view.data(t), t.bytes());
        ++copied;
      }
      progress.advance(1, spec.name);
    }
    writer.commit();
  }
  out.finish([](nlohmann::json& config) { config.erase("quantization_config"); });

  table.print(stdout);
  std::printf("\n%lld weights dequantized to bf16, %lld tensors copied -> %s\n", static_cast<long long>(weights),
              static_cast<long long>(copied), opt.out.c_str());
}

}  // namespace

void register_dequantize(CLI::App& app) {
  auto opt = std::make_shared<DequantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "dequantize", "Dequantize a quantized checkpoint (mxq's, compressed-tensors, gpt-oss MXFP4) to bf16");
  cmd->add_option("IN", opt->in, "quantized .safetensors file or checkpoint directory")->required();
  cmd->add_option("OUT", opt->out, "output file or directory")->required();
  cmd->add_option("--backend", opt->backend, "auto, cpu or cuda")->transform(options::name_choice(backend_names()));
  cmd->add_flag("--quiet", opt->quiet, "no progress bar");
  cmd->add_flag("--force", opt->force, "overwrite OUT if it exists");
  cmd->callback([opt] { run_dequantize(*opt); });
}

}  // namespace mxq::cli
