// `mxq bench`: the benchmark driver of bench/ (mxq_bench_core) as a subcommand. It benchmarks the
// CUDA backend on a GPU and the CPU backend, saying so, elsewhere.
#include <CLI/CLI.hpp>

#include "cli_error.hpp"
#include "commands.hpp"

#ifdef MXQ_CLI_WITH_BENCH
#include <iostream>
#include <memory>

#include "bench_cli.hpp"
#endif

namespace mxq::cli {

void register_bench(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "Benchmark the ops (GPU if present, else CPU)");
#ifdef MXQ_CLI_WITH_BENCH
  auto cli = std::make_shared<bench::BenchCli>();
  bench::add_bench_options(*cmd, *cli);
  cmd->callback([cli] {
    const int rc = bench::run_bench(*cli, std::cout, std::cerr);
    if (rc != 0) throw CliError(rc, "bench: " + std::string(rc == 2 ? "setup error" : "a case failed"));
  });
#else
  cmd->allow_extras();
  cmd->callback([] { throw CliError(kExitFailure, "this mxq was built without the benchmark (bench/)"); });
#endif
}

}  // namespace mxq::cli
