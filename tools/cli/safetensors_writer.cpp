#include "safetensors_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "safetensors_dtype.hpp"

namespace mxq::st {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& message) { throw WriteError(path + ": " + message); }

std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

uint64_t TensorSpec::bytes() const {
  uint64_t n = static_cast<uint64_t>(dtype_size(dtype));
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

SafetensorsWriter::SafetensorsWriter(const std::string& path, std::vector<TensorSpec> tensors,
                                     const std::map<std::string, std::string>& metadata, unsigned mode)
    : path_(path), tensors_(std::move(tensors)) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorSpec& t : tensors_) {
    if (t.name.empty() || t.name == "__metadata__") fail(path, "invalid tensor name '" + t.name + "'");
    if (!names.insert(t.name).second) fail(path, "duplicate tensor name '" + t.name + "'");
    if (dtype_size(t.dtype) == 0) fail(path, "tensor '" + t.name + "': unknown dtype " + t.dtype);
    for (int64_t d : t.shape)
      if (d < 0) fail(path, "tensor '" + t.name + "': negative dimension");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  std::string text = header.empty() ? std::string("{}") : header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // tensor data starts 8-byte aligned

  fd_ = create_temp_file(directory_of(path), path, &temp_path_, mode);
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(text.size() >> (8 * i));
  write_all(length, 8);
  write_all(text.data(), text.size());
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    forget_temp_file(temp_path_);
  }
}

void SafetensorsWriter::write_all(const void* data, uint64_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path_, std::string("write failed: ") + std::strerror(errno));
    p += n;
    bytes -= static_cast<uint64_t>(n);
  }
}

void SafetensorsWriter::write(const std::string& name, const void* data, uint64_t bytes) {
  if (current_ < tensors_.size() && tensors_[current_].name != name && written_ == tensors_[current_].bytes()) {
    ++current_;  // the previous tensor is complete: move on
    written_ = 0;
  }
  if (current_ >= tensors_.size() || tensors_[current_].name != name)
    fail(path_, "tensor '" + name + "' written out of the declared order");
  if (bytes > tensors_[current_].bytes() - written_)
    fail(path_, "tensor '" + name + "': more bytes than the declared " + std::to_string(tensors_[current_].bytes()));
  write_all(data, bytes);
  written_ += bytes;
}

void SafetensorsWriter::commit() {
  while (current_ < tensors_.size() && written_ == tensors_[current_].bytes()) {
    ++current_;
    written_ = 0;
  }
  if (current_ != tensors_.size()) fail(path_, "commit with tensor '" + tensors_[current_].name + "' incomplete");
  if (::fsync(fd_) != 0) fail(path_, std::string("fsync failed: ") + std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    fail(path_, std::string("cannot rename the temporary file: ") + std::strerror(errno));
  forget_temp_file(temp_path_);
  committed_ = true;
}

}  // namespace mxq::st
