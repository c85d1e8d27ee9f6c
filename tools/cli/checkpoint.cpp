#include "checkpoint.hpp"

#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>

namespace mxq::cli {
namespace {

using st::SafetensorsError;

bool is_regular_file(const std::string& path) {
  struct stat s {};
  return ::stat(path.c_str(), &s) == 0 && S_ISREG(s.st_mode);
}

// A shard name from the index must name a file inside the checkpoint directory.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

nlohmann::json parse_config(const std::string& text, const std::string& path) {
  // nlohmann writes JSON back recursively: a deeply nested file would overflow the stack.
  constexpr int kMaxDepth = 64;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if ((c == '{' || c == '[') && ++depth > kMaxDepth)
      throw SafetensorsError(path + ": nests deeper than " + std::to_string(kMaxDepth) + " levels");
    if (c == '}' || c == ']') --depth;
  }
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw SafetensorsError(path + ": not valid JSON: " + e.what());
  }
  if (!config.is_object()) throw SafetensorsError(path + ": not a JSON object");
  return config;
}

nlohmann::json model_config(const Checkpoint& checkpoint) {
  const std::string path = checkpoint.directory() + "/config.json";
  if (!checkpoint.is_directory() || !is_regular_file(path)) return nlohmann::json::object();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

bool path_is_directory(const std::string& path) {
  struct stat s {};
  return ::stat(path.c_str(), &s) == 0 && S_ISDIR(s.st_mode);
}

Checkpoint::Checkpoint(const std::string& path) {
  if (!path_is_directory(path)) {
    if (!is_regular_file(path)) throw SafetensorsError(path + ": no such file or directory");
    shards_.push_back(path);
    return;
  }
  is_directory_ = true;
  directory_ = path;
  const std::string index_path = path + "/" + kIndexName;
  if (!is_regular_file(index_path)) {
    if (!is_regular_file(path + "/model.safetensors"))
      throw SafetensorsError(path + ": neither " + kIndexName + " nor model.safetensors found");
    shards_.push_back("model.safetensors");
    return;
  }
  std::ifstream in(index_path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    index_ = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw SafetensorsError(index_path + ": not valid JSON: " + e.what());
  }
  if (!index_.is_object() || !index_.contains("weight_map") || !index_["weight_map"].is_object())
    throw SafetensorsError(index_path + ": no \"weight_map\" object");
  std::set<std::string> seen;
  for (const auto& [tensor, shard] : index_["weight_map"].items()) {
    if (!shard.is_string()) throw SafetensorsError(index_path + ": weight_map entry '" + tensor + "' is not a string");
    const std::string name = shard.get<std::string>();
    if (!is_plain_file_name(name))
      throw SafetensorsError(index_path + ": shard name '" + name + "' is not a plain file name");
    if (seen.insert(name).second) shards_.push_back(name);
  }
  for (const std::string& name : shards_)
    if (!is_regular_file(path + "/" + name)) throw SafetensorsError(index_path + ": shard '" + name + "' is missing");
}

std::string Checkpoint::shard_path(size_t i) const {
  return is_directory_ ? directory_ + "/" + shards_[i] : shards_[i];
}

std::unique_ptr<st::SafetensorsFile> Checkpoint::open_shard(size_t i) const {
  auto file = std::make_unique<st::SafetensorsFile>(shard_path(i));
  if (!index_.contains("weight_map")) return file;
  const auto& weight_map = index_["weight_map"];
  size_t listed = 0;
  for (const auto& [tensor, shard] : weight_map.items()) {
    if (shard.get<std::string>() != shards_[i]) continue;
    ++listed;
    if (!file->view().find(tensor))
      throw SafetensorsError(file->path() + ": tensor '" + tensor + "' listed in the index is not in this shard");
  }
  if (listed != file->view().tensors().size())
    throw SafetensorsError(file->path() + ": holds tensors that the index does not list for it");
  return file;
}

}  // namespace mxq::cli
