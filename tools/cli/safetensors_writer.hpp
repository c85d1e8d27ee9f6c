// Streaming, atomic writer of safetensors files. Every tensor is declared up front (so the header,
// which holds all offsets, is written first); tensor bytes then follow one tensor at a time, so a
// caller never needs more than one tensor in memory. Output goes to a temporary file in the target
// directory that commit() fsyncs and renames over the target: an interrupted run leaves either the
// old file or none, never a truncated one.
#pragma once
#include "temp_files.hpp"
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "safetensors_reader.hpp"

namespace mxq::st {

struct TensorSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t bytes() const;  // shape elements times the dtype size
};

class SafetensorsWriter {
 public:
  // Throws WriteError (temp_files.hpp) for duplicate or empty names, unknown dtypes, I/O errors.
  // `mode`: the permission bits the file gets, less the umask (the input's, for an output that
  // replaces an input file).
  SafetensorsWriter(const std::string& path, std::vector<TensorSpec> tensors,
                    const std::map<std::string, std::string>& metadata, unsigned mode = 0666);
  ~SafetensorsWriter();  // removes the temporary file unless commit() succeeded
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Appends bytes of tensor `name`, in one call or several: tensors must be written in the
  // declared order and each exactly to its declared size (checked here and at commit).
  void write(const std::string& name, const void* data, uint64_t bytes);
  void commit();

 private:
  void write_all(const void* data, uint64_t bytes);
  std::string path_, temp_path_;
  std::vector<TensorSpec> tensors_;
  size_t current_ = 0;    // the tensor being written
  uint64_t written_ = 0;  // its bytes written so far
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace mxq::st
