// libFuzzer target over the public C++ API on the CPU backend (built with ASan + UBSan by
// fuzz/run.sh): quantize, dequantize, tensor_amax, pad, unpad, swizzle / unswizzle and
// validate_group_ends with arguments decoded from the fuzzer's bytes: every dtype, format, rule,
// layout and direction value (out-of-range ones too), tiny and odd shapes, strides, unaligned data,
// token groups with any end offsets, paddings and tensor amaxes. Each output buffer is allocated
// at exactly the size the op reports, so ASan sees any write past it. Every op runs twice, over
// outputs poisoned with two different bytes:
// - the two calls return the same status;
// - an error leaves every output holding its poison (nothing written, errors.md);
// - a success gives byte-identical outputs (every byte written, deterministically).
// Any broken property aborts, which libFuzzer reports as a crash with the input that caused it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <mxq/mxq.hpp>

namespace {

using namespace mxq;

// The fuzzer's bytes as a stream of small decisions; zeros once they run out.
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
  // A size in [0, 200]: mostly small or near block multiples, where edge cases live.
  int64_t dim() {
    static const int64_t kDims[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128, 129, 160, 200};
    return chance(200) ? pick(kDims) : u8() % 201;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_api: %s\n", what);
  std::abort();
}

// One output buffer: exactly `bytes` long (ASan sees any write past it), poisoned before each call.
struct Out {
  std::vector<uint8_t> bytes;
  void* ptr() { return bytes.empty() ? nullptr : bytes.data(); }
};

// Runs call() twice over outputs poisoned with 0xA5 and then 0x5A and checks the properties above.
template <class Call>
Status run_twice(std::vector<Out*> outs, Call&& call) {
  std::vector<std::vector<uint8_t>> first(outs.size());
  Status st[2];
  for (int run = 0; run < 2; ++run) {
    const uint8_t poison = run == 0 ? 0xA5 : 0x5A;
    for (Out* o : outs)
      if (!o->bytes.empty()) std::memset(o->bytes.data(), poison, o->bytes.size());
    st[run] = call();
    for (size_t i = 0; i < outs.size(); ++i) {
      const std::vector<uint8_t>& b = outs[i]->bytes;
      if (!st[run].ok()) {
        for (uint8_t v : b)
          if (v != poison) fail("an op that failed wrote to an output");
      } else if (run == 0) {
        first[i] = b;
      } else if (first[i] != b) {
        fail("two runs over different poisons disagree: an output byte was not written");
      }
    }
  }
  if (st[0].ok() != st[1].ok() || st[0].code() != st[1].code()) fail("two runs of one call returned different codes");
  if (!st[0].ok() && st[0].message().empty()) fail("an error without a message");
  return st[0];
}

// Input elements with random bits (NaN, Inf, subnormals and zeros among them) or one repeated value.
std::vector<uint8_t> random_elements(Bytes& in, int64_t bytes) {
  std::vector<uint8_t> v(static_cast<size_t>(bytes));
  if (in.chance(32)) {
    const uint32_t word = in.u32();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(word >> (8 * (i % 4)));
  } else {
    uint32_t x = in.u32() | 1;
    for (uint8_t& b : v) {  // xorshift32 seeded by the fuzzer
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      b = static_cast<uint8_t>(x);
    }
  }
  return v;
}

// A tensor view over a fresh buffer holding exactly the elements it spans (plus `misalign` bytes
// in front, so that the data pointer need not be aligned to its element size).
struct Tensor {
  std::vector<uint8_t> storage;
  TensorView view;
};
Tensor random_tensor(Bytes& in, DType dtype, bool three_d) {
  Tensor t;
  TensorView& v = t.view;
  v.dtype = dtype;
  v.batch = three_d ? in.u8() % 4 : 1;
  v.rows = in.dim();
  v.cols = in.dim();
  if (in.chance(48)) v.row_stride = v.cols + in.u8() % 9 - (in.chance(16) ? 4 : 0);  // < cols: invalid
  if (three_d && in.chance(48)) v.batch_stride = v.rows * v.rstride() + in.u8() % 17 - (in.chance(16) ? 8 : 0);
  const int64_t es = dtype_size(static_cast<DType>(static_cast<int32_t>(dtype) & 3));
  int64_t span = 0;  // elements a reader may touch when the strides are valid
  if (v.batch > 0 && v.rows > 0 && v.cols > 0 && v.rstride() >= v.cols) {
    const int64_t extent = (v.rows - 1) * v.rstride() + v.cols;
    const int64_t bstride = v.batch_stride ? v.batch_stride : v.rows * v.rstride();
    span = v.batch > 1 && bstride < extent ? 0 : (v.batch - 1) * bstride + extent;
  }
  const int64_t misalign = in.chance(64) ? in.u8() % 4 : 0;
  t.storage = random_elements(in, misalign + span * es);
  v.data = span > 0 ? t.storage.data() + misalign : (in.chance(128) ? nullptr : t.storage.data());
  return t;
}

// G int32 end offsets for `rows` rows: mostly sorted inside [0, rows], sometimes anything.
std::vector<int32_t> random_ends(Bytes& in, int64_t rows) {
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

int32_t random_alignment(Bytes& in, bool optional) {
  static const int32_t kAlign[] = {1, 16, 32, 32, 64, 128, 256, 3, -32, 1 << 20};
  return optional && in.chance(96) ? 0 : in.pick(kAlign);
}

template <class E>
E random_enum(Bytes& in, int32_t valid_lo, int32_t valid_hi) {
  const int32_t span = valid_hi - valid_lo + 1;
  return static_cast<E>(in.chance(8) ? static_cast<int32_t>(in.u8()) - 128 : valid_lo + in.u8() % span);
}

Out sized(int64_t bytes) {
  if (bytes < 0 || bytes > (int64_t{64} << 20)) fail("an op reported an absurd output size");
  return Out{std::vector<uint8_t>(static_cast<size_t>(bytes))};
}

void fuzz_dequantize(Bytes& in, const QuantizeArgs& q, Direction dir, const void* data, const uint8_t* scales,
                     const float* s_dec) {
  DequantizeArgs d;
  d.params = q.params;
  d.params.direction = dir;
  d.batch = q.input.batch;
  d.rows = q.input.rows;
  d.cols = q.input.cols;
  d.groups = q.groups;
  d.data = data;
  d.scales = scales;
  d.s_dec = s_dec;
  d.out_dtype = random_enum<DType>(in, 0, 2);
  d.backend = Backend::cpu;
  int64_t elements = 0;
  if (!dequantize_size(d, &elements).ok()) return;
  Out out = sized(elements * 4);  // fp32 at most; cut to the dtype's size below
  if (static_cast<int32_t>(d.out_dtype) >= 0 && static_cast<int32_t>(d.out_dtype) <= 2)
    out.bytes.resize(static_cast<size_t>(elements * dtype_size(d.out_dtype)));
  d.out = out.ptr();
  (void)run_twice({&out}, [&] { return dequantize(d); });
}

void fuzz_quantize(Bytes& in) {
  const DType dtype = random_enum<DType>(in, 0, 2);
  Tensor t = random_tensor(in, dtype, in.chance(64));
  QuantizeArgs q;
  q.input = t.view;
  q.params.format = random_enum<Format>(in, 0, 3);
  q.params.rule = random_enum<ScaleRule>(in, 0, 1);
  q.params.layout = random_enum<ScaleLayout>(in, 0, 1);
  q.params.direction = random_enum<Direction>(in, 1, 3);
  q.backend = Backend::cpu;
  std::vector<int32_t> ends;
  if (in.chance(128)) {
    ends = random_ends(in, t.view.rows);
    q.groups.groups = {ends.empty() ? nullptr : ends.data(), static_cast<int64_t>(ends.size())};
    q.groups.pad_rowwise = random_alignment(in, true);
    q.groups.pad_colwise = random_alignment(in, true);
  }
  float amax = 0;
  if (in.chance(96)) {
    const uint32_t bits = in.u32();
    std::memcpy(&amax, &bits, 4);
    q.tensor_amax = &amax;  // one value: batch > 1 must not read past it (it is [batch])
  }
  std::vector<float> amaxes;
  if (q.tensor_amax && q.input.batch > 1) {
    amaxes.assign(static_cast<size_t>(q.input.batch), amax);
    q.tensor_amax = amaxes.data();
  }
  QuantizeSizes sz;
  if (!quantize_sizes(q, &sz).ok()) {
    Out none = sized(0);
    (void)run_twice({&none}, [&] { return quantize(q); });  // must fail the same way
    return;
  }
  Out row_data = sized(sz.row_data_bytes), row_scales = sized(sz.row_scale_bytes);
  Out col_data = sized(sz.col_data_bytes), col_scales = sized(sz.col_scale_bytes);
  Out s_enc = sized(sz.tensor_scale_count * 4), s_dec = sized(sz.tensor_scale_count * 4);
  Out starts = sized(sz.padded_offset_count * 4), ends_out = sized(sz.padded_offset_count * 4);
  q.out.row_data = row_data.ptr();
  q.out.row_scales = static_cast<uint8_t*>(row_scales.ptr());
  q.out.col_data = col_data.ptr();
  q.out.col_scales = static_cast<uint8_t*>(col_scales.ptr());
  q.out.s_enc = static_cast<float*>(s_enc.ptr());
  q.out.s_dec = static_cast<float*>(s_dec.ptr());
  const bool offsets = in.chance(128);
  q.out.padded_starts = offsets ? static_cast<int32_t*>(starts.ptr()) : nullptr;
  q.out.padded_ends = offsets ? static_cast<int32_t*>(ends_out.ptr()) : nullptr;
  if (!offsets) starts.bytes.clear(), ends_out.bytes.clear();
  const Status st = run_twice({&row_data, &row_scales, &col_data, &col_scales, &s_enc, &s_dec, &starts, &ends_out},
                              [&] { return quantize(q); });
  if (!st.ok()) return;
  const float* sd = static_cast<const float*>(s_dec.ptr());
  if (has_rowwise(q.params.direction))
    fuzz_dequantize(in, q, Direction::rowwise, row_data.ptr(), static_cast<uint8_t*>(row_scales.ptr()), sd);
  if (has_colwise(q.params.direction))
    fuzz_dequantize(in, q, Direction::colwise, col_data.ptr(), static_cast<uint8_t*>(col_scales.ptr()), sd);
}

void fuzz_tensor_amax(Bytes& in) {
  Tensor t = random_tensor(in, random_enum<DType>(in, 0, 3), in.chance(128));
  Out out = sized(4 * t.view.batch);
  (void)run_twice({&out}, [&] { return tensor_amax(t.view, static_cast<float*>(out.ptr()), Backend::cpu); });
}

void fuzz_pad_unpad(Bytes& in) {
  const DType dtype = random_enum<DType>(in, 0, 3);
  Tensor t = random_tensor(in, dtype, false);
  std::vector<int32_t> ends = random_ends(in, t.view.rows);
  PadArgs p;
  p.input = t.view;
  p.groups = {ends.empty() ? nullptr : ends.data(), static_cast<int64_t>(ends.size())};
  p.alignment = random_alignment(in, false);
  p.backend = Backend::cpu;
  int64_t rows = 0;
  if (!pad_rows(p, &rows).ok()) {
    Out none = sized(0);
    (void)run_twice({&none}, [&] { return pad(p); });
    return;
  }
  const bool valid_dtype = static_cast<int32_t>(dtype) >= 0 && static_cast<int32_t>(dtype) <= 3;
  const int64_t row_bytes = valid_dtype ? t.view.cols * dtype_size(dtype) : 0;
  Out out = sized(rows * row_bytes), starts = sized(4 * p.groups.count), pends = sized(4 * p.groups.count);
  Out amax = sized(in.chance(128) ? 4 : 0);
  p.out = out.ptr();
  p.padded_starts = static_cast<int32_t*>(starts.ptr());
  p.padded_ends = static_cast<int32_t*>(pends.ptr());
  p.amax = static_cast<float*>(amax.ptr());
  if (!run_twice({&out, &starts, &pends, &amax}, [&] { return pad(p); }).ok()) return;

  UnpadArgs u;
  u.input = {out.ptr(), dtype, 1, rows, t.view.cols, 0, 0};
  u.groups = p.groups;
  u.alignment = p.alignment;
  u.rows = t.view.rows;
  u.backend = Backend::cpu;
  Out back = sized(t.view.rows * row_bytes), back_amax = sized(amax.bytes.size());
  u.out = back.ptr();
  u.amax = static_cast<float*>(back_amax.ptr());
  (void)run_twice({&back, &back_amax}, [&] { return unpad(u); });

  const Status v = validate_group_ends(p.groups, t.view.rows, Backend::cpu);
  if (!v.ok() && v.code() != Code::invalid_offsets) fail("validate_group_ends: unexpected code");
}

void fuzz_swizzle(Bytes& in) {
  SwizzleArgs s;
  s.batch = in.u8() % 3;
  s.rows = in.dim();
  s.cols = in.dim() % 40;
  s.group_axis = random_enum<ScaleGroups>(in, 0, 2);
  std::vector<int32_t> ends;
  if (s.group_axis != ScaleGroups::none) {
    ends = random_ends(in, s.group_axis == ScaleGroups::along_k ? s.cols : s.rows);
    s.groups = {ends.empty() ? nullptr : ends.data(), static_cast<int64_t>(ends.size())};
  }
  s.backend = Backend::cpu;
  const int64_t linear_bytes = s.batch * s.rows * s.cols;
  std::vector<uint8_t> linear = random_elements(in, linear_bytes);
  s.in = linear.data();
  int64_t bytes = 0;
  if (!swizzle_size(s, &bytes).ok()) return;
  Out blocked = sized(bytes);
  s.out = static_cast<uint8_t*>(blocked.ptr());
  if (!run_twice({&blocked}, [&] { return swizzle(s); }).ok()) return;
  Out back = sized(linear_bytes);
  if (!run_twice({&back}, [&] { return unswizzle(s, static_cast<uint8_t*>(back.ptr())); }).ok()) return;
  if (s.group_axis == ScaleGroups::none && back.bytes != linear) fail("unswizzle(swizzle(x)) != x");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  switch (in.u8() % 4) {
    case 0: fuzz_quantize(in); break;
    case 1: fuzz_pad_unpad(in); break;
    case 2: fuzz_swizzle(in); break;
    default: fuzz_tensor_amax(in); break;
  }
  return 0;
}
