// libFuzzer target over the public C++ API on the CPU backend (built with ASan + UBSan by the
// `fuzz` preset, fuzz/CMakeLists.txt): quantize, dequantize, tensor_amax, pad, unpad, swizzle / unswizzle and
// validate_group_ends with arguments decoded from the fuzzer's bytes (tests/support/api_cases.hpp:
// valid and invalid values of every argument). Each input holds exactly the elements its view
// spans and each output buffer is allocated at exactly the size the op reports, so ASan sees any
// access past them. Every op runs twice, over outputs poisoned with two different bytes:
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

#include "support/api_cases.hpp"

namespace {

using namespace mxq;
using namespace mxq::test::cases;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_api: %s\n", what);
  std::abort();
}

// One output buffer: exactly `bytes` long (ASan sees any write past it), poisoned before each call.
struct Out {
  std::vector<uint8_t> bytes;
  void* ptr() { return bytes.empty() ? nullptr : bytes.data(); }
};

Out sized(int64_t bytes) {
  if (bytes < 0 || bytes > (int64_t{64} << 20)) fail("an op reported an absurd output size");
  return Out{std::vector<uint8_t>(static_cast<size_t>(bytes))};
}

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
  if (st[0].code() != st[1].code()) fail("two runs of one call returned different codes");
  if (!st[0].ok() && st[0].message().empty()) fail("an error without a message");
  return st[0];
}

void fuzz_dequantize(Bytes& in, const QuantizeArgs& q, Direction dir, const void* data, const void* scales,
                     const void* s_dec) {
  DequantizeArgs d = dequantize_args(in, q, dir);
  d.data = data;
  d.scales = static_cast<const uint8_t*>(scales);
  d.s_dec = static_cast<const float*>(s_dec);
  int64_t elements = 0;
  if (!dequantize_size(d, &elements).ok()) return;
  Out out = sized(elements * element_bytes(d.out_dtype));
  d.out = out.ptr();
  (void)run_twice({&out}, [&] { return dequantize(d); });
}

void fuzz_quantize(Bytes& in) {
  QuantizeCase c = random_quantize_case(in);
  QuantizeArgs& q = c.q;
  QuantizeSizes sz;
  if (!quantize_sizes(q, &sz).ok()) {
    Out none = sized(0);
    (void)run_twice({&none}, [&] { return quantize(q); });  // must fail the same way, writing nothing
    return;
  }
  Out row_data = sized(sz.row_data_bytes), row_scales = sized(sz.row_scale_bytes);
  Out col_data = sized(sz.col_data_bytes), col_scales = sized(sz.col_scale_bytes);
  Out s_enc = sized(sz.tensor_scale_count * 4), s_dec = sized(sz.tensor_scale_count * 4);
  Out starts = sized(c.offsets ? sz.padded_offset_count * 4 : 0);
  Out ends = sized(c.offsets ? sz.padded_offset_count * 4 : 0);
  Out amax = sized(c.amax_out ? q.input.batch * 4 : 0);
  q.out.row_data = row_data.ptr();
  q.out.row_scales = static_cast<uint8_t*>(row_scales.ptr());
  q.out.col_data = col_data.ptr();
  q.out.col_scales = static_cast<uint8_t*>(col_scales.ptr());
  q.out.s_enc = static_cast<float*>(s_enc.ptr());
  q.out.s_dec = static_cast<float*>(s_dec.ptr());
  q.out.padded_starts = static_cast<int32_t*>(starts.ptr());
  q.out.padded_ends = static_cast<int32_t*>(ends.ptr());
  q.out.amax = static_cast<float*>(amax.ptr());
  const Status st = run_twice({&row_data, &row_scales, &col_data, &col_scales, &s_enc, &s_dec, &starts, &ends, &amax},
                              [&] { return quantize(q); });
  if (!st.ok()) return;
  if (has_rowwise(q.params.direction))
    fuzz_dequantize(in, q, Direction::rowwise, row_data.ptr(), row_scales.ptr(), s_dec.ptr());
  if (has_colwise(q.params.direction))
    fuzz_dequantize(in, q, Direction::colwise, col_data.ptr(), col_scales.ptr(), s_dec.ptr());
}

void fuzz_tensor_amax(Bytes& in) {
  Tensor t = random_tensor(in, random_enum<DType>(in, 0, 3), in.chance(128));
  Out out = sized(4 * t.view.batch);
  (void)run_twice({&out}, [&] { return tensor_amax(t.view, static_cast<float*>(out.ptr()), Backend::cpu); });
}

void fuzz_pad_unpad(Bytes& in) {
  PadCase c = random_pad_case(in);
  PadArgs& p = c.p;
  int64_t rows = 0;
  if (!pad_rows(p, &rows).ok()) {
    Out none = sized(0);
    (void)run_twice({&none}, [&] { return pad(p); });
    return;
  }
  const TensorView& x = c.input.view;
  Out out = sized(rows * x.cols * element_bytes(x.dtype));
  Out starts = sized(4 * p.groups.count), pends = sized(4 * p.groups.count), amax = sized(c.amax ? 4 : 0);
  p.out = out.ptr();
  p.padded_starts = static_cast<int32_t*>(starts.ptr());
  p.padded_ends = static_cast<int32_t*>(pends.ptr());
  p.amax = static_cast<float*>(amax.ptr());
  if (!run_twice({&out, &starts, &pends, &amax}, [&] { return pad(p); }).ok()) return;

  UnpadArgs u;
  u.input = {out.ptr(), x.dtype, 1, rows, x.cols, 0, 0};
  u.groups = p.groups;
  u.alignment = p.alignment;
  u.rows = x.rows;
  u.backend = Backend::cpu;
  Out back = sized(x.rows * x.cols * element_bytes(x.dtype)), back_amax = sized(c.amax ? 4 : 0);
  u.out = back.ptr();
  u.amax = static_cast<float*>(back_amax.ptr());
  (void)run_twice({&back, &back_amax}, [&] { return unpad(u); });

  const Status v = validate_group_ends(p.groups, x.rows, Backend::cpu);
  if (!v.ok() && v.code() != Code::invalid_offsets) fail("validate_group_ends: unexpected code");
}

void fuzz_swizzle(Bytes& in) {
  SwizzleCase c = random_swizzle_case(in);
  SwizzleArgs& s = c.s;
  int64_t bytes = 0;
  if (!swizzle_size(s, &bytes).ok()) return;
  Out blocked = sized(bytes);
  s.out = static_cast<uint8_t*>(blocked.ptr());
  if (!run_twice({&blocked}, [&] { return swizzle(s); }).ok()) return;
  Out back = sized(static_cast<int64_t>(c.linear.size()));
  if (!run_twice({&back}, [&] { return unswizzle(s, static_cast<uint8_t*>(back.ptr())); }).ok()) return;
  if (s.group_axis == ScaleGroups::none && back.bytes != c.linear) fail("unswizzle(swizzle(x)) != x");
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
