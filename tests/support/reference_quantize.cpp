#include "support/reference_quantize.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "numerics/oracle.hpp"

namespace mxq::test {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t rup(int64_t a, int64_t b) { return cdiv(a, b) * b; }

// docs/spec.md section 5, written out.
int64_t swizzled(int64_t r, int64_t c, int64_t padded_cols) {
  const int64_t nc = padded_cols / 4;
  return ((r / 128) * nc + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
}

struct Fmt {
  int block, bits, emax;
  bool nv;
  oracle::ValueTable elem;
};

Fmt describe(Format f) {
  switch (f) {
    case Format::mxfp8_e5m2: return {32, 8, 15, false, oracle::make_table(oracle::kE5M2)};
    case Format::mxfp4: return {32, 4, 2, false, oracle::make_table(oracle::kE2M1)};
    case Format::nvfp4: return {16, 4, 2, true, oracle::make_table(oracle::kE2M1)};
    default: return {32, 8, 8, false, oracle::make_table(oracle::kE4M3)};
  }
}

void put(std::vector<uint8_t>& buf, int64_t row_byte0, int64_t index, int bits, uint32_t code) {
  if (bits == 8) {
    buf[size_t(row_byte0 + index)] = uint8_t(code);
  } else {
    uint8_t& b = buf[size_t(row_byte0 + index / 2)];
    b = index % 2 ? uint8_t((b & 0x0F) | (code << 4)) : uint8_t((b & 0xF0) | code);
  }
}

// One block: values -> (scale byte, codes).
struct BlockOut {
  uint8_t scale;
  std::vector<uint32_t> codes;
};

BlockOut quantize_block(const Fmt& f, ScaleRule rule, const std::vector<float>& v, float s_enc, float s_dec) {
  static const oracle::ValueTable e4m3 = oracle::make_table(oracle::kE4M3);
  bool poison = false;
  float A = 0.0f;
  for (float x : v) {
    if (!std::isfinite(x))
      poison = true;
    else
      A = std::max(A, std::fabs(x));
  }
  BlockOut out;
  if (poison) {
    out.scale = f.nv ? 0x7F : 255;
    out.codes.assign(v.size(), f.bits == 8 ? 0x7Fu : 0x7u);
    return out;
  }
  float multiplier;
  if (f.nv) {
    const float k = oracle::mul_f32(s_enc, static_cast<float>(1.0 / 6.0));
    out.scale = uint8_t(oracle::encode_satfinite(e4m3, oracle::mul_f32(A, k)));
    const float denom = oracle::mul_f32(float(e4m3.mag[out.scale]), s_dec);
    multiplier = std::min(oracle::div_f32(1.0f, denom), FLT_MAX);
  } else {
    out.scale = rule == ScaleRule::floor ? oracle::floor_scale(A, f.emax) : oracle::rceil_scale(A, f.elem.max_value());
    multiplier = static_cast<float>(std::ldexp(1.0, 127 - out.scale));  // 2^-127 for 254: exact
  }
  for (float x : v) out.codes.push_back(oracle::encode_satfinite(f.elem, oracle::mul_f32(x, multiplier)));
  return out;
}

}  // namespace

QuantizeResult reference_quantize(const HostTensor& x, const QuantizeRequest& req, const QuantizeSizes& sizes) {
  const Fmt f = describe(req.params.format);
  const int64_t B = x.batch, M = x.rows, K = x.cols, bs = f.block;
  const bool blocked = req.params.layout == ScaleLayout::blocked;
  const int64_t G = int64_t(req.ends.size());
  QuantizeResult r;
  r.sizes = sizes;
  const bool row = has_rowwise(req.params.direction), col = has_colwise(req.params.direction);
  if (row) {
    r.row_data.assign(size_t(sizes.row_data_bytes), 0);
    r.row_scales.assign(size_t(sizes.row_scale_bytes), 0);
  }
  if (col) {
    r.col_data.assign(size_t(sizes.col_data_bytes), 0);
    r.col_scales.assign(size_t(sizes.col_scale_bytes), 0);
  }

  // Groups: clamped ends, sizes; a tensor without groups is one group of M rows.
  std::vector<int64_t> first, count;
  if (G == 0) {
    first = {0};
    count = {M};
  } else {
    int64_t prev = 0;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t e = std::min<int64_t>(std::max<int64_t>(req.ends[size_t(g)], prev), M);
      first.push_back(prev);
      count.push_back(e - prev);
      prev = e;
    }
  }
  const int64_t A = req.pad_rowwise ? req.pad_rowwise : req.pad_colwise;
  std::vector<int64_t> padded_start;
  {
    int64_t at = 0;
    for (size_t g = 0; g < count.size(); ++g) {
      padded_start.push_back(at);
      at += A ? rup(count[g], A) : 0;
    }
  }
  if (A && G > 0) {
    for (int64_t g = 0; g < G; ++g) {
      r.padded_starts.push_back(int32_t(padded_start[size_t(g)]));
      r.padded_ends.push_back(int32_t(padded_start[size_t(g)] + rup(count[size_t(g)], A)));
    }
  }

  for (int64_t b = 0; b < B; ++b) {
    float s_enc = 1.0f, s_dec = 1.0f;
    if (f.nv) {
      float T = 0.0f;
      bool nan = false;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) {
          const float v = x.get(b, m, k);
          if (std::isnan(v))
            nan = true;
          else
            T = std::max(T, std::fabs(v));
        }
      if (!req.tensor_amax.empty()) {
        T = req.tensor_amax[size_t(b)];
        nan = false;
      }
      if (!nan && T != 0.0f && std::isfinite(T)) s_enc = std::min(oracle::div_f32(2688.0f, T), FLT_MAX);
      s_dec = oracle::div_f32(1.0f, s_enc);
      r.s_enc.push_back(s_enc);
      r.s_dec.push_back(s_dec);
    }
    // value of data row i of group g (padding rows are 0)
    auto value = [&](size_t g, int64_t i, int64_t k) { return i < count[g] ? x.get(b, first[g] + i, k) : 0.0f; };

    if (row) {
      const bool pad = G > 0 && req.pad_rowwise;
      const int64_t Mr = sizes.row_data_rows, nk = cdiv(K, bs), cp = rup(nk, 4);
      const int64_t row_bytes = K * f.bits / 8;
      int64_t scale_row0 = 0;  // groups along M, blocked
      for (size_t g = 0; g < count.size(); ++g) {
        const int64_t rows = pad ? rup(count[g], req.pad_rowwise) : count[g];
        const int64_t out0 = pad ? padded_start[g] : first[g];
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t orow = out0 + i;
          for (int64_t c = 0; c < nk; ++c) {
            std::vector<float> v;
            for (int64_t k = c * bs; k < std::min(K, (c + 1) * bs); ++k) v.push_back(value(g, i, k));
            const BlockOut q = quantize_block(f, req.params.rule, v, s_enc, s_dec);
            for (size_t j = 0; j < v.size(); ++j)
              put(r.row_data, (b * Mr + orow) * row_bytes, c * bs + int64_t(j), f.bits, q.codes[j]);
            int64_t at;
            if (!blocked)
              at = (b * Mr + orow) * nk + c;
            else if (G == 0)
              at = b * rup(Mr, 128) * cp + swizzled(orow, c, cp);
            else
              at = scale_row0 * cp + swizzled(i, c, cp);
            r.row_scales[size_t(at)] = q.scale;
          }
        }
        scale_row0 += rup(rows, 128);
      }
    }
    if (col) {
      const bool pad = G > 0 && req.pad_colwise;
      const int64_t Mc = sizes.col_data_cols, row_bytes = Mc * f.bits / 8, nm = cdiv(Mc, bs);
      const int64_t L = nm + G, rpk = rup(K, 128);
      int64_t col0 = 0;  // first scale column (linear) / padded column (blocked) of the group
      for (size_t g = 0; g < count.size(); ++g) {
        const int64_t rows = pad ? rup(count[g], req.pad_colwise) : count[g];
        const int64_t out0 = pad ? padded_start[g] : first[g];
        const int64_t q_g = cdiv(rows, bs);
        for (int64_t k = 0; k < K; ++k) {
          for (int64_t l = 0; l < q_g; ++l) {
            std::vector<float> v;
            for (int64_t i = l * bs; i < std::min(rows, (l + 1) * bs); ++i) v.push_back(value(g, i, k));
            const BlockOut q = quantize_block(f, req.params.rule, v, s_enc, s_dec);
            for (size_t j = 0; j < v.size(); ++j)
              put(r.col_data, (b * K + k) * row_bytes, out0 + l * bs + int64_t(j), f.bits, q.codes[j]);
            int64_t at;
            if (G == 0)
              at = blocked ? b * rpk * rup(nm, 4) + swizzled(k, l, rup(nm, 4)) : (b * K + k) * nm + l;
            else
              at = blocked ? rpk * col0 + swizzled(k, l, rup(q_g, 4)) : k * L + col0 + l;
            r.col_scales[size_t(at)] = q.scale;
          }
        }
        col0 += blocked ? rup(q_g, 4) : q_g;
      }
    }
  }
  return r;
}

}  // namespace mxq::test
