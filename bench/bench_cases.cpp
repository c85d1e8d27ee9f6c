// The default benchmark cases (MXFP8, token groups, MXFP4 / NVFP4, SwiGLU) and their selection by the
// command line.
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "bench_core.hpp"

namespace mxq::bench {
namespace {

constexpr Direction kDirections[] = {Direction::rowwise, Direction::colwise, Direction::both};
constexpr int32_t kGroupAlignment = 32;  // MXFP8 grouped GEMMs: groups padded to the block

// The shapes of one backend's default run.
struct CaseSizes {
  std::vector<BenchShape> dense;       // 2-D quantize, every format, direction and rule
  std::vector<BenchShape> experts;     // 3-D expert weights
  std::vector<BenchShape> dequantize;  // dequantize, both directions
  std::vector<BenchShape> graph;       // small shapes also timed as CUDA-graph replays
  std::vector<int64_t> group_tokens;   // token-group ops: tokens x dims x group counts
  std::vector<int64_t> group_dims;
  std::vector<int32_t> group_counts;
  std::vector<BenchShape> swiglu;  // SwiGLU: rows x F (h is rows x 2F), every count of swiglu_groups
  std::vector<int32_t> swiglu_groups;
};

CaseSizes cuda_sizes(bool quick) {
  if (quick)
    return {{{1, 8192, 2048}, {1, 32768, 7168}},
            {{4, 8192, 5120}},
            {{1, 32768, 7168}},
            {{1, 8192, 2048}},
            {16384},
            {2048, 7168},
            {8},
            {{1, 16384, 1536}},
            {8}};
  CaseSizes s;
  for (int64_t m : {8192, 32768, 131072})
    for (int64_t k : {2048, 7168}) s.dense.push_back({1, m, k});
  s.experts = {{1, 8192, 5120}, {4, 8192, 5120}, {16, 8192, 5120}, {8, 7168, 2048}};
  s.dequantize = {{1, 8192, 2048}, {1, 32768, 7168}};
  s.graph = {{1, 8192, 2048}};
  s.group_tokens = {16384, 131072};
  s.group_dims = {1536, 2048, 5120, 7168};
  s.group_counts = {1, 8, 16, 64};
  s.swiglu = {{1, 131072, 2048}, {1, 16384, 1536}};  // MoE expert MLPs' activations
  s.swiglu_groups = {8, 64};
  return s;
}

// The cpu reference backend is orders of magnitude slower: small shapes of the same kinds.
CaseSizes cpu_sizes(bool quick) {
  if (quick) return {{{1, 512, 1024}}, {{2, 256, 512}}, {{1, 512, 1024}}, {}, {1024}, {512}, {8}, {{1, 512, 512}}, {8}};
  return {{{1, 1024, 2048}, {1, 4096, 2048}}, {{2, 1024, 512}}, {{1, 1024, 2048}}, {}, {4096}, {512, 2048}, {1, 8},
          {{1, 1024, 1024}}, {8}};
}

BenchCase at(BenchCase c, const BenchShape& s) {
  c.batch = s.batch;
  c.rows = s.rows;
  c.cols = s.cols;
  return c;
}

BenchCase quantize_case(Format f, Direction d, ScaleRule r = ScaleRule::rceil) {
  BenchCase c;
  c.format = f;
  c.direction = d;
  c.rule = r;
  return c;
}

// MXFP8: dense and 3-D quantize, dequantize, CUDA-graph rows.
void add_mxfp8(const CaseSizes& s, std::vector<BenchCase>& out) {
  for (const BenchShape& shape : s.dense)
    for (Direction d : kDirections)
      for (ScaleRule r : {ScaleRule::rceil, ScaleRule::floor})
        out.push_back(at(quantize_case(Format::mxfp8, d, r), shape));
  for (const BenchShape& shape : s.experts)
    for (Direction d : kDirections) out.push_back(at(quantize_case(Format::mxfp8, d), shape));
  // Linear scales and e5m2 move the same bytes as blocked e4m3: timed at the dequantize shapes.
  for (const BenchShape& shape : s.dequantize)
    for (Direction d : kDirections) {
      BenchCase linear = quantize_case(Format::mxfp8, d);
      linear.layout = ScaleLayout::linear;
      out.push_back(at(linear, shape));
      out.push_back(at(quantize_case(Format::mxfp8_e5m2, d), shape));
    }
  for (const BenchShape& shape : s.dequantize)
    for (Direction d : {Direction::rowwise, Direction::colwise}) {
      BenchCase c = quantize_case(Format::mxfp8, d);
      c.op = Op::dequantize;
      out.push_back(at(c, shape));
    }
  for (const BenchShape& shape : s.graph)
    for (Direction d : kDirections) {
      BenchCase c = quantize_case(Format::mxfp8, d);
      c.graph = true;
      out.push_back(at(c, shape));
    }
}

// Token groups: pad / unpad, grouped rowwise, colwise K-groups, fused pad + quantize,
// grouped both; plain rowwise of the same tensor for the fused comparison.
void add_groups(const CaseSizes& s, std::vector<BenchCase>& out) {
  for (int64_t m : s.group_tokens)
    for (int64_t k : s.group_dims) {
      const BenchShape shape{1, m, k};
      out.push_back(at(quantize_case(Format::mxfp8, Direction::rowwise), shape));
      for (int32_t g : s.group_counts) {
        BenchCase base;
        base.groups = g;
        for (Op op : {Op::pad, Op::unpad}) {
          BenchCase c = base;
          c.op = op;
          c.alignment = kGroupAlignment;
          out.push_back(at(c, shape));
        }
        BenchCase rowwise = base, fused = base, colwise = base, both = base;
        fused.pad_rowwise = kGroupAlignment;
        colwise.direction = Direction::colwise;
        colwise.pad_colwise = kGroupAlignment;
        both.direction = Direction::both;
        both.pad_colwise = kGroupAlignment;
        for (const BenchCase& c : {rowwise, fused, colwise, both}) out.push_back(at(c, shape));
      }
    }
  // Dequantize of the grouped layouts: per-group rowwise scales, colwise K-groups padded, and
  // unpadded with sizes that are multiples of 32 (docs/spec.md's rule for unpadded groups along K).
  for (const BenchShape& shape : s.dequantize)
    for (Format f : {Format::mxfp8, Format::mxfp4, Format::nvfp4})
      for (Direction d : {Direction::rowwise, Direction::colwise}) {
        BenchCase c = quantize_case(f, d);
        c.op = Op::dequantize;
        c.groups = 8;
        if (d == Direction::colwise) c.pad_colwise = kGroupAlignment;
        out.push_back(at(c, shape));
        if (d == Direction::colwise) {
          c.pad_colwise = 0;
          c.group_multiple = 32;
          out.push_back(at(c, shape));
        }
      }
  // Graph replays of the grouped ops MoE layers capture (offsets stay on the device).
  if (!s.graph.empty() && !s.group_tokens.empty()) {
    BenchCase pad, fused, both;
    pad.op = Op::pad;
    pad.alignment = kGroupAlignment;
    fused.pad_rowwise = kGroupAlignment;
    both.direction = Direction::both;
    both.pad_colwise = kGroupAlignment;
    for (BenchCase c : {pad, fused, both}) {
      c.groups = 8;
      c.graph = true;
      out.push_back(at(c, {1, s.group_tokens.front(), s.group_dims.front()}));
    }
  }
}

// MXFP4 and NVFP4 (computed and given amax, given with the amax output), 3-D, groups
// along M, dequantize, amax (by the reduction, and by pad / unpad as they copy).
void add_fp4(const CaseSizes& s, std::vector<BenchCase>& out) {
  for (const BenchShape& shape : s.dense) {
    for (Direction d : kDirections) {
      out.push_back(at(quantize_case(Format::mxfp4, d), shape));
      BenchCase computed = quantize_case(Format::nvfp4, d), given = computed;
      given.amax_given = true;
      out.push_back(at(computed, shape));
      out.push_back(at(given, shape));
      given.amax_out = true;  // delayed scaling: also this tensor's amax, for the next call
      out.push_back(at(given, shape));
    }
    BenchCase amax;
    amax.op = Op::amax;
    out.push_back(at(amax, shape));
    // The amax found by the producer of the tensor instead: pad / unpad with and without it.
    for (Op op : {Op::pad, Op::unpad})
      for (bool amax_out : {false, true}) {
        BenchCase c;
        c.op = op;
        c.groups = 8;
        c.alignment = kGroupAlignment;
        c.amax_out = amax_out;
        out.push_back(at(c, shape));
      }
  }
  for (const BenchShape& shape : s.dequantize)  // mxfp4 with the floor rule: a shape or two
    out.push_back(at(quantize_case(Format::mxfp4, Direction::rowwise, ScaleRule::floor), shape));
  const std::vector<BenchShape> experts(s.experts.end() - std::min<size_t>(2, s.experts.size()), s.experts.end());
  for (const BenchShape& shape : experts)
    for (Format f : {Format::mxfp4, Format::nvfp4})
      for (Direction d : kDirections) out.push_back(at(quantize_case(f, d), shape));
  for (int64_t m : s.group_tokens)
    for (Format f : {Format::mxfp4, Format::nvfp4})
      for (Direction d : kDirections) {  // colwise and both: K-groups padded to the block
        BenchCase c = quantize_case(f, d);
        c.groups = 8;
        if (d != Direction::rowwise) c.pad_colwise = kGroupAlignment;
        out.push_back(at(c, {1, m, s.group_dims.back()}));
      }
  for (const BenchShape& shape : s.dequantize)
    for (Format f : {Format::mxfp4, Format::nvfp4})
      for (Direction d : {Direction::rowwise, Direction::colwise}) {
        BenchCase c = quantize_case(f, d);
        c.op = Op::dequantize;
        out.push_back(at(c, shape));
      }
}

// SwiGLU with quantize, per token group with fused padding: the forward to mxfp8 rowwise and both,
// to nvfp4 rowwise (amax given, rows padded to 128 as its grouped GEMMs read them), and the
// backward to mxfp8 both.
void add_swiglu(const CaseSizes& s, std::vector<BenchCase>& out) {
  for (const BenchShape& shape : s.swiglu)
    for (int32_t g : s.swiglu_groups) {
      BenchCase rowwise = quantize_case(Format::mxfp8, Direction::rowwise);
      rowwise.op = Op::swiglu;
      rowwise.groups = g;
      rowwise.pad_rowwise = kGroupAlignment;
      BenchCase both = rowwise, nvfp4 = rowwise;
      both.direction = Direction::both;
      both.pad_colwise = kGroupAlignment;
      nvfp4.format = Format::nvfp4;
      nvfp4.amax_given = true;
      nvfp4.pad_rowwise = 128;
      BenchCase backward = both;
      backward.op = Op::swiglu_backward;
      for (const BenchCase& c : {rowwise, both, nvfp4, backward}) out.push_back(at(c, shape));
    }
}

template <class T>
bool allowed(const std::vector<T>& filter, T value) {
  return filter.empty() || std::find(filter.begin(), filter.end(), value) != filter.end();
}

// Everything that tells two cases apart, the shape optionally left out.
std::string case_key(const BenchCase& c, bool with_shape) {
  std::ostringstream key;
  key << op_name(c.op) << ' ' << to_string(c.format) << ' ' << to_string(c.direction) << ' ' << to_string(c.layout)
      << ' ' << to_string(c.dtype) << ' ' << detail_string(c) << ' ' << c.alignment;
  if (with_shape) key << ' ' << shape_string(c);
  return key.str();
}

}  // namespace

std::vector<BenchCase> default_cases(Backend backend, bool quick) {
  const CaseSizes sizes = backend == Backend::cuda ? cuda_sizes(quick) : cpu_sizes(quick);
  std::vector<BenchCase> cases;
  add_mxfp8(sizes, cases);
  add_groups(sizes, cases);
  add_fp4(sizes, cases);
  add_swiglu(sizes, cases);
  // The lists overlap (e.g. plain rowwise at a shape two lists use): keep the first of each.
  std::set<std::string> seen;
  std::vector<BenchCase> unique;
  for (const BenchCase& c : cases)
    if (seen.insert(case_key(c, true)).second) unique.push_back(c);
  return unique;
}

std::vector<BenchCase> select_cases(const BenchOptions& o, Backend backend) {
  const bool format_filter = !o.formats.empty() || !o.directions.empty();
  std::vector<BenchCase> kept;
  for (const BenchCase& c : default_cases(backend, o.quick)) {
    if (!allowed(o.ops, c.op)) continue;
    if (op_has_format(c.op) && (!allowed(o.formats, c.format) || !allowed(o.directions, c.direction))) continue;
    // --format / --dir without --op: quantize and dequantize rows only.
    if (format_filter && o.ops.empty() && c.op != Op::quantize && c.op != Op::dequantize) continue;
    if (!allowed(o.groups, c.groups)) continue;
    if ((c.graph && o.no_graph) || (!c.graph && o.graph_only)) continue;
    kept.push_back(c);
  }
  if (!o.dtypes.empty()) {
    std::vector<BenchCase> typed;
    for (const BenchCase& kind : kept)
      for (DType t : o.dtypes) {
        BenchCase c = kind;
        c.dtype = t;
        typed.push_back(c);
      }
    kept = std::move(typed);
  }
  if (o.shapes.empty()) return kept;
  std::vector<BenchCase> expanded;
  std::set<std::string> seen;
  for (const BenchShape& shape : o.shapes)
    for (const BenchCase& kind : kept) {
      if ((kind.groups > 0 || is_swiglu(kind.op)) && shape.batch != 1) continue;  // 2-D only
      const BenchCase c = at(kind, shape);
      if (seen.insert(case_key(c, true)).second) expanded.push_back(c);
    }
  return expanded;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::quantize: return "quantize";
    case Op::dequantize: return "dequantize";
    case Op::pad: return "pad";
    case Op::unpad: return "unpad";
    case Op::amax: return "amax";
    case Op::swiglu: return "swiglu";
    case Op::swiglu_backward: return "swiglu_backward";
  }
  return "?";
}

std::string shape_string(const BenchCase& c) {
  std::ostringstream s;
  if (c.batch != 1) s << c.batch << 'x';
  s << c.rows << 'x' << c.cols;
  return s.str();
}

bool is_swiglu(Op op) { return op == Op::swiglu || op == Op::swiglu_backward; }

bool op_has_format(Op op) { return op == Op::quantize || op == Op::dequantize || is_swiglu(op); }

bool has_amax_choice(const BenchCase& c) {
  return c.format == Format::nvfp4 && (c.op == Op::quantize || is_swiglu(c.op));
}

std::string case_label(const BenchCase& c) {
  const bool f = op_has_format(c.op);
  std::ostringstream s;
  s << op_name(c.op) << ' ' << shape_string(c) << ' ' << (f ? to_string(c.format) : to_string(c.dtype)) << ' '
    << (f ? to_string(c.direction) : "-") << ' ' << (f ? to_string(c.layout) : "-") << ' ' << detail_string(c);
  return s.str();
}

std::string detail_string(const BenchCase& c) {
  std::ostringstream s;
  const char* sep = "";
  const auto add = [&](const auto&... parts) {
    s << sep;
    (s << ... << parts);
    sep = " ";
  };
  if (op_has_format(c.op) && c.format != Format::nvfp4) add(to_string(c.rule));
  if (has_amax_choice(c)) add(c.amax_given ? "amax=given" : "amax=computed");
  if (c.amax_out) add("amax=out");
  if (c.groups > 0) add("G=", c.groups);
  if (c.group_multiple > 1) add("sizes%", c.group_multiple);
  if (c.alignment > 0) add("A=", c.alignment);
  if (c.pad_rowwise > 0) add("padR=", c.pad_rowwise);
  if (c.pad_colwise > 0) add("padC=", c.pad_colwise);
  if (c.dtype != DType::bf16) add(to_string(c.dtype));
  if (c.graph) add("graph");
  return s.str();
}

bool parse_shape(const std::string& text, BenchShape* shape) {
  std::vector<int64_t> dims;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos) return false;
    dims.push_back(std::stoll(part));
  }
  if (dims.size() < 2 || dims.size() > 3 || (!text.empty() && text.back() == 'x')) return false;
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d <= 0; })) return false;
  *shape = dims.size() == 2 ? BenchShape{1, dims[0], dims[1]} : BenchShape{dims[0], dims[1], dims[2]};
  return true;
}

}  // namespace mxq::bench
