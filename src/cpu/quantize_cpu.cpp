// CPU reference quantize (docs/spec.md sections 2-6, docs/layouts.md). One code path serves every
// format: a block quantizer templated on the format traits, fed by a rowwise and a colwise walker
// over the segments of quant_plan_internal.hpp. All bit-level rules come from mxq/numerics.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend.hpp"
#include "cpu/element_io_internal.hpp"
#include "cpu/parallel.hpp"
#include "cpu/quant_plan_internal.hpp"

namespace mxq::cpu {
namespace {

// What every block of one batch shares.
struct BlockContext {
  ScaleRule rule = ScaleRule::rceil;
  float s_enc = 1.0f;  // nvfp4 only
  float s_dec = 1.0f;  // nvfp4 only
  // element_multiplier of every scale byte, for this batch's s_dec: a lookup per block instead
  // of a division.
  float multiplier[256] = {};
};

template <class T>
BlockContext block_context(ScaleRule rule, float s_enc, float s_dec) {
  BlockContext ctx;
  ctx.rule = rule;
  ctx.s_enc = s_enc;
  ctx.s_dec = s_dec;
  for (int sb = 0; sb < 256; ++sb) {
    if (sb != T::scale_nan) ctx.multiplier[sb] = num::element_multiplier<T>(static_cast<uint8_t>(sb), s_dec);
  }
  return ctx;
}

// Quantizes the n values x[0, n) of one block (the rest of the block are virtual zeros, which
// cannot change its amax): writes n codes, one per byte, and returns the scale byte. Both loops
// are branch-free over the elements, so the compiler vectorizes them.
template <class T>
uint8_t quantize_block(const float* x, int64_t n, const BlockContext& ctx, uint8_t* codes) {
  uint32_t amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, num::abs_bits(x[i]));
  const uint8_t sb = num::block_scale<T>(amax, ctx.rule, ctx.s_enc);
  if (sb == T::scale_nan) {  // poisoned: every element is the NaN code
    std::fill(codes, codes + n, static_cast<uint8_t>(T::Elem::nan_code));
    return sb;
  }
  const float multiplier = ctx.multiplier[sb];
  for (int64_t i = 0; i < n; ++i) {
    codes[i] = static_cast<uint8_t>(num::encode_branchless<typename T::Elem>(x[i] * multiplier));
  }
  return sb;
}

// quantize_block with the block length known at compile time for full blocks (unrolled loops).
template <class T>
uint8_t quantize_block_of(const float* x, int64_t n, const BlockContext& ctx, uint8_t* codes) {
  return n == T::block ? quantize_block<T>(x, T::block, ctx, codes) : quantize_block<T>(x, n, ctx, codes);
}

// Rows in parallel: each output row (data and its scales) belongs to one thread. A row is read
// into fp32 once, its codes written a byte each (8-bit codes straight into the output row) and
// 4-bit codes packed in pairs afterwards.
template <class T>
void quantize_rowwise(const TensorView& in, int64_t b, const DirectionPlan& plan, const BlockContext& ctx,
                      uint8_t* data, uint8_t* scales) {
  constexpr int64_t kBlock = T::block;
  constexpr bool kBytes = T::elem_bits == 8;
  const int64_t K = in.cols;
  const int64_t row_bytes = code_bytes(K, T::elem_bits);
  uint8_t* data_b = data + b * plan.data_batch_bytes;
  uint8_t* scales_b = scales + b * plan.scale_batch_bytes;
  for (const Segment& s : plan.segments) {
    parallel_for(0, s.rows, K, [&](int64_t lo, int64_t hi) {
      std::vector<float> x(static_cast<size_t>(K));
      std::vector<uint8_t> packed_codes(kBytes ? 0 : static_cast<size_t>(K));
      for (int64_t i = lo; i < hi; ++i) {
        if (i < s.real_rows) {
          load_row(in, b, s.in_row + i, 0, K, x.data());
        } else {
          std::fill(x.begin(), x.end(), 0.0f);  // padding row inside the group
        }
        uint8_t* out = data_b + (s.out_row + i) * row_bytes;
        uint8_t* codes = kBytes ? out : packed_codes.data();
        for (int64_t c = 0; c * kBlock < K; ++c) {
          const int64_t n = std::min(kBlock, K - c * kBlock);
          scales_b[s.scales.offset(i, c)] = quantize_block_of<T>(x.data() + c * kBlock, n, ctx, codes + c * kBlock);
        }
        if constexpr (!kBytes) pack_nibbles(codes, K, out);
      }
    });
  }
}

// Columns k in parallel: each row k of the transposed data (and its scales) belongs to one thread,
// which also keeps the 4-bit codes packed along M free of races.
template <class T>
void quantize_colwise(const TensorView& in, int64_t b, const DirectionPlan& plan, const BlockContext& ctx,
                      uint8_t* data, uint8_t* scales) {
  constexpr int64_t kBlock = T::block;
  constexpr int64_t kTileCols = 256;  // columns per tile: keeps the b x cols tile in cache
  const int64_t row_bytes = code_bytes(plan.data_rows, T::elem_bits);
  uint8_t* data_b = data + b * plan.data_batch_bytes;
  uint8_t* scales_b = scales + b * plan.scale_batch_bytes;
  parallel_for(0, in.cols, in.rows, [&](int64_t k_lo, int64_t k_hi) {
    std::vector<float> tile(static_cast<size_t>(kBlock * kTileCols));
    float column[kBlock];
    uint8_t codes[kBlock];
    for (int64_t k0 = k_lo; k0 < k_hi; k0 += kTileCols) {
      const int64_t w = std::min(kTileCols, k_hi - k0);
      for (const Segment& s : plan.segments) {
        for (int64_t r0 = 0; r0 < s.rows; r0 += kBlock) {
          const int64_t n = std::min(kBlock, s.rows - r0);
          for (int64_t r = 0; r < n; ++r) {
            float* dst = tile.data() + r * w;
            if (r0 + r < s.real_rows) {
              load_row(in, b, s.in_row + r0 + r, k0, w, dst);
            } else {
              std::fill(dst, dst + w, 0.0f);  // padding row inside the group
            }
          }
          for (int64_t j = 0; j < w; ++j) {
            const int64_t k = k0 + j;
            for (int64_t r = 0; r < n; ++r) column[r] = tile[static_cast<size_t>(r * w + j)];
            scales_b[s.scales.offset(k, r0 / kBlock)] = quantize_block_of<T>(column, n, ctx, codes);
            uint8_t* out = data_b + k * row_bytes;
            for (int64_t r = 0; r < n; ++r) put_code<T::elem_bits>(out, s.out_row + r0 + r, codes[r]);
          }
        }
      }
    }
  });
}

void zero_fill(void* p, int64_t bytes) {
  if (p != nullptr && bytes > 0) std::memset(p, 0, static_cast<size_t>(bytes));
}

// padded_starts / padded_ends of the token groups (either direction's alignment: they must agree).
void write_padded_offsets(const QuantizeArgs& args) {
  const QuantizeGroups& g = args.groups;
  const int64_t A = g.pad_rowwise > 0 ? g.pad_rowwise : g.pad_colwise;
  if (g.groups.count == 0 || A == 0) return;
  const std::vector<int64_t> ends = clamped_group_ends(g.groups, args.input.rows);
  const std::vector<int64_t> starts = padded_group_starts(ends, A);
  int64_t prev = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (args.out.padded_starts) store_at(args.out.padded_starts, int64_t(i), static_cast<int32_t>(starts[i]));
    if (args.out.padded_ends) {
      store_at(args.out.padded_ends, int64_t(i), static_cast<int32_t>(starts[i] + num::round_up(ends[i] - prev, A)));
    }
    prev = ends[i];
  }
}

template <class T>
Status quantize_format(const QuantizeArgs& args, const QuantizeSizes& sizes) {
  const TensorView& in = args.input;
  const QuantizeOutputs& out = args.out;
  const bool rowwise = has_rowwise(args.params.direction);
  const bool colwise = has_colwise(args.params.direction);

  // Every byte that belongs to no group, and all scale padding, is 0: start from zeros. Rowwise
  // without groups writes every data byte, and every linear scale, itself.
  const bool grouped = args.groups.groups.count > 0;
  if (rowwise) {
    if (grouped) zero_fill(out.row_data, sizes.row_data_bytes);
    if (grouped || args.params.layout == ScaleLayout::blocked) zero_fill(out.row_scales, sizes.row_scale_bytes);
  }
  if (colwise) {
    zero_fill(out.col_data, sizes.col_data_bytes);
    zero_fill(out.col_scales, sizes.col_scale_bytes);
  }
  DirectionPlan row_plan, col_plan;
  if (rowwise) row_plan = plan_direction(true, args.params, args.groups, in.rows, in.cols);
  if (colwise) col_plan = plan_direction(false, args.params, args.groups, in.rows, in.cols);

  std::vector<float> amax(static_cast<size_t>(in.batch), 0.0f);
  if constexpr (T::nv) {
    if (args.tensor_amax != nullptr) {
      if (in.batch > 0) std::memcpy(amax.data(), args.tensor_amax, static_cast<size_t>(in.batch) * sizeof(float));
    } else {
      Status st = cpu::tensor_amax(in, amax.data());
      if (!st.ok()) return st;
    }
  }
  for (int64_t b = 0; b < in.batch; ++b) {
    num::Nvfp4TensorScale ts{1.0f, 1.0f};
    if constexpr (T::nv) {
      ts = num::nvfp4_tensor_scale(amax[static_cast<size_t>(b)]);
      if (out.s_enc) store_at(out.s_enc, b, ts.s_enc);
      if (out.s_dec) store_at(out.s_dec, b, ts.s_dec);
    }
    const BlockContext ctx = block_context<T>(args.params.rule, ts.s_enc, ts.s_dec);
    if (rowwise) {
      quantize_rowwise<T>(in, b, row_plan, ctx, static_cast<uint8_t*>(out.row_data), out.row_scales);
    }
    if (colwise) {
      quantize_colwise<T>(in, b, col_plan, ctx, static_cast<uint8_t*>(out.col_data), out.col_scales);
    }
  }
  write_padded_offsets(args);
  return Status();
}

}  // namespace

Status quantize(const QuantizeArgs& args, const QuantizeSizes& sizes) {
  const Status st = num::dispatch_format(args.params.format,
                                         [&](auto traits) { return quantize_format<decltype(traits)>(args, sizes); });
  if (!st.ok() || args.out.amax == nullptr) return st;
  return cpu::tensor_amax(args.input, args.out.amax);  // QuantizeOutputs::amax is defined as this
}

}  // namespace mxq::cpu
