// Reader of safetensors files (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets}, "__metadata__": {...}},
// then the tensor bytes. A checkpoint is untrusted input: every rule below is checked before any
// tensor byte is touched, and a violation throws SafetensorsError naming the file, the tensor and
// the rule. Nothing here depends on libmxq, so the fuzz target (fuzz/) builds it on its own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxq::st {

class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TensorInfo {
  std::string name;
  std::string dtype;  // safetensors spelling: BF16, F32, F8_E4M3, U8, ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range inside the data section
  uint64_t bytes() const { return end - begin; }
  int64_t elements() const;
};

// A parsed view of a safetensors image held in memory (not owned).
// Checked: the header length fits the image and a sane limit; the header is a JSON object of
// objects; dtypes are known; shapes are non-negative integers whose element count times the dtype
// size equals the byte range without overflow; offsets are in range, ordered, non-overlapping and
// cover the data section exactly; names are unique and non-empty; __metadata__ maps strings to
// strings.
class SafetensorsView {
 public:
  static SafetensorsView parse(const uint8_t* image, size_t size, const std::string& origin);

  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in data order
  const TensorInfo* find(const std::string& name) const;
  const uint8_t* data(const TensorInfo& t) const { return data_ + t.begin; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t header_bytes() const { return header_bytes_; }  // 8 + N

 private:
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  const uint8_t* data_ = nullptr;
  uint64_t header_bytes_ = 0;
};

// A read-only memory map of a file; tensors are paged in on demand, never read whole.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws SafetensorsError
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Drops the whole pages inside [p, p + bytes) from this process's memory (a later read maps them
  // again from the file), so reading a large file tensor by tensor does not keep all of it resident.
  void release(const void* p, size_t bytes) const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A safetensors file on disk: the map plus the validated view.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path)
      : path_(path), map_(path), view_(SafetensorsView::parse(map_.data(), map_.size(), path)) {}
  const std::string& path() const { return path_; }
  const SafetensorsView& view() const { return view_; }
  // MappedFile::release for the bytes of a tensor of this file, once they have been used.
  void release(const TensorInfo& t) const { map_.release(view_.data(t), t.bytes()); }
  void release_bytes(const void* p, size_t bytes) const { map_.release(p, bytes); }

 private:
  std::string path_;
  MappedFile map_;
  SafetensorsView view_;
};

}  // namespace mxq::st
