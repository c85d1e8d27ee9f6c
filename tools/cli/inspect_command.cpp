// `mxq inspect FILE [--stats REF]`: what a checkpoint holds (tensors, dtypes, shapes, sizes, the
// quantization settings and config), and with --stats the SQNR of every tensor against a
// reference checkpoint (quantized weights are dequantized in pieces first).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "backend_memory.hpp"
#include "checkpoint.hpp"
#include "cli_error.hpp"
#include "commands.hpp"
#include "compressed_tensors.hpp"
#include "enum_names.hpp"
#include "stored_weights.hpp"
#include "sqnr.hpp"
#include "table.hpp"
#include "weight_codec.hpp"

namespace mxq::cli {
namespace {

struct InspectOptions {
  std::string file, reference;
  Backend backend = Backend::auto_;
};

// Every tensor of a (possibly sharded) reference checkpoint, kept mapped for lookups.
class Reference {
 public:
  explicit Reference(const std::string& path) : checkpoint_(path) {
    for (size_t i = 0; i < checkpoint_.shard_names().size(); ++i) {
      files_.push_back(checkpoint_.open_shard(i));
      for (const st::TensorInfo& t : files_.back()->view().tensors()) by_name_[t.name] = {files_.back().get(), &t};
    }
  }
  // The tensor `name` if it exists as a float tensor of `shape`, with its bytes.
  const st::TensorInfo* find(const std::string& name, const std::vector<int64_t>& shape, const uint8_t** bytes) const {
    const auto it = by_name_.find(name);
    if (it == by_name_.end() || it->second.second->shape != shape || !float_dtype(it->second.second->dtype))
      return nullptr;
    *bytes = it->second.first->view().data(*it->second.second);
    return it->second.second;
  }

 private:
  Checkpoint checkpoint_;
  std::vector<std::unique_ptr<st::SafetensorsFile>> files_;
  std::map<std::string, std::pair<const st::SafetensorsFile*, const st::TensorInfo*>> by_name_;
};

std::string stats_of_weight(Backend backend, const st::SafetensorsView& view, const FoundWeight& f,
                            const Reference& ref) {
  const StoredWeight& w = f.weight;
  const uint8_t* ref_bytes = nullptr;
  const st::TensorInfo* r = ref.find(w.name, w.shape, &ref_bytes);
  if (!r) return "no reference";
  const DType dtype = *float_dtype(r->dtype);
  Sqnr sqnr;
  const ChunkVisitor add = [&](const void* v, int64_t offset, int64_t n) {
    sqnr.add(ref_bytes + offset * dtype_size(dtype), dtype, static_cast<const float*>(v), n);
  };
  decode_found(backend, view, f, DType::fp32, add);
  return format_db(sqnr.db());
}

std::string stats_of_plain(const st::SafetensorsView& view, const st::TensorInfo& t, const Reference& ref) {
  const auto dtype = float_dtype(t.dtype);
  const uint8_t* ref_bytes = nullptr;
  const st::TensorInfo* r = dtype ? ref.find(t.name, t.shape, &ref_bytes) : nullptr;
  if (!r) return "-";
  const DType ref_dtype = *float_dtype(r->dtype);
  Sqnr sqnr;
  const uint8_t* bytes = view.data(t);
  for (int64_t i = 0; i < t.elements(); ++i)
    sqnr.add(load_as_float(ref_bytes, ref_dtype, i), load_as_float(bytes, *dtype, i));
  return format_db(sqnr.db());
}

void print_settings(const st::SafetensorsView& view) {
  const auto s = settings_from_metadata(view.metadata());
  if (s) {
    const auto version = view.metadata().find("mxq_version");
    std::printf("  quantized by mxq %s: format %s, scale rule %s, scale layout %s\n",
                version != view.metadata().end() ? version->second.c_str() : "?", to_string(s->format),
                to_string(s->rule), to_string(s->layout));
  }
  const auto config = view.metadata().find("quantization_config");
  if (config != view.metadata().end()) {
    const auto json = nlohmann::json::parse(config->second, nullptr, false);
    if (json.is_object() && json.contains("format"))
      std::printf("  quantization_config: %s, %s, %zu modules ignored\n",
                  printable(json.value("quant_method", "?")).c_str(), printable(json.value("format", "?")).c_str(),
                  json.contains("ignore") && json["ignore"].is_array() ? json["ignore"].size() : 0);
  }
  for (const auto& [key, value] : view.metadata())
    if (key.rfind("mxq_", 0) != 0 && key != "quantization_config")
      std::printf("  metadata %s = %.60s\n", printable(key).c_str(), printable(value).c_str());
}

void run_inspect(const InspectOptions& opt) {
  const Checkpoint in(opt.file);
  const nlohmann::json config = model_config(in);
  std::unique_ptr<Reference> ref;
  Backend backend = Backend::cpu;
  if (!opt.reference.empty()) {
    ref = std::make_unique<Reference>(opt.reference);
    backend = resolve_backend(opt.backend);
  }
  std::vector<std::string> header = {"tensor", "dtype", "shape", "bytes", "role"};
  if (ref) header.push_back("SQNR dB vs " + opt.reference);
  std::map<std::string, int64_t> bytes_by_dtype;
  int64_t tensors = 0, total = 0;

  for (size_t i = 0; i < in.shard_names().size(); ++i) {
    const auto file = in.open_shard(i);
    const st::SafetensorsView& view = file->view();
    std::printf("%s: %zu tensors, header %llu bytes\n", file->path().c_str(), view.tensors().size(),
                static_cast<unsigned long long>(view.header_bytes()));
    print_settings(view);

    auto s = settings_from_metadata(view.metadata());
    if (!s) s = settings_from_config(config);
    std::map<std::string, std::string> role;
    std::map<std::string, FoundWeight> weights;
    for (const FoundWeight& f : find_stored_weights(view, s)) {
      const StoredWeight& w = f.weight;
      role[w.data->name] = std::string(f.format_name()) + " data of " + w.name;
      role[w.scale->name] = "scales of " + w.name;
      if (w.global_scale) role[w.global_scale->name] = "global scale of " + w.name;
      weights.emplace(w.data->name, f);
    }
    Table table(header);
    for (const st::TensorInfo& t : view.tensors()) {
      const auto r = role.find(t.name);
      std::vector<std::string> row = {t.name, t.dtype, format_shape(t.shape), std::to_string(t.bytes()),
                                      r == role.end() ? "" : r->second};
      if (ref) {
        const auto w = weights.find(t.name);
        row.push_back(w != weights.end() ? stats_of_weight(backend, view, w->second, *ref)
                      : r == role.end()  ? stats_of_plain(view, t, *ref)
                                         : "");
      }
      table.add(row);
      bytes_by_dtype[t.dtype] += static_cast<int64_t>(t.bytes());
      total += static_cast<int64_t>(t.bytes());
      ++tensors;
    }
    std::printf("\n");
    table.print(stdout);
    std::printf("\n");
  }
  std::printf("total: %lld tensors, %s:", static_cast<long long>(tensors), format_bytes(total).c_str());
  for (const auto& [dtype, bytes] : bytes_by_dtype) std::printf(" %s %s;", dtype.c_str(), format_bytes(bytes).c_str());
  std::printf("\n");
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto opt = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "List the tensors, dtypes, shapes, sizes and quantization settings of a checkpoint");
  cmd->add_option("FILE", opt->file, ".safetensors file or checkpoint directory")->required();
  cmd->add_option("--stats", opt->reference, "reference checkpoint: print the SQNR of every tensor against it");
  cmd->add_option("--backend", opt->backend, "auto, cpu or cuda (for --stats)")
      ->transform(options::name_choice(backend_names()));
  cmd->callback([opt] { run_inspect(*opt); });
}

}  // namespace mxq::cli
