// Random calls of the public API decoded from a byte string: every dtype, format, rule, layout and
// direction value (out-of-range ones too), tiny and odd shapes, row and batch strides (invalid ones
// too), unaligned data, token groups with any end offsets, paddings and tensor amaxes. Host
// buffers only; each op's outputs are for the caller to allocate. Used by the API fuzzer
// (fuzz/fuzz_api.cpp, bytes from libFuzzer) and by the GPU differential test
// (tests/cuda/random_calls_test.cpp, bytes from a seeded generator), so that both explore the same
// argument space. Header-only: the fuzzer builds without the test support library.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <mxq/mxq.hpp>

namespace mxq::test::cases {

// The byte string as a stream of small decisions; zeros once it runs out.
class Bytes {
 public:
  Bytes(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t u8() { return n_ > 0 ? (--n_, *p_++) : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{u8()} << (8 * i);
    return v;
  }
  bool chance(int in256) { return u8() < in256; }  // true with probability in256 / 256
  template <class T, size_t N>
  T pick(const T (&options)[N]) {
    return options[u8() % N];
  }
  // A size in [0, 200]: mostly small or next to block and tile multiples, where edge cases live.
  int64_t dim() {
    static const int64_t kDims[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128, 129, 160, 200};
    return chance(200) ? pick(kDims) : u8() % 201;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

// An enum value in [lo, hi], now and then any value in [-128, 127] (mostly invalid).
template <class E>
E random_enum(Bytes& in, int32_t lo, int32_t hi) {
  return static_cast<E>(in.chance(8) ? static_cast<int32_t>(in.u8()) - 128 : lo + in.u8() % (hi - lo + 1));
}

// Bytes per element of t; 4 when t is not a dtype (an op must refuse it, so the size only has to
// be large enough).
inline int64_t element_bytes(DType t) {
  const int32_t v = static_cast<int32_t>(t);
  return v >= 0 && v <= 3 ? dtype_size(t) : 4;
}

// `bytes` random bytes (NaN, Inf, subnormals and zeros among the elements) or one repeated word.
inline std::vector<uint8_t> random_bytes(Bytes& in, int64_t bytes) {
  std::vector<uint8_t> v(static_cast<size_t>(bytes));
  if (in.chance(32)) {
    const uint32_t word = in.u32();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(word >> (8 * (i % 4)));
  } else {
    uint32_t x = in.u32() | 1;
    for (uint8_t& b : v) {  // xorshift32 seeded from the stream
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      b = static_cast<uint8_t>(x);
    }
  }
  return v;
}

// A tensor view over `storage`, which holds exactly the elements the view spans when its strides
// are valid (plus `misalign` bytes in front: the data pointer need not be aligned to its element).
struct Tensor {
  std::vector<uint8_t> storage;
  TensorView view;
  int64_t data_offset() const {
    return view.data ? static_cast<const uint8_t*>(view.data) - storage.data() : -1;  // -1: null
  }
};
inline Tensor random_tensor(Bytes& in, DType dtype, bool three_d) {
  Tensor t;
  TensorView& v = t.view;
  v.dtype = dtype;
  v.batch = three_d ? in.u8() % 4 : 1;
  v.rows = in.dim();
  v.cols = in.dim();
  if (in.chance(48)) v.row_stride = v.cols + in.u8() % 9 - (in.chance(16) ? 4 : 0);  // below cols: invalid
  if (three_d && in.chance(48)) v.batch_stride = v.rows * v.rstride() + in.u8() % 17 - (in.chance(16) ? 8 : 0);
  const int64_t es = element_bytes(dtype);
  int64_t span = 0;
  if (v.batch > 0 && v.rows > 0 && v.cols > 0 && v.rstride() >= v.cols) {
    const int64_t extent = (v.rows - 1) * v.rstride() + v.cols;
    const int64_t bstride = v.batch_stride ? v.batch_stride : v.rows * v.rstride();
    span = v.batch > 1 && bstride < extent ? 0 : (v.batch - 1) * bstride + extent;
  }
  const int64_t misalign = in.chance(64) ? in.u8() % 4 : 0;
  t.storage = random_bytes(in, misalign + span * es);
  v.data = span > 0 ? t.storage.data() + misalign : (in.chance(128) ? nullptr : t.storage.data());
  return t;
}

// Up to 8 int32 end offsets for `rows` rows: mostly sorted inside [0, rows], sometimes anything.
inline std::vector<int32_t> random_ends(Bytes& in, int64_t rows) {
  std::vector<int32_t> ends(in.u8() % 9);
  int32_t at = 0;
  for (int32_t& e : ends) {
    if (in.chance(24)) {
      e = static_cast<int32_t>(in.u32());  // negative, past rows, out of order
    } else {
      const int64_t room = rows - at;
      at += room > 0 ? static_cast<int32_t>(in.u8() % (room + 1)) : 0;
      e = at;
    }
  }
  return ends;
}

inline int32_t random_alignment(Bytes& in, bool optional) {
  static const int32_t kAlign[] = {1, 16, 32, 32, 64, 128, 256, 3, -32, 1 << 20};
  return optional && in.chance(96) ? 0 : in.pick(kAlign);
}

inline TokenGroups groups_of(const std::vector<int32_t>& ends) {
  return {ends.empty() ? nullptr : ends.data(), static_cast<int64_t>(ends.size())};
}

// A quantize call on host buffers; q.out is left for the caller. `offsets`: whether the caller
// should pass padded_starts / padded_ends, `amax_out`: out.amax (optional outputs).
struct QuantizeCase {
  Tensor input;
  std::vector<int32_t> ends;
  std::vector<float> amax;  // nvfp4 tensor_amax [batch]; empty: computed
  QuantizeArgs q;
  bool offsets = false;
  bool amax_out = false;
};
inline QuantizeCase random_quantize_case(Bytes& in) {
  QuantizeCase c;
  const DType dtype = random_enum<DType>(in, 0, 2);
  c.input = random_tensor(in, dtype, in.chance(64));
  QuantizeArgs& q = c.q;
  q.input = c.input.view;
  q.params.format = random_enum<Format>(in, 0, 3);
  q.params.rule = random_enum<ScaleRule>(in, 0, 1);
  q.params.layout = random_enum<ScaleLayout>(in, 0, 1);
  q.params.direction = random_enum<Direction>(in, 1, 3);
  q.backend = Backend::cpu;
  if (in.chance(128)) {
    c.ends = random_ends(in, q.input.rows);
    q.groups.groups = groups_of(c.ends);
    q.groups.pad_rowwise = random_alignment(in, true);
    q.groups.pad_colwise = random_alignment(in, true);
  }
  if (in.chance(96)) {
    const uint32_t bits = in.u32();
    float amax;
    std::memcpy(&amax, &bits, 4);
    c.amax.assign(static_cast<size_t>(q.input.batch > 0 ? q.input.batch : 1), amax);
    q.tensor_amax = c.amax.data();
  }
  c.offsets = in.chance(128);
  c.amax_out = in.chance(128);
  return c;
}

// A dequantize of one direction of a quantize call's outputs (data, scales, s_dec: the caller's).
inline DequantizeArgs dequantize_args(Bytes& in, const QuantizeArgs& q, Direction dir) {
  DequantizeArgs d;
  d.params = q.params;
  d.params.direction = dir;
  d.batch = q.input.batch;
  d.rows = q.input.rows;
  d.cols = q.input.cols;
  d.groups = q.groups;
  d.out_dtype = random_enum<DType>(in, 0, 2);
  d.backend = Backend::cpu;
  return d;
}

// A pad call (and the unpad of its output) on host buffers; outputs for the caller.
struct PadCase {
  Tensor input;
  std::vector<int32_t> ends;
  PadArgs p;
  bool amax = false;
};
inline PadCase random_pad_case(Bytes& in) {
  PadCase c;
  c.input = random_tensor(in, random_enum<DType>(in, 0, 3), false);
  c.ends = random_ends(in, c.input.view.rows);
  c.p.input = c.input.view;
  c.p.groups = groups_of(c.ends);
  c.p.alignment = random_alignment(in, false);
  c.p.backend = Backend::cpu;
  c.amax = in.chance(128);
  return c;
}

// A swizzle call (and unswizzle) on host buffers; outputs for the caller.
struct SwizzleCase {
  std::vector<uint8_t> linear;
  std::vector<int32_t> ends;
  SwizzleArgs s;
};
inline SwizzleCase random_swizzle_case(Bytes& in) {
  SwizzleCase c;
  SwizzleArgs& s = c.s;
  s.batch = in.u8() % 3;
  s.rows = in.dim();
  s.cols = in.dim() % 40;
  s.group_axis = random_enum<ScaleGroups>(in, 0, 2);
  if (s.group_axis != ScaleGroups::none) {
    c.ends = random_ends(in, s.group_axis == ScaleGroups::along_k ? s.cols : s.rows);
    s.groups = groups_of(c.ends);
  }
  s.backend = Backend::cpu;
  c.linear = random_bytes(in, s.batch * s.rows * s.cols);
  s.in = c.linear.data();
  return c;
}

}  // namespace mxq::test::cases
