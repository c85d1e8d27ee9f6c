// Every argument rule of src/api, one table row each: a mutation of a valid call -> the expected
// Code and a piece of the message. After each failing call every output buffer must still hold
// its poison (nothing is written on error).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <mxq/mxq.hpp>

namespace mxq {
namespace {

constexpr uint64_t kPoison = 0xA5A5A5A5A5A5A5A5ull;
constexpr int64_t kSliceBytes = 64 << 10;
constexpr int kSlices = 16;

// Valid calls of every op on small host buffers. All outputs live in one poisoned arena.
struct Call {
  static constexpr int64_t M = 64, K = 64;
  std::vector<uint16_t> input = std::vector<uint16_t>(M * K * 4, 0x3F80);  // bf16 1.0, room for unpad
  std::vector<int32_t> ends = {16, 16, 64};
  std::vector<uint64_t> arena = std::vector<uint64_t>(kSlices * kSliceBytes / 8, kPoison);

  QuantizeArgs q;
  DequantizeArgs d;
  TensorView amax_in;
  float* amax_out;
  PadArgs p;
  UnpadArgs u;
  SwizzleArgs s;
  uint8_t* linear_out;
  QuantizeSizes* sizes;
  int64_t* count;
  TokenGroups vgroups;
  int64_t vM = M;

  template <class T = uint8_t>
  T* slice(int i) {
    return reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(arena.data()) + i * kSliceBytes);
  }

  Call() {
    const TensorView in{input.data(), DType::bf16, 1, M, K, 0, 0};
    const TokenGroups groups{ends.data(), static_cast<int64_t>(ends.size())};
    q.input = in;
    q.params = {Format::mxfp8, ScaleRule::rceil, ScaleLayout::blocked, Direction::both};
    q.out.row_data = slice(0);
    q.out.row_scales = slice(1);
    q.out.col_data = slice(2);
    q.out.col_scales = slice(3);
    q.backend = Backend::cpu;

    d.params = {Format::mxfp8, ScaleRule::rceil, ScaleLayout::blocked, Direction::rowwise};
    d.rows = M;
    d.cols = K;
    d.data = input.data();
    d.scales = reinterpret_cast<const uint8_t*>(input.data());
    d.out = slice(4);
    d.out_dtype = DType::fp32;
    d.backend = Backend::cpu;

    amax_in = in;
    amax_out = slice<float>(5);

    p.input = in;
    p.groups = groups;
    p.alignment = 32;
    p.out = slice(6);
    p.padded_starts = slice<int32_t>(7);
    p.padded_ends = slice<int32_t>(8);
    p.backend = Backend::cpu;

    u.input = in;
    u.input.rows = num_padded_rows();
    u.groups = groups;
    u.alignment = 32;
    u.rows = M;
    u.out = slice(9);
    u.backend = Backend::cpu;

    s.in = reinterpret_cast<const uint8_t*>(input.data());
    s.rows = M;
    s.cols = 8;
    s.out = slice(10);
    s.backend = Backend::cpu;
    linear_out = slice(11);

    sizes = slice<QuantizeSizes>(12);
    count = slice<int64_t>(13);
    vgroups = groups;
  }

  static int64_t num_padded_rows() { return (M + 3 * 32 + 31) / 32 * 32; }

  bool untouched() const {
    return std::all_of(arena.begin(), arena.end(), [](uint64_t v) { return v == kPoison; });
  }
};

struct Row {
  const char* name;
  std::function<Status(Call&)> call;  // mutates a valid call and runs it
  Code code;
  std::string message;  // a substring of the expected message
};

const bool kCuda = cuda_available();
const Code kCudaCode = kCuda ? Code::invalid_argument : Code::unsupported;
const char* kCudaMessage = kCuda ? "is host memory but the backend is cuda" : "backend cuda requested";

std::vector<int32_t> many_ends(int64_t n) { return std::vector<int32_t>(static_cast<size_t>(n), 0); }

std::vector<Row> rows() {
  const Code bad = Code::invalid_argument;
  std::vector<Row> t = {
      // ---- quantize: input ----
      {"q null data",
       [](Call& c) {
         c.q.input.data = nullptr;
         return quantize(c.q);
       },
       bad, "quantize: input.data is null"},
      {"q u8 input",
       [](Call& c) {
         c.q.input.dtype = DType::u8;
         return quantize(c.q);
       },
       bad, "input.dtype must be bf16, fp16 or fp32 (got u8)"},
      {"q dtype 7",
       [](Call& c) {
         c.q.input.dtype = DType(7);
         return quantize(c.q);
       },
       bad, "input.dtype (7) is not a dtype"},
      {"q dtype -1",
       [](Call& c) {
         c.q.input.dtype = DType(-1);
         return quantize(c.q);
       },
       bad, "input.dtype (-1) is not a dtype"},
      {"q rows -1",
       [](Call& c) {
         c.q.input.rows = -1;
         return quantize(c.q);
       },
       bad, "input.rows (-1) must be in [0, 2147483647]"},
      {"q cols 2^40",
       [](Call& c) {
         c.q.input.cols = int64_t{1} << 40;
         return quantize(c.q);
       },
       bad, "input.cols (1099511627776) must be in"},
      {"q batch -2",
       [](Call& c) {
         c.q.input.batch = -2;
         return quantize(c.q);
       },
       bad, "input.batch (-2) must be in"},
      {"q row_stride < cols",
       [](Call& c) {
         c.q.input.row_stride = 10;
         return quantize(c.q);
       },
       bad, "input.row_stride (10) must be 0 (= cols) or in [cols (64)"},
      {"q row_stride < 0",
       [](Call& c) {
         c.q.input.row_stride = -64;
         return quantize(c.q);
       },
       bad, "input.row_stride (-64)"},
      {"q batch_stride small",
       [](Call& c) {
         c.q.input.batch = 2;
         c.q.input.rows = 16;
         c.q.input.batch_stride = 100;
         return quantize(c.q);
       },
       bad, "input.batch_stride (100) must be 0 or >= the elements of one batch (1024) when batch > 1"},
      {"q batch_stride < 0",
       [](Call& c) {
         c.q.input.batch_stride = -1;
         return quantize(c.q);
       },
       bad, "input.batch_stride (-1) must be in"},
      {"q span too large",
       [](Call& c) {
         c.q.input.batch = 1 << 20;
         c.q.input.rows = 1 << 20;
         c.q.input.cols = 1 << 10;
         return quantize(c.q);
       },
       bad, "input spans more than 70368744177664 elements"},
      // ---- quantize: params ----
      {"q format 9",
       [](Call& c) {
         c.q.params.format = Format(9);
         return quantize(c.q);
       },
       bad, "params.format (9) is not a format"},
      {"q rule 5",
       [](Call& c) {
         c.q.params.rule = ScaleRule(5);
         return quantize(c.q);
       },
       bad, "params.rule (5) is not a scale rule"},
      {"q layout 2",
       [](Call& c) {
         c.q.params.layout = ScaleLayout(2);
         return quantize(c.q);
       },
       bad, "params.layout (2) is not a scale layout"},
      {"q direction 0",
       [](Call& c) {
         c.q.params.direction = Direction(0);
         return quantize(c.q);
       },
       bad, "params.direction (0) is not a direction"},
      {"q direction 4",
       [](Call& c) {
         c.q.params.direction = Direction(4);
         return quantize(c.q);
       },
       bad, "params.direction (4) is not a direction"},
      {"q backend 4",
       [](Call& c) {
         c.q.backend = Backend(4);
         return quantize(c.q);
       },
       bad, "quantize: backend (4) is not a backend"},
      {"q backend cuda",
       [](Call& c) {
         c.q.backend = Backend::cuda;
         return quantize(c.q);
       },
       kCudaCode, kCudaMessage},
      // ---- quantize: fp4 packing ----
      {"q fp4 odd cols",
       [](Call& c) {
         c.q.params.format = Format::mxfp4;
         c.q.input.cols = 33;
         c.q.input.row_stride = 64;
         return quantize(c.q);
       },
       bad, "quantize: input.cols (33) must be even for fp4 formats (two codes per byte)"},
      {"q nvfp4 odd cols",
       [](Call& c) {
         c.q.params.format = Format::nvfp4;
         c.q.params.direction = Direction::rowwise;
         c.q.out.col_data = nullptr;
         c.q.out.col_scales = nullptr;
         c.q.input.cols = 15;
         return quantize(c.q);
       },
       bad, "input.cols (15) must be even"},
      {"q fp4 odd cols colwise ok, odd rows",
       [](Call& c) {
         c.q.params.format = Format::mxfp4;
         c.q.params.direction = Direction::colwise;
         c.q.out.row_data = nullptr;
         c.q.out.row_scales = nullptr;
         c.q.input.cols = 33;
         c.q.input.row_stride = 64;
         c.q.input.rows = 33;
         return quantize(c.q);
       },
       bad, "colwise data rows (33, = input.rows) must be even for fp4 formats"},
      {"q fp4 odd padded colwise rows",
       [](Call& c) {
         c.q.params.format = Format::mxfp4;
         c.q.input.rows = 32;
         c.q.groups.groups = {c.ends.data(), 1};
         c.ends[0] = 32;
         c.q.groups.pad_colwise = 1;
         return quantize(c.q);
       },
       bad, "colwise data rows (33, padded"},
      {"q fp4 pad_colwise 1",
       [](Call& c) {
         c.q.params.format = Format::mxfp4;
         c.q.input.rows = 31;
         c.q.groups.groups = {c.ends.data(), 1};
         c.ends[0] = 31;
         c.q.groups.pad_colwise = 1;
         return quantize(c.q);
       },
       bad, "groups.pad_colwise (1) must be 0 or at least 2 for fp4 formats"},
      // ---- quantize: groups and padding ----
      {"q groups batch 2",
       [](Call& c) {
         c.q.input.batch = 2;
         c.q.input.rows = 32;
         c.q.groups.groups = {c.ends.data(), 3};
         return quantize(c.q);
       },
       bad, "token groups need batch == 1 (got batch 2)"},
      {"q groups count 2^20+1",
       [](Call& c) {
         c.q.groups.groups = {c.ends.data(), (1 << 20) + 1};
         return quantize(c.q);
       },
       bad, "groups.groups.count (1048577) must be in [0, 1048576]"},
      {"q groups count -1",
       [](Call& c) {
         c.q.groups.groups = {c.ends.data(), -1};
         return quantize(c.q);
       },
       bad, "groups.groups.count (-1)"},
      {"q groups ends null",
       [](Call& c) {
         c.q.groups.groups = {nullptr, 2};
         return quantize(c.q);
       },
       bad, "groups.groups.ends is null but groups.groups.count is 2"},
      {"q pad_rowwise 24",
       [](Call& c) {
         c.q.groups.groups = {c.ends.data(), 3};
         c.q.groups.pad_rowwise = 24;
         return quantize(c.q);
       },
       bad, "groups.pad_rowwise (24) must be 0 (no padding) or a power of two in [1, 4096]"},
      {"q pad_colwise 8192",
       [](Call& c) {
         c.q.groups.groups = {c.ends.data(), 3};
         c.q.groups.pad_colwise = 8192;
         return quantize(c.q);
       },
       bad, "groups.pad_colwise (8192) must be 0"},
      {"q pad_rowwise -32",
       [](Call& c) {
         c.q.groups.groups = {c.ends.data(), 3};
         c.q.groups.pad_rowwise = -32;
         return quantize(c.q);
       },
       bad, "groups.pad_rowwise (-32)"},
      {"q pad without groups",
       [](Call& c) {
         c.q.groups.pad_rowwise = 32;
         return quantize(c.q);
       },
       bad, "but groups.groups.count is 0"},
      {"q pads differ",
       [](Call& c) {
         c.q.groups.groups = {c.ends.data(), 3};
         c.q.groups.pad_rowwise = 32;
         c.q.groups.pad_colwise = 64;
         return quantize(c.q);
       },
       bad, "groups.pad_rowwise (32) and groups.pad_colwise (64) must be equal when both pad"},
      {"q padded_starts without pad",
       [](Call& c) {
         c.q.groups.groups = {c.ends.data(), 3};
         c.q.out.padded_starts = c.slice<int32_t>(7);
         return quantize(c.q);
       },
       bad, "out.padded_starts / out.padded_ends are given but neither"},
      {"q padded_ends without pad",
       [](Call& c) {
         c.q.out.padded_ends = c.slice<int32_t>(7);
         return quantize(c.q);
       },
       bad, "out.padded_starts / out.padded_ends are given"},
      {"q padded rows overflow int32",
       [](Call& c) {
         c.q.input.rows = 2147483647;
         c.q.input.cols = 2;
         c.q.groups.groups = {c.ends.data(), 1};
         c.q.groups.pad_rowwise = 4096;
         return quantize(c.q);
       },
       bad, "must fit int32 offsets"},
      // ---- quantize: outputs ----
      {"q row_data null",
       [](Call& c) {
         c.q.out.row_data = nullptr;
         return quantize(c.q);
       },
       bad, "quantize: out.row_data is null but direction includes rowwise"},
      {"q row_scales null",
       [](Call& c) {
         c.q.out.row_scales = nullptr;
         return quantize(c.q);
       },
       bad, "quantize: out.row_scales is null but direction includes rowwise"},
      {"q col_data null",
       [](Call& c) {
         c.q.out.col_data = nullptr;
         return quantize(c.q);
       },
       bad, "out.col_data is null but direction includes colwise"},
      {"q col_scales null",
       [](Call& c) {
         c.q.out.col_scales = nullptr;
         return quantize(c.q);
       },
       bad, "out.col_scales is null but direction includes colwise"},
      {"q row outputs for colwise",
       [](Call& c) {
         c.q.params.direction = Direction::colwise;
         return quantize(c.q);
       },
       bad, "out.row_data / out.row_scales are given but direction is colwise"},
      {"q col outputs for rowwise",
       [](Call& c) {
         c.q.params.direction = Direction::rowwise;
         return quantize(c.q);
       },
       bad, "out.col_data / out.col_scales are given but direction is rowwise"},
      {"q nvfp4 no s_enc",
       [](Call& c) {
         c.q.params.format = Format::nvfp4;
         c.q.out.s_dec = c.slice<float>(14);
         return quantize(c.q);
       },
       bad, "out.s_enc and out.s_dec are required for nvfp4"},
      {"q nvfp4 no s_dec",
       [](Call& c) {
         c.q.params.format = Format::nvfp4;
         c.q.out.s_enc = c.slice<float>(14);
         return quantize(c.q);
       },
       bad, "out.s_enc and out.s_dec are required for nvfp4"},
      {"q s_enc for mxfp8",
       [](Call& c) {
         c.q.out.s_enc = c.slice<float>(14);
         return quantize(c.q);
       },
       bad, "out.s_enc / out.s_dec are given but format mxfp8 has no tensor scale"},
      {"q amax over tensor_amax",
       [](Call& c) {
         c.q.params.format = Format::nvfp4;
         c.q.out.s_enc = c.slice<float>(14);
         c.q.out.s_dec = c.slice<float>(15);
         c.q.tensor_amax = c.q.out.amax = c.slice<float>(16);
         return quantize(c.q);
       },
       bad, "out.amax overlaps tensor_amax (outputs may share no byte"},
      {"q amax over s_dec",
       [](Call& c) {
         c.q.params.format = Format::nvfp4;
         c.q.out.s_enc = c.slice<float>(14);
         c.q.out.s_dec = c.q.out.amax = c.slice<float>(15);
         return quantize(c.q);
       },
       bad, "out.amax overlaps out.s_dec"},
      {"q tensor_amax for mxfp4",
       [](Call& c) {
         static const float amax = 1;
         c.q.params.format = Format::mxfp4;
         c.q.tensor_amax = &amax;
         return quantize(c.q);
       },
       bad, "tensor_amax is given but format mxfp4 has no tensor scale"},
      // ---- quantize_sizes ----
      {"qs sizes null", [](Call& c) { return quantize_sizes(c.q, nullptr); }, bad, "quantize_sizes: sizes is null"},
      {"qs fp4 odd cols",
       [](Call& c) {
         c.q.params.format = Format::mxfp4;
         c.q.input.cols = 33;
         c.q.input.row_stride = 64;
         return quantize_sizes(c.q, c.sizes);
       },
       bad, "quantize_sizes: input.cols (33) must be even"},
      {"qs format 4",
       [](Call& c) {
         c.q.params.format = Format(4);
         return quantize_sizes(c.q, c.sizes);
       },
       bad, "quantize_sizes: params.format (4)"},
      {"qs backend 7",
       [](Call& c) {
         c.q.backend = Backend(7);
         return quantize_sizes(c.q, c.sizes);
       },
       bad, "quantize_sizes: backend (7)"},
      // ---- dequantize ----
      {"dq direction both",
       [](Call& c) {
         c.d.params.direction = Direction::both;
         return dequantize(c.d);
       },
       bad, "dequantize: params.direction must be rowwise or colwise"},
      {"dq direction 8",
       [](Call& c) {
         c.d.params.direction = Direction(8);
         return dequantize(c.d);
       },
       bad, "params.direction (8) is not a direction"},
      {"dq out_dtype u8",
       [](Call& c) {
         c.d.out_dtype = DType::u8;
         return dequantize(c.d);
       },
       bad, "out_dtype must be bf16, fp16 or fp32"},
      {"dq out_dtype 4",
       [](Call& c) {
         c.d.out_dtype = DType(4);
         return dequantize(c.d);
       },
       bad, "out_dtype (4) is not a dtype"},
      {"dq data null",
       [](Call& c) {
         c.d.data = nullptr;
         return dequantize(c.d);
       },
       bad, "dequantize: data is null but needs 4096 bytes"},
      {"dq scales null",
       [](Call& c) {
         c.d.scales = nullptr;
         return dequantize(c.d);
       },
       bad, "dequantize: scales is null but needs"},
      {"dq out null",
       [](Call& c) {
         c.d.out = nullptr;
         return dequantize(c.d);
       },
       bad, "dequantize: out is null but needs 16384 bytes"},
      {"dq nvfp4 no s_dec",
       [](Call& c) {
         c.d.params.format = Format::nvfp4;
         return dequantize(c.d);
       },
       bad, "s_dec is null but nvfp4 needs"},
      {"dq s_dec for mxfp8",
       [](Call& c) {
         static const float s = 1;
         c.d.s_dec = &s;
         return dequantize(c.d);
       },
       bad, "s_dec is given but format mxfp8"},
      {"dq rows -1",
       [](Call& c) {
         c.d.rows = -1;
         return dequantize(c.d);
       },
       bad, "dequantize: rows (-1) must be in"},
      {"dq too many elements",
       [](Call& c) {
         c.d.batch = 1 << 20;
         c.d.rows = 1 << 20;
         c.d.cols = 1 << 10;
         return dequantize(c.d);
       },
       bad, "batch x rows x cols must be <= 70368744177664"},
      {"dq fp4 odd cols",
       [](Call& c) {
         c.d.params.format = Format::mxfp4;
         c.d.cols = 33;
         return dequantize(c.d);
       },
       bad, "dequantize: cols (33) must be even for fp4"},
      {"dq fp4 colwise odd rows",
       [](Call& c) {
         c.d.params.format = Format::mxfp4;
         c.d.params.direction = Direction::colwise;
         c.d.rows = 63;
         return dequantize(c.d);
       },
       bad, "colwise data rows (63, = rows) must be even"},
      {"dq groups batch 2",
       [](Call& c) {
         c.d.batch = 2;
         c.d.groups.groups = {c.ends.data(), 3};
         return dequantize(c.d);
       },
       bad, "token groups need batch == 1"},
      {"dq pad 3",
       [](Call& c) {
         c.d.groups.groups = {c.ends.data(), 3};
         c.d.groups.pad_rowwise = 3;
         return dequantize(c.d);
       },
       bad, "groups.pad_rowwise (3)"},
      {"dq backend cuda",
       [](Call& c) {
         c.d.backend = Backend::cuda;
         return dequantize(c.d);
       },
       kCudaCode, kCudaMessage},
      {"dqs out_elements null", [](Call& c) { return dequantize_size(c.d, nullptr); }, bad,
       "dequantize_size: out_elements is null"},
      {"dqs direction both",
       [](Call& c) {
         c.d.params.direction = Direction::both;
         return dequantize_size(c.d, c.count);
       },
       bad, "dequantize_size: params.direction must be rowwise or colwise"},
      // ---- tensor_amax ----
      {"amax out null", [](Call& c) { return tensor_amax(c.amax_in, nullptr, Backend::cpu); }, bad,
       "tensor_amax: out is null"},
      {"amax u8",
       [](Call& c) {
         c.amax_in.dtype = DType::u8;
         return tensor_amax(c.amax_in, c.amax_out, Backend::cpu);
       },
       bad, "tensor_amax: input.dtype must be bf16, fp16 or fp32"},
      {"amax row_stride",
       [](Call& c) {
         c.amax_in.row_stride = 1;
         return tensor_amax(c.amax_in, c.amax_out, Backend::cpu);
       },
       bad, "input.row_stride (1)"},
      {"amax data null",
       [](Call& c) {
         c.amax_in.data = nullptr;
         return tensor_amax(c.amax_in, c.amax_out, Backend::cpu);
       },
       bad, "input.data is null"},
      {"amax backend 9", [](Call& c) { return tensor_amax(c.amax_in, c.amax_out, Backend(9)); }, bad,
       "backend (9) is not a backend"},
      {"amax backend cuda", [](Call& c) { return tensor_amax(c.amax_in, c.amax_out, Backend::cuda); }, kCudaCode,
       kCudaMessage},
      // ---- pad / pad_rows ----
      {"pad alignment 24",
       [](Call& c) {
         c.p.alignment = 24;
         return pad(c.p);
       },
       bad, "pad: alignment (24) must be a power of two in [1, 4096]"},
      {"pad alignment 0",
       [](Call& c) {
         c.p.alignment = 0;
         return pad(c.p);
       },
       bad, "alignment (0) must be a power of two"},
      {"pad alignment 8192",
       [](Call& c) {
         c.p.alignment = 8192;
         return pad(c.p);
       },
       bad, "alignment (8192)"},
      {"pad alignment -32",
       [](Call& c) {
         c.p.alignment = -32;
         return pad(c.p);
       },
       bad, "alignment (-32)"},
      {"pad batch 2",
       [](Call& c) {
         c.p.input.batch = 2;
         c.p.input.rows = 32;
         return pad(c.p);
       },
       bad, "pad: input.batch (2) must be 1"},
      {"pad dtype 5",
       [](Call& c) {
         c.p.input.dtype = DType(5);
         return pad(c.p);
       },
       bad, "pad: input.dtype (5) is not a dtype"},
      {"pad input null",
       [](Call& c) {
         c.p.input.data = nullptr;
         return pad(c.p);
       },
       bad, "pad: input.data is null"},
      {"pad ends null",
       [](Call& c) {
         c.p.groups.ends = nullptr;
         return pad(c.p);
       },
       bad, "pad: groups.ends is null but groups.count is 3"},
      {"pad G too many",
       [](Call& c) {
         c.p.groups.count = (1 << 20) + 1;
         return pad(c.p);
       },
       bad, "groups.count (1048577)"},
      {"pad out null",
       [](Call& c) {
         c.p.out = nullptr;
         return pad(c.p);
       },
       bad, "pad: out is null but needs 20480 bytes"},
      {"pad padded_starts null",
       [](Call& c) {
         c.p.padded_starts = nullptr;
         return pad(c.p);
       },
       bad, "pad: padded_starts is null"},
      {"pad padded_ends null",
       [](Call& c) {
         c.p.padded_ends = nullptr;
         return pad(c.p);
       },
       bad, "pad: padded_ends is null"},
      {"pad amax of u8",
       [](Call& c) {
         c.p.input.dtype = DType::u8;
         c.p.amax = c.slice<float>(14);
         return pad(c.p);
       },
       bad, "pad: input.dtype (with amax) must be bf16, fp16 or fp32 (got u8)"},
      {"pad amax in out",
       [](Call& c) {
         c.p.amax = reinterpret_cast<float*>(c.slice(6) + 100);
         return pad(c.p);
       },
       bad, "pad: amax overlaps out"},
      {"pad rows overflow int32",
       [](Call& c) {
         c.p.input.rows = 2147483647;
         c.p.input.cols = 1;
         c.p.alignment = 4096;
         return pad(c.p);
       },
       bad, "must fit int32 offsets"},
      {"pad output too large",
       [](Call& c) {
         static const std::vector<int32_t> e = many_ends(1 << 19);
         c.p.input.rows = 0;
         c.p.input.cols = 1 << 17;
         c.p.groups = {e.data(), 1 << 19};
         c.p.alignment = 2048;
         return pad(c.p);
       },
       bad, "padded rows (1073741824) x cols (131072) must be <="},
      {"pad backend cuda",
       [](Call& c) {
         c.p.backend = Backend::cuda;
         return pad(c.p);
       },
       kCudaCode, kCudaMessage},
      {"pad backend -1",
       [](Call& c) {
         c.p.backend = Backend(-1);
         return pad(c.p);
       },
       bad, "pad: backend (-1)"},
      {"pad_rows null", [](Call& c) { return pad_rows(c.p, nullptr); }, bad, "pad_rows: rows is null"},
      {"pad_rows alignment 3",
       [](Call& c) {
         c.p.alignment = 3;
         return pad_rows(c.p, c.count);
       },
       bad, "pad_rows: alignment (3)"},
      // ---- unpad ----
      {"unpad input rows short",
       [](Call& c) {
         c.u.input.rows = 100;
         return unpad(c.u);
       },
       bad, "unpad: input.rows (100) must be >= the padded rows round_up(rows + G*A, A) = 160"},
      {"unpad rows -1",
       [](Call& c) {
         c.u.rows = -1;
         return unpad(c.u);
       },
       bad, "unpad: rows (-1) must be in"},
      {"unpad alignment 5",
       [](Call& c) {
         c.u.alignment = 5;
         return unpad(c.u);
       },
       bad, "unpad: alignment (5) must be a power of two"},
      {"unpad out null",
       [](Call& c) {
         c.u.out = nullptr;
         return unpad(c.u);
       },
       bad, "unpad: out is null but needs 8192 bytes"},
      {"unpad batch 3",
       [](Call& c) {
         c.u.input.batch = 3;
         c.u.input.rows = 10;
         return unpad(c.u);
       },
       bad, "unpad: input.batch (3) must be 1"},
      {"unpad ends null",
       [](Call& c) {
         c.u.groups.ends = nullptr;
         return unpad(c.u);
       },
       bad, "unpad: groups.ends is null"},
      {"unpad amax of u8",
       [](Call& c) {
         c.u.input.dtype = DType::u8;
         c.u.amax = c.slice<float>(14);
         return unpad(c.u);
       },
       bad, "unpad: input.dtype (with amax) must be bf16, fp16 or fp32 (got u8)"},
      {"unpad amax in out",
       [](Call& c) {
         c.u.amax = reinterpret_cast<float*>(c.slice(9));
         return unpad(c.u);
       },
       bad, "unpad: amax overlaps out"},
      {"unpad backend cuda",
       [](Call& c) {
         c.u.backend = Backend::cuda;
         return unpad(c.u);
       },
       kCudaCode, kCudaMessage},
      // ---- swizzle / swizzle_size / unswizzle ----
      {"sw in null",
       [](Call& c) {
         c.s.in = nullptr;
         return swizzle(c.s);
       },
       bad, "swizzle: in is null but needs 512 bytes"},
      {"sw out null",
       [](Call& c) {
         c.s.out = nullptr;
         return swizzle(c.s);
       },
       bad, "swizzle: out is null but needs 1024 bytes"},
      {"sw axis 3",
       [](Call& c) {
         c.s.group_axis = ScaleGroups(3);
         return swizzle(c.s);
       },
       bad, "group_axis (3) is not a ScaleGroups"},
      {"sw none with groups",
       [](Call& c) {
         c.s.groups = c.vgroups;
         return swizzle(c.s);
       },
       bad, "groups.count (3) must be 0 when group_axis is none"},
      {"sw along_m no groups",
       [](Call& c) {
         c.s.group_axis = ScaleGroups::along_m;
         return swizzle(c.s);
       },
       bad, "group_axis is along_m but groups.count is 0"},
      {"sw along_k no groups",
       [](Call& c) {
         c.s.group_axis = ScaleGroups::along_k;
         return swizzle(c.s);
       },
       bad, "group_axis is along_k but groups.count is 0"},
      {"sw groups batch 2",
       [](Call& c) {
         c.s.group_axis = ScaleGroups::along_m;
         c.s.groups = c.vgroups;
         c.s.batch = 2;
         return swizzle(c.s);
       },
       bad, "token groups need batch == 1"},
      {"sw groups ends null",
       [](Call& c) {
         c.s.group_axis = ScaleGroups::along_k;
         c.s.groups = {nullptr, 2};
         return swizzle(c.s);
       },
       bad, "groups.ends is null"},
      {"sw rows -5",
       [](Call& c) {
         c.s.rows = -5;
         return swizzle(c.s);
       },
       bad, "swizzle: rows (-5)"},
      {"sw too large",
       [](Call& c) {
         c.s.batch = 1 << 20;
         c.s.rows = 1 << 20;
         c.s.cols = 1 << 10;
         return swizzle(c.s);
       },
       bad, "batch x rows x cols must be <="},
      {"sw backend cuda",
       [](Call& c) {
         c.s.backend = Backend::cuda;
         return swizzle(c.s);
       },
       kCudaCode, kCudaMessage},
      {"sws bytes null", [](Call& c) { return swizzle_size(c.s, nullptr); }, bad, "swizzle_size: bytes is null"},
      {"sws axis -1",
       [](Call& c) {
         c.s.group_axis = ScaleGroups(-1);
         return swizzle_size(c.s, c.count);
       },
       bad, "swizzle_size: group_axis (-1)"},
      {"usw linear_out null", [](Call& c) { return unswizzle(c.s, nullptr); }, bad,
       "unswizzle: linear_out is null but needs 512 bytes"},
      {"usw blocked null",
       [](Call& c) {
         c.s.out = nullptr;
         return unswizzle(c.s, c.linear_out);
       },
       bad, "unswizzle: out (the blocked input of unswizzle) is null"},
      {"usw backend cuda",
       [](Call& c) {
         c.s.backend = Backend::cuda;
         return unswizzle(c.s, c.linear_out);
       },
       kCudaCode, kCudaMessage},
      // ---- validate_group_ends ----
      {"v M -1", [](Call& c) { return validate_group_ends(c.vgroups, -1, Backend::cpu); }, bad,
       "validate_group_ends: M (-1) must be in"},
      {"v ends null",
       [](Call& c) {
         c.vgroups.ends = nullptr;
         return validate_group_ends(c.vgroups, c.vM, Backend::cpu);
       },
       bad, "validate_group_ends: groups.ends is null"},
      {"v count -1",
       [](Call& c) {
         c.vgroups.count = -1;
         return validate_group_ends(c.vgroups, c.vM, Backend::cpu);
       },
       bad, "groups.count (-1)"},
      {"v decreasing",
       [](Call& c) {
         c.ends = {10, 20, 5};
         return validate_group_ends(c.vgroups, c.vM, Backend::cpu);
       },
       Code::invalid_offsets, "groups.ends[2] (5) is less than groups.ends[1] (20)"},
      {"v negative",
       [](Call& c) {
         c.ends = {-1, 20, 30};
         return validate_group_ends(c.vgroups, c.vM, Backend::cpu);
       },
       Code::invalid_offsets, "groups.ends[0] (-1) is negative"},
      {"v above M",
       [](Call& c) {
         c.ends = {10, 65, 64};
         return validate_group_ends(c.vgroups, c.vM, Backend::cpu);
       },
       Code::invalid_offsets, "groups.ends[1] (65) is greater than M (64)"},
      {"v backend cuda", [](Call& c) { return validate_group_ends(c.vgroups, c.vM, Backend::cuda); }, kCudaCode,
       kCudaMessage},
  };
  // Padded outputs past the element limit (their byte counts would be absurd or overflow).
  t.push_back({"q padded output too large",
               [](Call& c) {
                 static const std::vector<int32_t> e = many_ends(1 << 19);
                 c.q.input.cols = 1 << 17;
                 c.q.input.rows = 0;
                 c.q.groups.groups = {e.data(), 1 << 19};
                 c.q.groups.pad_rowwise = c.q.groups.pad_colwise = 2048;
                 return quantize_sizes(c.q, c.sizes);
               },
               bad, "the rowwise output (1 x 1073741824 padded rows x 131072) must be <= 70368744177664 elements"});
  t.push_back({"dq padded output too large",
               [](Call& c) {
                 static const std::vector<int32_t> e = many_ends(1 << 19);
                 c.d.cols = 1 << 17;
                 c.d.rows = 0;
                 c.d.groups.groups = {e.data(), 1 << 19};
                 c.d.groups.pad_rowwise = 2048;
                 return dequantize_size(c.d, c.count);
               },
               bad, "the rowwise output (1 x 1073741824 padded rows x 131072) must be <="});
  // Outputs that share bytes with inputs or with each other (in place is not an op mxq offers).
  const std::vector<Row> overlaps = {
      {"q row_data on input",
       [](Call& c) {
         c.q.out.row_data = const_cast<void*>(c.q.input.data);
         return quantize(c.q);
       },
       bad, "quantize: out.row_data overlaps input.data"},
      {"q col_data on row_data",
       [](Call& c) {
         c.q.out.col_data = static_cast<uint8_t*>(c.q.out.row_data) + 8;
         return quantize(c.q);
       },
       bad, "quantize: out.col_data overlaps out.row_data"},
      {"q scales in strided input",
       [](Call& c) {
         c.q.input.rows = 8;
         c.q.input.row_stride = 512;
         c.q.out.row_scales = reinterpret_cast<uint8_t*>(c.input.data()) + 7 * 1024;
         return quantize(c.q);
       },
       bad, "out.row_scales overlaps input.data"},
      {"dq out on data",
       [](Call& c) {
         c.d.out = const_cast<void*>(c.d.data);
         return dequantize(c.d);
       },
       bad, "dequantize: out overlaps data"},
      {"pad in place",
       [](Call& c) {
         c.p.out = const_cast<void*>(c.p.input.data);
         return pad(c.p);
       },
       bad, "pad: out overlaps input.data"},
      {"pad starts in ends",
       [](Call& c) {
         c.p.padded_starts = c.ends.data();
         return pad(c.p);
       },
       bad, "pad: padded_starts overlaps groups.ends"},
      {"unpad in place",
       [](Call& c) {
         c.u.out = const_cast<void*>(c.u.input.data);
         return unpad(c.u);
       },
       bad, "unpad: out overlaps input.data"},
      {"sw in place",
       [](Call& c) {
         c.s.out = const_cast<uint8_t*>(c.s.in);
         return swizzle(c.s);
       },
       bad, "swizzle: out overlaps in"},
      {"usw in place", [](Call& c) { return unswizzle(c.s, c.s.out); }, bad,
       "unswizzle: linear_out overlaps out (the blocked input of unswizzle)"},
      {"amax out on input",
       [](Call& c) {
         return tensor_amax(c.amax_in, reinterpret_cast<float*>(const_cast<void*>(c.amax_in.data)), Backend::cpu);
       },
       bad, "tensor_amax: out overlaps input.data"},
  };
  t.insert(t.end(), overlaps.begin(), overlaps.end());
  // Without a device cuda_unchecked is refused; with one it would take these host pointers on trust.
  if (!kCuda)
    t.push_back({"q backend cuda_unchecked",
                 [](Call& c) {
                   c.q.backend = Backend::cuda_unchecked;
                   return quantize(c.q);
                 },
                 Code::unsupported, "quantize: backend cuda_unchecked requested"});
  return t;
}

TEST(ApiErrors, BaseCallsSucceed) {
  // The table's mutations start from these calls, so each must be valid as it stands.
  Call c;
  EXPECT_TRUE(quantize(c.q).ok()) << quantize(c.q).message();
  EXPECT_TRUE(quantize_sizes(c.q, c.sizes).ok());
  EXPECT_TRUE(dequantize(c.d).ok()) << dequantize(c.d).message();
  EXPECT_TRUE(dequantize_size(c.d, c.count).ok());
  EXPECT_TRUE(tensor_amax(c.amax_in, c.amax_out, Backend::cpu).ok());
  EXPECT_TRUE(pad(c.p).ok()) << pad(c.p).message();
  EXPECT_TRUE(pad_rows(c.p, c.count).ok());
  EXPECT_TRUE(unpad(c.u).ok()) << unpad(c.u).message();
  EXPECT_TRUE(swizzle(c.s).ok()) << swizzle(c.s).message();
  EXPECT_TRUE(swizzle_size(c.s, c.count).ok());
  EXPECT_TRUE(unswizzle(c.s, c.linear_out).ok());
  EXPECT_TRUE(validate_group_ends(c.vgroups, c.vM, Backend::cpu).ok());
  EXPECT_TRUE(validate_group_ends(c.vgroups, c.vM).ok());  // auto resolves to cpu for host memory
  EXPECT_FALSE(c.untouched());                             // the successful calls did write
}

TEST(ApiErrors, EveryRuleRejectsAndWritesNothing) {
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.name);
    Call c;
    const Status s = row.call(c);
    EXPECT_EQ(s.code(), row.code) << s.message();
    EXPECT_NE(s.message().find(row.message), std::string::npos)
        << "message: \"" << s.message() << "\"\nexpected to contain: \"" << row.message << "\"";
    EXPECT_TRUE(c.untouched()) << "an output was written on error";
  }
}

TEST(ApiErrors, NamesAreUniqueSoFailuresPointAtOneRow) {
  std::vector<std::string> names;
  for (const Row& row : rows()) names.push_back(row.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

TEST(ApiErrors, ZeroSizedBuffersMayBeNull) {
  Call c;
  c.q.input.rows = 0;
  c.q.input.data = nullptr;
  c.q.out = {};
  EXPECT_TRUE(quantize_sizes(c.q, c.sizes).ok());
  EXPECT_EQ(c.sizes->row_data_bytes, 0);
  EXPECT_EQ(c.sizes->row_scale_bytes, 0);  // Rp(0) = 0 rows of blocked scales
  EXPECT_TRUE(quantize(c.q).ok()) << quantize(c.q).message();
  c.p.input.rows = 0;
  c.p.input.data = nullptr;
  c.p.groups = {};
  c.p.out = nullptr;
  c.p.padded_starts = c.p.padded_ends = nullptr;
  EXPECT_TRUE(pad(c.p).ok()) << pad(c.p).message();  // round_up(0, 32) = 0 rows
}

}  // namespace
}  // namespace mxq
