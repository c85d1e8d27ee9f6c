#include "bench_cli.hpp"

#include <fstream>
#include <map>
#include <ostream>
#include <stdexcept>

#include "name_choice.hpp"

namespace mxq::bench {
namespace {

const std::map<std::string, Op> kOps = {{"quantize", Op::quantize},
                                        {"dequantize", Op::dequantize},
                                        {"pad", Op::pad},
                                        {"unpad", Op::unpad},
                                        {"amax", Op::amax},
                                        {"swiglu", Op::swiglu},
                                        {"swiglu_backward", Op::swiglu_backward}};
// The input dtypes every op takes (and dequantize writes).
const std::map<std::string, DType> kDTypes = {{"bf16", DType::bf16}, {"fp16", DType::fp16}, {"fp32", DType::fp32}};
const std::map<std::string, Flush> kFlushes = {{"write", Flush::write}, {"read", Flush::read}};
const CLI::Validator kShapeText(
    [](std::string& text) {
      BenchShape shape;
      return parse_shape(text, &shape) ? std::string() : "expected MxK or ExMxK with positive sizes, got " + text;
    },
    "MxK|ExMxK");

}  // namespace

void add_bench_options(CLI::App& app, BenchCli& cli) {
  BenchOptions& o = cli.options;
  app.add_option("--op", o.ops, "Ops to time (repeatable): quantize, dequantize, pad, unpad, amax, swiglu, swiglu_backward")
      ->transform(options::name_choice(kOps));
  app.add_option("--format", o.formats, "Formats (repeatable): mxfp8, mxfp8_e5m2, mxfp4, nvfp4")
      ->transform(options::name_choice(names_of<Format>()));
  app.add_option("--dir", o.directions, "Directions (repeatable): rowwise, colwise, both")
      ->transform(options::name_choice(names_of<Direction>()));
  app.add_option("--groups", o.groups, "Token-group counts to keep (repeatable; 0 = ungrouped)");
  app.add_option("--dtype", o.dtypes, "Input dtypes (repeatable; dequantize: its output): bf16 (default), fp16, fp32")
      ->transform(options::name_choice(kDTypes));
  app.add_option("--shape", cli.shapes, "Shapes MxK or ExMxK (repeatable): every selected case kind at each shape")
      ->check(kShapeText);
  app.add_option("--backend", o.backend, "auto (cuda if a device is present), cpu or cuda")
      ->transform(options::name_choice(names_of<Backend>()));
  app.add_option("--runs", o.runs, "Timed runs per case (default 50 on cuda, 5 on cpu)")->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", o.warmup, "Warm-up runs per case (default 5 on cuda, 1 on cpu)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--quick", o.quick, "A few shapes only");
  app.add_flag("--graph-only", o.graph_only, "Only the CUDA-graph rows");
  app.add_flag("--no-graph", o.no_graph, "No CUDA-graph rows");
  app.add_option("--flush", o.flush,
                 "How the cache is emptied before each timed run: write (memset, default; the op also "
                 "writes back its dirty lines) or read (the op starts on clean lines)")
      ->transform(options::name_choice(kFlushes));
  app.add_option("--grouped-colwise", o.grouped_colwise,
                 "Grouped colwise kernel where a case can take either (A/B runs): auto (default), "
                 "windows or tiles")
      ->check(CLI::IsMember({"auto", "windows", "tiles"}));
  app.add_option("--grouped-rowwise", o.grouped_rowwise,
                 "Grouped rowwise kernel (rowwise alone) where the tuning takes input row tiles (A/B "
                 "runs): auto (default) or tiles (the group tiles)")
      ->check(CLI::IsMember({"auto", "tiles"}));
  app.add_option("--json", cli.json_path, "Also write the results as JSON to this file");
  app.add_flag("--list", cli.list, "Print the selected cases and exit");
}

int run_bench(const BenchCli& cli, std::ostream& out, std::ostream& err) {
  BenchOptions options = cli.options;
  for (const std::string& text : cli.shapes) {
    BenchShape shape;
    if (!parse_shape(text, &shape)) {
      err << "mxq bench: bad --shape " << text << "\n";
      return 2;
    }
    options.shapes.push_back(shape);
  }
  const Backend backend = resolve_backend(options.backend);
  const std::vector<BenchCase> cases = select_cases(options, backend);
  if (cli.list) {
    for (const BenchCase& c : cases) out << case_label(c) << "\n";
    out << cases.size() << " cases on backend " << to_string(backend) << "\n";
    return 0;
  }
  std::unique_ptr<BenchRunner> runner;
  try {
    runner = std::make_unique<BenchRunner>(options);
  } catch (const std::exception& e) {
    err << "mxq bench: " << e.what() << "\n";
    return 2;
  }
  print_header(out, runner->environment());
  std::vector<BenchResult> results;
  bool failed = false;
  for (const BenchCase& c : cases) {
    results.push_back(runner->run_case(c));
    print_row(out, results.back());
    out.flush();
    failed = failed || results.back().status == RowStatus::error;
  }
  if (!cli.json_path.empty()) {
    std::ofstream file(cli.json_path);
    file << to_json(runner->environment(), results);
    if (!file) {
      err << "mxq bench: cannot write " << cli.json_path << "\n";
      return 2;
    }
    out << "wrote " << cli.json_path << "\n";
  }
  if (cases.empty()) err << "mxq bench: no case matches the options\n";
  return failed ? 1 : 0;
}

}  // namespace mxq::bench
