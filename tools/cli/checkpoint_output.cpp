#include "checkpoint_output.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "cli_error.hpp"
#include "temp_files.hpp"

namespace mxq::cli {
namespace {

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError(kExitFailure, path + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text, unsigned mode) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string temp;
  const int fd = st::create_temp_file(dir, path, &temp, mode);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  const bool written = left == 0 && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    st::forget_temp_file(temp);
    throw CliError(kExitFailure, path + ": cannot write: " + why);
  }
  st::forget_temp_file(temp);
}

CheckpointOutput::CheckpointOutput(const Checkpoint& in, const std::string& out, bool overwrite) : in_(in), out_(out) {
  struct stat st {};
  const bool exists = ::lstat(out.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    throw CliError(kExitUsage, out + ": exists and is not a regular file or directory; give a new path");
  if (in.is_directory()) {
    if (exists && real_path(out) == real_path(in.directory()))
      throw CliError(kExitUsage, out + ": the output directory must differ from the input");
    if (exists && !S_ISDIR(st.st_mode))
      throw CliError(kExitUsage, out + ": is a file; give a directory for a checkpoint directory");
  } else {
    if (exists && S_ISDIR(st.st_mode)) throw CliError(kExitUsage, out + ": is a directory; give an output file name");
    if (exists && real_path(out) == real_path(in.shard_path(0)))
      throw CliError(kExitUsage, out + ": the output must differ from the input");
  }
  if (exists && !overwrite) throw CliError(kExitUsage, out + ": exists; give --force to overwrite it");
  if (in.is_directory() && !exists && ::mkdir(out.c_str(), 0755) != 0)
    throw CliError(kExitFailure, out + ": cannot create directory: " + std::strerror(errno));
}

std::string CheckpointOutput::shard_path(size_t i) const {
  return in_.is_directory() ? out_ + "/" + in_.shard_names()[i] : out_;
}

void CheckpointOutput::add_to_index(const std::string& tensor, size_t shard, uint64_t bytes) {
  weight_map_[tensor] = in_.shard_names()[shard];
  total_bytes_ += bytes;
}

void CheckpointOutput::finish(const std::function<void(nlohmann::json& config)>& edit_config) {
  if (!in_.is_directory()) return;
  nlohmann::json index = {{"metadata", {{"total_size", total_bytes_}}}, {"weight_map", weight_map_}};
  write_file_atomically(out_ + "/" + Checkpoint::kIndexName, index.dump(2) + "\n",
                        st::permission_bits(in_.directory() + "/" + Checkpoint::kIndexName));

  DIR* dir = ::opendir(in_.directory().c_str());
  if (!dir) throw CliError(kExitFailure, in_.directory() + ": cannot list");
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) names.emplace_back(entry->d_name);
  ::closedir(dir);
  const std::set<std::string> shards(in_.shard_names().begin(), in_.shard_names().end());
  for (const std::string& name : names) {
    const std::string from = in_.directory() + "/" + name;
    struct stat st {};
    // Only regular files are copied: a symlink's target is not part of the checkpoint.
    if (::lstat(from.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      std::fprintf(stderr, "mxq: note: %s is a symbolic link; not copied\n", from.c_str());
      continue;
    }
    if (!S_ISREG(st.st_mode)) continue;
    if (shards.count(name) || ends_with(name, ".safetensors") || name == Checkpoint::kIndexName) continue;
    std::string text = read_file(from);
    if (name == "config.json") {
      nlohmann::json config;
      try {
        config = parse_config(text, from);
      } catch (const st::SafetensorsError& e) {
        throw CliError(kExitBadInput, e.what());
      }
      edit_config(config);
      text = config.dump(2) + "\n";
    }
    write_file_atomically(out_ + "/" + name, text, st.st_mode & 0666);
  }
}

}  // namespace mxq::cli
