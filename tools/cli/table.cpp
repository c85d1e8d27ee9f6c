#include "table.hpp"

#include <algorithm>
#include <cctype>

namespace mxq::cli {

std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void Table::add(std::vector<std::string> row) {
  for (std::string& cell : row) cell = printable(cell);
  rows_.push_back(std::move(row));
}
namespace {

bool looks_numeric(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s == "inf" || s == "n/a" || s[0] == '-');
}

}  // namespace

void Table::print(std::FILE* out) const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());

  auto print_row = [&](const std::vector<std::string>& row, bool is_header) {
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const bool right = !is_header && c > 0 && looks_numeric(cell);
      const int w = static_cast<int>(width[c]);
      std::fprintf(out, right ? "%*s" : "%-*s", w, cell.c_str());
      std::fputs(c + 1 < width.size() ? "  " : "\n", out);
    }
  };
  print_row(header_, true);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  std::fprintf(out, "%s\n", std::string(total > 2 ? total - 2 : 0, '-').c_str());
  for (const auto& row : rows_) print_row(row, false);
}

std::string format_bytes(int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else if (bytes < 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  else if (bytes < 1024LL * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  return buf;
}

std::string format_shape(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return dims.empty() ? "scalar" : s;
}

}  // namespace mxq::cli
