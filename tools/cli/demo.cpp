// `mxq demo`: the zero-argument showcase. A synthetic MoE layer (bf16 token activations in token
// groups of uneven sizes, one of them empty, and 3-D expert weights) is padded with mxq::pad,
// quantized in every format and direction, dequantized, and a table of bytes and SQNR is printed.
#include <CLI/CLI.hpp>
#include <mxq/mxq.hpp>
#include <mxq/numerics/halfprec.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "backend_memory.hpp"
#include "cli_error.hpp"
#include "commands.hpp"
#include "enum_names.hpp"
#include "quantize_runner.hpp"
#include "sqnr.hpp"
#include "table.hpp"

namespace mxq::cli {
namespace {

struct DemoOptions {
  Backend backend = Backend::auto_;
  ScaleRule rule = ScaleRule::rceil;
  ScaleLayout layout = ScaleLayout::blocked;
  int32_t alignment = 32;
  unsigned seed = 2024;
};

// The layer: hidden 1024, ffn 512, 8 experts, 3000 routed tokens.
constexpr int64_t kHidden = 1024, kFfn = 512, kExperts = 8;
// Tokens routed to each expert: uneven, expert 1 receives none.
const std::vector<int32_t> kGroupSizes = {611, 0, 397, 1024, 45, 283, 517, 123};

std::vector<uint16_t> random_bf16(int64_t rows, int64_t cols, float base_scale, bool row_scales, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> v(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    // Activations vary in magnitude from token to token; that is what per-block scales absorb.
    const float scale = row_scales ? base_scale * std::exp(0.75f * normal(rng)) : base_scale;
    for (int64_t c = 0; c < cols; ++c) v[r * cols + c] = num::float_to_bf16_rne(scale * normal(rng));
  }
  return v;
}

// A tensor of the layer in backend memory, with its host copy as the SQNR reference.
struct DemoTensor {
  const char* name;
  TensorView view;
  QuantizeGroups groups;
  std::vector<uint16_t> host;
};

std::string sqnr_cell(Backend backend, const DemoTensor& t, const QuantizeJob& job, const Quantized& q) {
  std::string cell;
  for (Direction d : {Direction::rowwise, Direction::colwise}) {
    if (!(static_cast<int32_t>(job.params.direction) & static_cast<int32_t>(d))) continue;
    const std::vector<float> back = dequantize_on(backend, job, q, d);
    if (static_cast<int64_t>(back.size()) != static_cast<int64_t>(t.host.size()))
      throw CliError(kExitFailure, "demo: dequantized size does not match the input");
    Sqnr sqnr;
    sqnr.add(t.host.data(), DType::bf16, back.data(), static_cast<int64_t>(back.size()));
    cell += (cell.empty() ? "" : "/") + format_db(sqnr.db());
  }
  return cell;
}

void run_demo(const DemoOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  const Backend backend = resolve_backend(opt.backend);
  std::printf("mxq %s demo: synthetic MoE layer, hidden %lld, ffn %lld, %lld experts\n", mxq::version(),
              static_cast<long long>(kHidden), static_cast<long long>(kFfn), static_cast<long long>(kExperts));
  const bool no_device = backend == Backend::cpu && !mxq::cuda_available();
  std::printf("backend: %s%s; scale rule %s, scale layout %s\n", to_string(backend),
              no_device ? " (no CUDA device)" : "", to_string(opt.rule), to_string(opt.layout));

  std::mt19937 rng(opt.seed);
  std::vector<int32_t> ends;
  int64_t tokens = 0;
  for (int32_t size : kGroupSizes) ends.push_back(static_cast<int32_t>(tokens += size));
  const int64_t groups = static_cast<int64_t>(ends.size());

  // Token activations (tokens, hidden) in backend memory, then padded per expert group.
  const std::vector<uint16_t> x = random_bf16(tokens, kHidden, 1.0f, true, rng);
  BackendBuffer x_dev(backend, x.size() * 2), ends_dev(backend, ends.size() * 4);
  x_dev.upload(x.data(), x.size() * 2);
  ends_dev.upload(ends.data(), ends.size() * 4);

  PadArgs pad_args;
  pad_args.input = TensorView{x_dev.data(), DType::bf16, 1, tokens, kHidden};
  pad_args.groups = TokenGroups{ends_dev.as<int32_t>(), groups};
  pad_args.alignment = opt.alignment;
  pad_args.backend = backend;
  int64_t padded_rows = 0;
  check(pad_rows(pad_args, &padded_rows), "pad_rows");
  BackendBuffer padded_dev(backend, padded_rows * kHidden * 2);
  BackendBuffer starts_dev(backend, groups * 4), padded_ends_dev(backend, groups * 4);
  pad_args.out = padded_dev.data();
  pad_args.padded_starts = starts_dev.as<int32_t>();
  pad_args.padded_ends = padded_ends_dev.as<int32_t>();
  check(pad(pad_args), "pad");
  const std::vector<int32_t> padded_ends = padded_ends_dev.download_all<int32_t>();

  std::printf("tokens: %lld in %lld groups of sizes", static_cast<long long>(tokens), static_cast<long long>(groups));
  for (int32_t size : kGroupSizes) std::printf(" %d", size);
  std::printf("; padded to multiples of %d: %d rows used of a %lld-row buffer\n\n", opt.alignment, padded_ends.back(),
              static_cast<long long>(padded_rows));

  DemoTensor activations{"activations", TensorView{padded_dev.data(), DType::bf16, 1, padded_rows, kHidden},
                         QuantizeGroups{TokenGroups{padded_ends_dev.as<int32_t>(), groups}, 0, 0},
                         padded_dev.download_all<uint16_t>()};

  // Expert weights (E, N, K): the gate/up projection, K = hidden is the contiguous dimension.
  std::vector<uint16_t> w = random_bf16(kExperts * kFfn, kHidden, 0.02f, false, rng);
  BackendBuffer w_dev(backend, w.size() * 2);
  w_dev.upload(w.data(), w.size() * 2);
  DemoTensor weights{"expert_weights", TensorView{w_dev.data(), DType::bf16, kExperts, kFfn, kHidden}, QuantizeGroups{},
                     std::move(w)};

  Table table({"tensor", "format", "direction", "shape", "bytes before", "bytes after", "ratio", "SQNR dB (row/col)",
               "quantize ms", "GB/s"});
  double quantize_seconds = 0;
  for (const DemoTensor* t : {&activations, &weights}) {
    const int64_t before = static_cast<int64_t>(t->host.size()) * 2;
    std::vector<int64_t> shape = {t->view.rows, t->view.cols};
    if (t->view.batch > 1) shape.insert(shape.begin(), t->view.batch);
    for (Format format : kAllFormats) {
      for (Direction direction : {Direction::rowwise, Direction::colwise, Direction::both}) {
        QuantizeJob job{t->view, QuantizeParams{format, opt.rule, opt.layout, direction}, t->groups};
        const Quantized q = quantize_on(backend, job);
        quantize_seconds += q.seconds;
        char ratio[16], ms[16], gbps[16];
        std::snprintf(ratio, sizeof ratio, "%.2fx", static_cast<double>(before) / q.bytes());
        std::snprintf(ms, sizeof ms, "%.2f", q.seconds * 1e3);
        std::snprintf(gbps, sizeof gbps, "%.2f", (before + q.bytes()) / q.seconds / 1e9);
        table.add({t->name, to_string(format), to_string(direction),
                   format_shape(shape) + (t->groups.groups.count ? " grouped" : ""), std::to_string(before),
                   std::to_string(q.bytes()), ratio, sqnr_cell(backend, *t, job, q), ms, gbps});
      }
    }
  }
  table.print(stdout);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "\n24 quantize calls in %.1f ms on %s (GB/s = bytes read + written per second); "
      "demo total %.2f s\n",
      quantize_seconds * 1e3, to_string(backend), total);
}

}  // namespace

void register_demo(CLI::App& app) {
  auto opt = std::make_shared<DemoOptions>();
  CLI::App* cmd =
      app.add_subcommand("demo", "Quantize a synthetic MoE layer in every format and direction (no files, no GPU)");
  cmd->add_option("--backend", opt->backend, "auto, cpu or cuda")->transform(options::name_choice(backend_names()));
  cmd->add_option("--scale-rule", opt->rule, "E8M0 scale rule: rceil or floor")
      ->transform(options::name_choice(scale_rule_names()));
  cmd->add_option("--scale-layout", opt->layout, "scale layout: blocked or linear")
      ->transform(options::name_choice(scale_layout_names()));
  cmd->add_option("--seed", opt->seed, "random seed of the synthetic data");
  cmd->callback([opt] { run_demo(*opt); });
}

}  // namespace mxq::cli
