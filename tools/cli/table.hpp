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
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::FILE* out) const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string format_bytes(int64_t bytes);                  // "1.50 MiB"
std::string format_shape(const std::vector<int64_t>& dims);  // "8x512x1024"

}  // namespace mxq::cli
