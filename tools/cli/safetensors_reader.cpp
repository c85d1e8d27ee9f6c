#include "safetensors_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "safetensors_dtype.hpp"

namespace mxq::st {
namespace {

using nlohmann::json;

// The reference implementation's limit: no real checkpoint has a larger header, and a larger
// length is the cheapest way to make a reader allocate without bound.
constexpr uint64_t kMaxHeaderBytes = 100u * 1000u * 1000u;
// top-level object > tensor object > shape / data_offsets array
constexpr int kMaxJsonDepth = 3;
// Limits that bound the parsed header's memory: no real checkpoint comes near them.
constexpr size_t kMaxTensors = size_t{1} << 18;
constexpr size_t kMaxArrayLength = 64;  // shape dimensions (and the data_offsets pair)

[[noreturn]] void fail(const std::string& origin, const std::string& message) {
  throw SafetensorsError(origin + ": " + message);
}

// A first pass over the header that builds nothing: it finds duplicate keys (nlohmann's parser
// would keep the last), nesting deeper than a header has and arrays or tensor counts past the
// limits, and stops at the first. The DOM is built only after it passed, in time n log n (the
// callback parser rescans the parent object at every child's end: quadratic in the tensor count).
class HeaderShape : public nlohmann::json_sax<json> {
 public:
  std::string problem;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(json::number_integer_t) override { return value(); }
  bool number_unsigned(json::number_unsigned_t) override { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) override { return value(); }
  bool string(json::string_t&) override { return value(); }
  bool binary(json::binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    if (!open(true)) return false;
    keys_.emplace_back();
    return true;
  }
  bool key(json::string_t& k) override {
    if (!keys_.back().insert(k).second) return stop("duplicate key '" + k + "' in the header");
    if (depth_ == 1 && k != "__metadata__" && ++tensors_ > kMaxTensors)
      return stop("more than " + std::to_string(kMaxTensors) + " tensors in one file");
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    return close();
  }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    return stop(std::string("header is not valid JSON: ") + e.what());
  }

 private:
  bool stop(const std::string& why) {
    if (problem.empty()) problem = why;
    return false;
  }
  bool open(bool object) {
    if (!value()) return false;  // the container is an element of its parent
    if (++depth_ > kMaxJsonDepth) return stop("header nests deeper than a safetensors header");
    lengths_.push_back(object ? 0 : 1);  // arrays count their elements from 1
    return true;
  }
  bool close() {
    --depth_;
    lengths_.pop_back();
    return true;
  }
  // Counts a value against the limit when it is an element of an array.
  bool value() {
    if (!lengths_.empty() && lengths_.back() > 0 && ++lengths_.back() > kMaxArrayLength + 1)
      return stop("an array of the header has more than " + std::to_string(kMaxArrayLength) + " elements");
    return true;
  }
  int depth_ = 0;
  size_t tensors_ = 0;
  std::vector<std::set<std::string>> keys_;
  std::vector<size_t> lengths_;  // per open container: 0 for objects, 1 + elements for arrays
};

json parse_header(const char* first, const char* last, const std::string& origin) {
  HeaderShape shape;
  if (!json::sax_parse(first, last, &shape) && shape.problem.empty()) shape.problem = "header is not valid JSON";
  if (!shape.problem.empty()) fail(origin, shape.problem);
  json header;
  try {
    header = json::parse(first, last);
  } catch (const json::exception& e) {
    fail(origin, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(origin, "header is not a JSON object");
  return header;
}

uint64_t as_u64(const json& v, const std::string& origin, const std::string& what) {
  if (!v.is_number_unsigned()) fail(origin, what + " is not a non-negative integer");
  return v.get<uint64_t>();
}

TensorInfo parse_tensor(const std::string& name, const json& entry, const std::string& origin) {
  const std::string where = "tensor '" + name + "'";
  if (name.empty()) fail(origin, "a tensor has an empty name");
  if (!entry.is_object()) fail(origin, where + ": entry is not an object");
  for (auto it = entry.begin(); it != entry.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
      fail(origin, where + ": unknown field '" + it.key() + "'");
  if (!entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
    fail(origin, where + ": needs dtype, shape and data_offsets");

  TensorInfo t;
  t.name = name;
  if (!entry["dtype"].is_string()) fail(origin, where + ": dtype is not a string");
  t.dtype = entry["dtype"].get<std::string>();
  const int elem = dtype_size(t.dtype);
  if (elem == 0) fail(origin, where + ": unknown dtype '" + t.dtype + "'");

  const json& shape = entry["shape"];
  if (!shape.is_array()) fail(origin, where + ": shape is not an array");
  uint64_t elements = 1;
  bool overflow = false;
  for (const json& d : shape) {
    const uint64_t dim = as_u64(d, origin, where + ": a shape dimension");
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(origin, where + ": shape dimension too large");
    t.shape.push_back(static_cast<int64_t>(dim));
    if (dim != 0 && elements > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
    elements *= dim;
  }
  const bool empty = std::count(t.shape.begin(), t.shape.end(), 0) > 0;
  if (empty) elements = 0, overflow = false;
  if (overflow || elements > std::numeric_limits<uint64_t>::max() / elem)
    fail(origin, where + ": shape element count overflows");

  const json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) fail(origin, where + ": data_offsets is not a pair [begin, end]");
  t.begin = as_u64(offsets[0], origin, where + ": data_offsets[0]");
  t.end = as_u64(offsets[1], origin, where + ": data_offsets[1]");
  if (t.end < t.begin) fail(origin, where + ": data_offsets end before begin");
  if (t.end - t.begin != elements * elem)
    fail(origin, where + ": shape and dtype give " + std::to_string(elements * elem) + " bytes but data_offsets span " +
                     std::to_string(t.end - t.begin));
  return t;
}

}  // namespace

int64_t TensorInfo::elements() const {
  if (std::count(shape.begin(), shape.end(), 0) > 0) return 0;  // huge dims beside a 0 never multiply
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated: n * dtype size == bytes(), so no overflow
  return n;
}

SafetensorsView SafetensorsView::parse(const uint8_t* image, size_t size, const std::string& origin) {
  if (size < 8) fail(origin, "file too small for a safetensors header (" + std::to_string(size) + " bytes)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | image[i];  // little-endian
  // The length's value is not printed: for a file that is no safetensors file at all it is just
  // its first 8 bytes, which are not ours to show.
  if (n > kMaxHeaderBytes)
    fail(origin,
         "header length exceeds the limit of " + std::to_string(kMaxHeaderBytes) + " bytes (not a safetensors file?)");
  if (n > size - 8)
    fail(origin, "header length is larger than the file (" + std::to_string(size) + " bytes; not a safetensors file?)");

  const char* text = reinterpret_cast<const char*>(image + 8);
  const json header = parse_header(text, text + n, origin);

  SafetensorsView view;
  view.header_bytes_ = 8 + n;
  view.data_ = image + view.header_bytes_;
  const uint64_t data_size = size - view.header_bytes_;

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) fail(origin, "__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) fail(origin, "__metadata__ value '" + m.key() + "' is not a string");
        view.metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    view.tensors_.push_back(parse_tensor(it.key(), *it, origin));
  }

  std::sort(view.tensors_.begin(), view.tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  for (const TensorInfo& t : view.tensors_) {
    if (t.begin < expected) fail(origin, "tensor '" + t.name + "' overlaps the previous tensor");
    if (t.begin > expected) fail(origin, "gap before tensor '" + t.name + "' (data not covered)");
    expected = t.end;
    if (expected > data_size)
      fail(origin, "tensor '" + t.name + "' ends at byte " + std::to_string(expected) + " past the data section (" +
                       std::to_string(data_size) + " bytes)");
  }
  if (expected != data_size)
    fail(origin, std::to_string(data_size - expected) + " trailing bytes after the last tensor");
  for (size_t i = 0; i < view.tensors_.size(); ++i) view.index_[view.tensors_[i].name] = i;
  return view;
}

const TensorInfo* SafetensorsView::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SafetensorsError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw SafetensorsError(path + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw SafetensorsError(path + ": cannot map: " + std::strerror(errno));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

void MappedFile::release(const void* p, size_t bytes) const {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + bytes;
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  // Advice only: where it fails the pages just stay mapped.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace mxq::st
