// mxq_bench: times every mxq op against a same-run device copy (docs/performance.md).
#include <iostream>

#include "bench_cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{"mxq_bench: time mxq ops (CUDA events, median, L2 flushed) against a same-run copy"};
  mxq::bench::BenchCli cli;
  mxq::bench::add_bench_options(app, cli);
  CLI11_PARSE(app, argc, argv);
  return mxq::bench::run_bench(cli, std::cout, std::cerr);
}
