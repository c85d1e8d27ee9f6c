// The benchmark's command line, shared by the `mxq_bench` binary and the `mxq bench` subcommand:
// add_bench_options registers the options on an app or subcommand, run_bench runs what they say.
#pragma once
#include <CLI/CLI.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "bench_core.hpp"

namespace mxq::bench {

struct BenchCli {
  BenchOptions options;
  std::vector<std::string> shapes;  // "MxK" / "ExMxK", parsed by run_bench
  std::string json_path;            // empty: no JSON file
  bool list = false;                // print the selected cases, run nothing
};

void add_bench_options(CLI::App& app, BenchCli& cli);

// Prints the table to `out` row by row, writes the JSON file if asked. Returns 0 when every case
// ran or was reported unsupported, 1 when a case failed, 2 on a setup error (message on `err`).
int run_bench(const BenchCli& cli, std::ostream& out, std::ostream& err);

}  // namespace mxq::bench
