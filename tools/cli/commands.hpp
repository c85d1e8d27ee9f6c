// Each subcommand of `mxq` lives in its own file and registers itself on the app here. Callbacks
// report failures by throwing CliError (cli_error.hpp).
#pragma once

namespace CLI {
class App;
}

namespace mxq::cli {

void register_demo(CLI::App& app);
void register_quantize(CLI::App& app);
void register_dequantize(CLI::App& app);
void register_inspect(CLI::App& app);
void register_bench(CLI::App& app);

}  // namespace mxq::cli
