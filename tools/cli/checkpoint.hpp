// A checkpoint given on the command line: one .safetensors file, or a directory holding either
// model.safetensors.index.json and its shards or a single model.safetensors. Shards are opened
// one at a time (open_shard), so a run never maps more than one shard at once.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "safetensors_reader.hpp"

namespace mxq::cli {

class Checkpoint {
 public:
  static constexpr const char* kIndexName = "model.safetensors.index.json";

  // Throws SafetensorsError for a missing path, a malformed index (not JSON, no weight_map,
  // non-string entries, shard names with a path component) or a missing shard.
  explicit Checkpoint(const std::string& path);

  bool is_directory() const { return is_directory_; }
  const std::string& directory() const { return directory_; }  // "" for a single file
  const std::vector<std::string>& shard_names() const { return shards_; }
  std::string shard_path(size_t i) const;
  // The index's JSON (empty object without one); its "metadata" is kept on output.
  const nlohmann::json& index() const { return index_; }

  // Maps shard i and checks it against the index: every tensor of the shard must be listed for
  // this shard, and every tensor the index lists for it must be in it.
  std::unique_ptr<st::SafetensorsFile> open_shard(size_t i) const;

 private:
  bool is_directory_ = false;
  std::string directory_;
  std::vector<std::string> shards_;
  nlohmann::json index_ = nlohmann::json::object();
};

bool path_is_directory(const std::string& path);

// The checkpoint directory's config.json (an empty object for a single file or when there is
// none); throws SafetensorsError when it is not a JSON object or nests deeper than 64 levels.
nlohmann::json model_config(const Checkpoint& checkpoint);
// The same rules for config.json's text read from `path`.
nlohmann::json parse_config(const std::string& text, const std::string& path);

}  // namespace mxq::cli
