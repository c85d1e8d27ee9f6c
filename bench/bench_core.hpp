// The benchmark core behind `mxq_bench` and `mxq bench`: the list of cases, the runner that times
// each op against a same-run copy of the same number of bytes, and the table / JSON reports.
// docs/performance.md describes the method.
#pragma once
#include <mxq/mxq.hpp>
#include <mxq/names.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace mxq::bench {

// swiglu: swiglu_quantize of h (rows, 2 cols), concatenated halves, silu; swiglu_backward:
// swiglu_backward_quantize from dA (rows, cols) and that h. Both quantize as the case's format,
// direction and groups say.
enum class Op : int32_t { quantize, dequantize, pad, unpad, amax, swiglu, swiglu_backward };

// One row of the benchmark. Shapes follow the public API: (batch, rows, cols), batch = E for 3-D
// expert weights, cols the contiguous dimension (the SwiGLU ops: the activation's, F).
struct BenchCase {
  Op op = Op::quantize;
  int64_t batch = 1, rows = 0, cols = 0;
  DType dtype = DType::bf16;  // input dtype (quantize, amax, pad, unpad, swiglu); dequantize's output dtype
  Format format = Format::mxfp8;
  Direction direction = Direction::rowwise;  // dequantize: the single direction it inverts
  ScaleLayout layout = ScaleLayout::blocked;
  ScaleRule rule = ScaleRule::rceil;
  int32_t groups = 0;          // token groups G along rows (2-D only), jagged sizes; 0: none
  int32_t group_multiple = 1;  // the jagged ends cut at multiples of this (the last one at the rows)
  int32_t pad_rowwise = 0;     // quantize: fused padding of the rowwise data (QuantizeGroups)
  int32_t pad_colwise = 0;     // quantize: padding of the colwise data (K-groups)
  int32_t alignment = 0;       // pad / unpad
  bool amax_given = false;     // nvfp4: the caller passes the tensor amax; false: mxq computes it
  bool amax_out = false;       // pad / unpad / quantize: also the amax (PadArgs::amax, QuantizeOutputs::amax)
  bool graph = false;          // time replays of a CUDA graph holding one op call
};

struct BenchShape {
  int64_t batch = 1, rows = 0, cols = 0;
};

// How the cache is emptied before every timed run. write (the default, like torch / Triton
// benchmarks): a memset of twice the cache, whose dirty lines the timed op then writes back
// while it runs (up to the cache's size of extra DRAM writes, charged to the op and the copy
// alike). read: a kernel that reads twice the cache, so that the timed op starts on clean lines
// and its time is its own traffic only.
enum class Flush : int32_t { write, read };

struct BenchOptions {
  Backend backend = Backend::auto_;  // auto_: cuda when built with CUDA and a device is present
  int runs = 0;                      // timed runs per case; 0: 50 on cuda, 5 on cpu
  int warmup = -1;                   // untimed runs first; -1: 5 on cuda, 1 on cpu
  bool quick = false;                // a few shapes only
  std::vector<Op> ops;               // filters; empty: all
  std::vector<Format> formats;
  std::vector<Direction> directions;
  std::vector<int32_t> groups;     // token-group counts (0: ungrouped); empty: all
  std::vector<DType> dtypes;       // every case once per dtype (dequantize: its output); empty: bf16
  std::vector<BenchShape> shapes;  // replace the default shapes
  bool graph_only = false;         // only the CUDA-graph rows
  bool no_graph = false;           // no CUDA-graph rows
  Flush flush = Flush::write;
  std::string grouped_colwise = "auto";  // cuda: auto, or windows / tiles forced where either applies
  std::string grouped_rowwise = "auto";  // cuda: auto, or tiles forced where the tuning takes row tiles
};

enum class RowStatus : int32_t { ok, unsupported, error };

struct BenchResult {
  BenchCase c;
  RowStatus status = RowStatus::ok;
  std::string message;        // why unsupported / the error
  int64_t bytes_read = 0;     // input (and offsets, amax) read by the op
  int64_t bytes_written = 0;  // every output buffer: data, scales, tensor scales, offsets
  int runs = 0;
  double op_us = 0;  // median
  double op_min_us = 0;
  double copy_us = 0;  // median of the same-run copy of bytes_read + bytes_written
  double host_us = 0;  // median wall time of the call on the host (cuda: it returns once queued)
  double op_gbps = 0;  // (bytes_read + bytes_written) / op_us
  double copy_gbps = 0;
  double ratio = 0;  // op_gbps / copy_gbps
};

// What the numbers were measured on and how.
struct BenchEnvironment {
  Backend backend = Backend::cpu;
  std::string device;       // GPU name, or "CPU (N threads)"
  std::string timer;        // "cuda events" or "wall clock"
  std::string note;         // e.g. why the CPU backend is benchmarked
  std::string forced;       // the grouped kernels forced in place of the tuning's, "" for none
  int64_t cache_bytes = 0;  // L2 (cuda) or last-level cache (cpu) as queried
  int64_t flush_bytes = 0;  // bytes written (or read) between timed runs to evict it
  Flush flush = Flush::write;
  int runs = 0, warmup = 0;
  std::string mxq_version;
};

// The grouped kernels --grouped-colwise / --grouped-rowwise force ("" when both are auto), so
// that a forced run's report cannot pass for the tuning's.
std::string forced_kernels(const BenchOptions& options);

class BenchDevice;

// Owns the device state across cases (stream, events, the cache-flush buffer).
class BenchRunner {
 public:
  // Throws std::runtime_error when the requested backend cannot run (e.g. cuda without a device).
  explicit BenchRunner(const BenchOptions& options);
  ~BenchRunner();
  BenchRunner(const BenchRunner&) = delete;
  BenchRunner& operator=(const BenchRunner&) = delete;

  const BenchEnvironment& environment() const { return env_; }
  // Allocates the case's buffers, times it, frees them. Never throws for a failing op: the
  // result says unsupported or error and the next case can run.
  BenchResult run_case(const BenchCase& c);

 private:
  std::unique_ptr<BenchDevice> device_;
  BenchEnvironment env_;
};

// The backend `auto_` resolves to on this machine.
Backend resolve_backend(Backend requested);

// The default cases (MXFP8, token groups, MXFP4 / NVFP4, SwiGLU) for a backend (cuda: full sizes; cpu:
// small shapes).
std::vector<BenchCase> default_cases(Backend backend, bool quick);
// default_cases filtered by the options; with options.shapes, every distinct case kind at each
// given shape instead (kinds that cannot take a shape, e.g. groups on 3-D, are left out).
std::vector<BenchCase> select_cases(const BenchOptions& options, Backend backend);

// Names used in tables, JSON and on the command line.
const char* op_name(Op op);
std::string shape_string(const BenchCase& c);  // "MxK" or "ExNxK"
// Whether format, direction and layout mean anything for the op (quantize, dequantize, the SwiGLU ops).
bool op_has_format(Op op);
bool is_swiglu(Op op);  // swiglu or swiglu_backward
// Whether the case's nvfp4 tensor amax is either given or computed (quantize, the SwiGLU ops).
bool has_amax_choice(const BenchCase& c);
// "op shape format dir layout detail", "-" for what the op has not.
std::string case_label(const BenchCase& c);
std::string detail_string(const BenchCase& c);  // rule, groups, padding, amax, graph
// Parses "MxK" or "ExMxK"; false on malformed input.
bool parse_shape(const std::string& text, BenchShape* shape);

// Text table, printed row by row as results arrive.
void print_header(std::ostream& os, const BenchEnvironment& env);
void print_row(std::ostream& os, const BenchResult& r);
void print_table(std::ostream& os, const BenchEnvironment& env, const std::vector<BenchResult>& results);
std::string to_json(const BenchEnvironment& env, const std::vector<BenchResult>& results);

}  // namespace mxq::bench
