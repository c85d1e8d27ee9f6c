#include "gpt_oss.hpp"

#include <regex>

#include "backend_memory.hpp"
#include "cli_error.hpp"
#include "quantize_runner.hpp"
#include "sqnr.hpp"

namespace mxq::cli::gpt_oss {
namespace {

constexpr int64_t kBlock = 32;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One expert (in, out) of a 3-D weight as the library's view: colwise blocks run along `in`.
TensorView expert_view(const std::vector<int64_t>& shape, DType dtype, const void* data) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.batch = shape[0];
  v.rows = shape[1];
  v.cols = shape[2];
  return v;
}

// Dequantizes the colwise data of `batch` experts, one at a time, into (in, out) row-major pieces.
void decode_experts(Backend backend, ScaleRule rule, const TensorView& shape, const uint8_t* blocks,
                    const uint8_t* scales, DType dtype, const ChunkVisitor& visit) {
  const int64_t in = shape.rows, out = shape.cols;
  const int64_t data_bytes = out * in / 2, scale_bytes = out * (in / kBlock);
  BackendBuffer values(backend, in * out * dtype_size(dtype));
  for (int64_t e = 0; e < shape.batch; ++e) {
    DequantizeArgs args;
    args.params = QuantizeParams{Format::mxfp4, rule, ScaleLayout::linear, Direction::colwise};
    args.rows = in;
    args.cols = out;
    args.data = blocks + e * data_bytes;
    args.scales = scales + e * scale_bytes;
    args.out = values.data();
    args.out_dtype = dtype;
    args.backend = backend;
    check(dequantize(args), "dequantize");
    const std::vector<uint8_t> host = values.download_all<uint8_t>();
    visit(host.data(), e * in * out, in * out);
  }
}

}  // namespace

bool is_gpt_oss(const nlohmann::json& config) {
  return config.is_object() && config.value("model_type", "") == "gpt_oss";
}

bool is_mxfp4_checkpoint(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("quantization_config")) return false;
  const nlohmann::json& q = config["quantization_config"];
  return q.is_object() && q.value("quant_method", "") == "mxfp4";
}

std::string kept_reason(const st::TensorInfo& t) {
  static const std::regex experts(R"((^|\.)mlp\.experts\.(gate_up_proj|down_proj)$)");
  if (!std::regex_search(t.name, experts)) return "gpt-oss MXFP4 keeps it in bf16";
  if (!float_dtype(t.dtype)) return "not bf16/fp16/fp32";
  if (t.shape.size() != 3) return "not 3-D (E, in, out)";
  if (t.shape[1] % kBlock != 0) return "input dim " + std::to_string(t.shape[1]) + " not a multiple of 32";
  return "";
}

std::string blocks_name(const std::string& weight) { return weight + "_blocks"; }
std::string scales_name(const std::string& weight) { return weight + "_scales"; }

std::vector<int64_t> blocks_shape(const std::vector<int64_t>& s) { return {s[0], s[2], s[1] / kBlock, 16}; }
std::vector<int64_t> scales_shape(const std::vector<int64_t>& s) { return {s[0], s[2], s[1] / kBlock}; }

nlohmann::json quantization_config() {
  return {{"quant_method", "mxfp4"},
          {"modules_to_not_convert",
           {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}};
}

Encoded encode(Backend backend, ScaleRule rule, const st::TensorInfo& t, const uint8_t* bytes, bool stats) {
  const DType dtype = *float_dtype(t.dtype);
  Staged input = stage(backend, bytes, t.bytes());
  QuantizeJob job{expert_view(t.shape, dtype, input.ptr),
                  QuantizeParams{Format::mxfp4, rule, ScaleLayout::linear, Direction::colwise},
                  {}};
  const Quantized q = quantize_on(backend, job);
  auto product = [](const std::vector<int64_t>& d) {
    int64_t n = 1;
    for (int64_t x : d) n *= x;
    return n;
  };
  // The colwise outputs are these tensors byte for byte: (E, out, in/2) codes, (E, out, in/32) scales.
  if (q.sizes.col_data_bytes != product(blocks_shape(t.shape)) ||
      q.sizes.col_scale_bytes != product(scales_shape(t.shape)))
    throw CliError(kExitFailure, "internal: gpt-oss shapes of '" + t.name + "' disagree with the library's sizes");
  Encoded e;
  e.blocks = q.col_data.download_all<uint8_t>();
  e.scales = q.col_scales.download_all<uint8_t>();
  if (!stats) return e;
  Sqnr sqnr;
  decode_experts(backend, rule, job.input, static_cast<const uint8_t*>(q.col_data.data()),
                 static_cast<const uint8_t*>(q.col_scales.data()), DType::fp32,
                 [&](const void* values, int64_t offset, int64_t count) {
                   sqnr.add(bytes + offset * dtype_size(dtype), dtype, static_cast<const float*>(values), count);
                 });
  e.sqnr_db = sqnr.db();
  return e;
}

std::optional<StoredWeight> find_stored_weight(const st::SafetensorsView& view, const st::TensorInfo& t) {
  const std::string suffix = "_blocks";
  if (!ends_with(t.name, suffix) || t.dtype != "U8") return std::nullopt;
  StoredWeight w;
  w.name = t.name.substr(0, t.name.size() - suffix.size());
  w.data = &t;
  w.scale = view.find(scales_name(w.name));
  if (!w.scale) return std::nullopt;
  auto bad = [&](const std::string& why) {
    return st::SafetensorsError("gpt-oss MXFP4 weight '" + w.name + "': " + why);
  };
  if (t.shape.size() != 4 || t.shape[3] != 16) throw bad("_blocks is not (E, out, in/32, 16)");
  w.shape = {t.shape[0], t.shape[2] * kBlock, t.shape[1]};
  if (w.scale->dtype != "U8" || w.scale->shape != scales_shape(w.shape))
    throw bad("_scales is not U8 (E, out, in/32) for _blocks of shape (E, out, in/32, 16)");
  return w;
}

void decode(Backend backend, const st::SafetensorsView& view, const StoredWeight& w, DType dtype,
            const ChunkVisitor& visit) {
  if (w.shape[0] * w.shape[1] * w.shape[2] == 0) return;
  Staged blocks = stage(backend, view.data(*w.data), w.data->bytes());
  Staged scales = stage(backend, view.data(*w.scale), w.scale->bytes());
  // The scale rule only matters when encoding; decoding reads the stored exponents.
  decode_experts(backend, ScaleRule::rceil, expert_view(w.shape, dtype, nullptr),
                 static_cast<const uint8_t*>(blocks.ptr), static_cast<const uint8_t*>(scales.ptr), dtype, visit);
}

}  // namespace mxq::cli::gpt_oss
