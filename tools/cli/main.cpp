// The `mxq` command: parses the command line with CLI11 and maps every failure to an exit code
// (cli_error.hpp): 0 success, 1 operation failed, 2 bad command line, 3 malformed input file.
#include <CLI/CLI.hpp>
#include <mxq/mxq.hpp>

#include <cstdio>
#include <exception>

#include "cli_error.hpp"
#include "commands.hpp"
#include "safetensors_reader.hpp"
#include "table.hpp"
#include "temp_files.hpp"

int main(int argc, char** argv) {
  using namespace mxq::cli;
  mxq::st::remove_temp_files_on_signals(kExitBadInput);
  CLI::App app{"mxq: microscaling quantization (MXFP8, MXFP4, NVFP4) of MoE tensors and checkpoints", "mxq"};
  app.set_version_flag("--version", std::string("mxq ") + mxq::version());
  app.require_subcommand(1);
  register_demo(app);
  register_quantize(app);
  register_dequantize(app);
  register_inspect(app);
  register_bench(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the parse error
    return code == 0 ? kExitOk : kExitUsage;
  } catch (const mxq::st::SafetensorsError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mxq: error: %s\n", printable(e.what()).c_str());
    return kExitBadInput;
  } catch (const CliError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mxq: error: %s\n", printable(e.what()).c_str());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mxq: error: %s\n", printable(e.what()).c_str());
    return kExitFailure;
  }
  return kExitOk;
}
