// A plain-text table with right-aligned numeric columns, printed once all rows are known.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace mxq::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row);  // cells are shown printable (see printable())
  void print(std::FILE* out) const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// `s` with control characters (terminal escape sequences included) written as \xNN, so that text
// from an input file (tensor names, metadata) cannot drive the terminal.
std::string printable(const std::string& s);

std::string format_bytes(int64_t bytes);                     // "1.50 MiB"
std::string format_shape(const std::vector<int64_t>& dims);  // "8x512x1024"

}  // namespace mxq::cli
