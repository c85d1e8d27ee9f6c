// Helpers of the `mxq` command tests: a scratch directory, running the binary, and writing small
// checkpoints with mxq's own safetensors writer.
#pragma once
#include <gtest/gtest.h>
#include <mxq/numerics/halfprec.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "safetensors_reader.hpp"
#include "safetensors_writer.hpp"

namespace mxq::clitest {

struct RunResult {
  int exit_code = -1;  // -1: killed by a signal (a crash)
  std::string output;  // stdout and stderr
};

inline RunResult run_mxq(const std::string& args) {
  RunResult r;
  const std::string command = std::string(MXQ_CLI_PATH) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/mxq-cli-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~ScratchDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A tensor to write: name, safetensors dtype, shape and raw bytes.
struct Tensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

inline int64_t elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Standard-normal values stored as BF16, F16 or F32.
inline Tensor normal_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                            unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  Tensor t{name, dtype, shape, {}};
  const int64_t n = elements(shape);
  for (int64_t i = 0; i < n; ++i) {
    const float x = normal(rng);
    if (dtype == "F32") {
      uint8_t b[4];
      std::memcpy(b, &x, 4);
      t.bytes.insert(t.bytes.end(), b, b + 4);
    } else {
      const uint16_t h = dtype == "BF16" ? num::float_to_bf16_rne(x) : num::float_to_fp16_rne(x);
      t.bytes.push_back(static_cast<uint8_t>(h));
      t.bytes.push_back(static_cast<uint8_t>(h >> 8));
    }
  }
  return t;
}

inline void write_checkpoint(const std::string& path, const std::vector<Tensor>& tensors,
                             const std::map<std::string, std::string>& metadata = {}) {
  std::vector<st::TensorSpec> specs;
  for (const Tensor& t : tensors) specs.push_back({t.name, t.dtype, t.shape});
  st::SafetensorsWriter writer(path, specs, metadata);
  for (const Tensor& t : tensors) writer.write(t.name, t.bytes.data(), t.bytes.size());
  writer.commit();
}

inline void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

inline bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace mxq::clitest
