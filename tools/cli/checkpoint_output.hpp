// Where `mxq quantize` / `mxq dequantize` write: a file for a file, a directory for a directory.
// A directory output gets one output shard per input shard (same file name), a fresh
// model.safetensors.index.json, and the input's other files (config.json, tokenizer, ...) copied,
// config.json passed through `edit_config` so that a loader sees the new quantization_config.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint.hpp"

namespace mxq::cli {

class CheckpointOutput {
 public:
  // Throws CliError when OUT is the input itself, a directory is given for a file input, OUT exists
  // and `overwrite` is false, or OUT is neither a regular file nor a directory.
  CheckpointOutput(const Checkpoint& in, const std::string& out, bool overwrite);
  std::string shard_path(size_t i) const;

  // Records that shard i holds `tensor` (for the index).
  void add_to_index(const std::string& tensor, size_t shard, uint64_t bytes);
  // Directory output only: writes the index and copies the side files.
  void finish(const std::function<void(nlohmann::json& config)>& edit_config);

 private:
  const Checkpoint& in_;
  std::string out_;
  nlohmann::json weight_map_ = nlohmann::json::object();
  uint64_t total_bytes_ = 0;
};

// Writes `text` to `path` through a temporary file and a rename; `mode` as SafetensorsWriter's.
void write_file_atomically(const std::string& path, const std::string& text, unsigned mode = 0666);

}  // namespace mxq::cli
