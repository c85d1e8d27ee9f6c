// The text table and the JSON report.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ostream>
#include <string>

#include "bench_core.hpp"

namespace mxq::bench {
namespace {

// Column widths of the table; the header and every row use the same format.
constexpr const char* kRowFormat = "%-15s %-14s %-10s %-7s %-7s %-24s %10s %8s %9s %6s %8s";

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Bandwidths: whole GB/s on GPUs, more digits for the slow cpu reference.
std::string bandwidth(double v) { return fixed(v, v >= 100 ? 0 : v >= 1 ? 1 : 3); }

std::string row_text(const char* op, const std::string& shape, const char* format, const char* dir, const char* layout,
                     const std::string& detail, const std::string& us, const std::string& gbps, const std::string& copy,
                     const std::string& ratio, const std::string& host) {
  char buf[256];
  std::snprintf(buf, sizeof buf, kRowFormat, op, shape.c_str(), format, dir, layout, detail.c_str(), us.c_str(),
                gbps.c_str(), copy.c_str(), ratio.c_str(), host.c_str());
  return buf;
}

const char* status_name(RowStatus s) {
  switch (s) {
    case RowStatus::ok: return "ok";
    case RowStatus::unsupported: return "unsupported";
    case RowStatus::error: return "error";
  }
  return "?";
}

}  // namespace

void print_header(std::ostream& os, const BenchEnvironment& env) {
  os << "mxq " << env.mxq_version << " bench: backend " << to_string(env.backend) << " on " << env.device << "\n"
     << "timer: " << env.timer << ", median of " << env.runs << " runs after " << env.warmup << " warm-up; cache "
     << (env.cache_bytes >> 10) << " KiB flushed by " << (env.flush == Flush::read ? "reading " : "writing ")
     << (env.flush_bytes >> 10) << " KiB before every timed run\n"
     << "GB/s = (input read + all outputs written) / median time; copy = same-run device copy of "
        "the same bytes; ratio = GB/s / copy GB/s; host µs = median time of the call on the host "
        "(queued, not waited for)\n";
  if (!env.note.empty()) os << "NOTE: " << env.note << "\n";
  if (!env.forced.empty()) os << "FORCED (not the tuning's choice): " << env.forced << "\n";
  // "µs" is three bytes but two columns: one leading space keeps the column aligned.
  os << row_text("op", "shape", "format", "dir", "layout", "detail", " µs", "GB/s", "copy GB/s", "ratio", " host µs")
     << "\n";
}

void print_row(std::ostream& os, const BenchResult& r) {
  const BenchCase& c = r.c;
  const char* format = op_has_format(c.op) ? to_string(c.format) : to_string(c.dtype);
  const char* dir = op_has_format(c.op) ? to_string(c.direction) : "-";
  const char* layout = op_has_format(c.op) ? to_string(c.layout) : "-";
  if (r.status != RowStatus::ok) {
    os << row_text(op_name(c.op), shape_string(c), format, dir, layout, detail_string(c), status_name(r.status), "", "",
                   "", "")
       << "  " << r.message << "\n";
    return;
  }
  os << row_text(op_name(c.op), shape_string(c), format, dir, layout, detail_string(c), fixed(r.op_us, 1),
                 bandwidth(r.op_gbps), bandwidth(r.copy_gbps), fixed(r.ratio, 3), fixed(r.host_us, 1))
     << "\n";
}

void print_table(std::ostream& os, const BenchEnvironment& env, const std::vector<BenchResult>& results) {
  print_header(os, env);
  for (const BenchResult& r : results) print_row(os, r);
}

std::string to_json(const BenchEnvironment& env, const std::vector<BenchResult>& results) {
  nlohmann::ordered_json root;
  root["mxq_version"] = env.mxq_version;
  root["backend"] = to_string(env.backend);
  root["device"] = env.device;
  root["timer"] = env.timer;
  if (!env.note.empty()) root["note"] = env.note;
  if (!env.forced.empty()) root["forced_kernels"] = env.forced;
  root["cache_bytes"] = env.cache_bytes;
  root["flush_bytes"] = env.flush_bytes;
  root["flush"] = env.flush == Flush::read ? "read" : "write";
  root["runs"] = env.runs;
  root["warmup"] = env.warmup;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const BenchResult& r : results) {
    const BenchCase& c = r.c;
    nlohmann::ordered_json j;
    j["op"] = op_name(c.op);
    j["shape"] = {c.batch, c.rows, c.cols};
    j["dtype"] = to_string(c.dtype);
    if (op_has_format(c.op)) {
      j["format"] = to_string(c.format);
      j["direction"] = to_string(c.direction);
      j["layout"] = to_string(c.layout);
      j["rule"] = to_string(c.rule);
    }
    if (has_amax_choice(c)) j["amax_given"] = c.amax_given;
    if (c.op == Op::pad || c.op == Op::unpad || c.op == Op::quantize) j["amax_out"] = c.amax_out;
    j["groups"] = c.groups;
    j["group_multiple"] = c.group_multiple;
    j["pad_rowwise"] = c.pad_rowwise;
    j["pad_colwise"] = c.pad_colwise;
    j["alignment"] = c.alignment;
    j["graph"] = c.graph;
    j["detail"] = detail_string(c);
    j["status"] = status_name(r.status);
    if (!r.message.empty()) j["message"] = r.message;
    j["bytes_read"] = r.bytes_read;
    j["bytes_written"] = r.bytes_written;
    if (r.status == RowStatus::ok) {
      j["runs"] = r.runs;
      j["median_us"] = r.op_us;
      j["min_us"] = r.op_min_us;
      j["gbps"] = r.op_gbps;
      j["copy_median_us"] = r.copy_us;
      j["copy_gbps"] = r.copy_gbps;
      j["ratio"] = r.ratio;
      j["host_median_us"] = r.host_us;
    }
    rows.push_back(std::move(j));
  }
  root["results"] = std::move(rows);
  return root.dump(2) + "\n";
}

}  // namespace mxq::bench
