// CPU reference dequantize (docs/spec.md section 7): x = decode(q) * scale in fp32, rounded to nearest
// even into the output dtype, over the same segments as quantize (quant_plan_internal.hpp).
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend.hpp"
#include "cpu/element_io_internal.hpp"
#include "cpu/parallel.hpp"
#include "cpu/quant_plan_internal.hpp"

namespace mxq::cpu {
namespace {

// dequantize_element of every (scale byte, code) pair for one batch's s_dec, so that each element
// costs a lookup: value(sb, code) = values[sb * codes + code].
template <class T>
std::vector<float> value_table(float s_dec) {
  constexpr int kCodes = 1 << T::elem_bits;
  std::vector<float> values(static_cast<size_t>(256 * kCodes));
  for (int sb = 0; sb < 256; ++sb) {
    for (int code = 0; code < kCodes; ++code) {
      values[static_cast<size_t>(sb * kCodes + code)] =
          num::dequantize_element<T>(static_cast<uint32_t>(code), static_cast<uint8_t>(sb), s_dec);
    }
  }
  return values;
}

// The value table of batch b. An MX format's is the same for every call (s_dec 1): built once per
// process, as the 8-bit formats' 65536 entries cost about as much as decoding 128K elements.
// nvfp4's depends on the batch's s_dec: built into `nv_values`.
template <class T>
const std::vector<float>& batch_values(const float* s_dec, int64_t b, std::vector<float>& nv_values) {
  if constexpr (T::nv) {
    nv_values = value_table<T>(load_at(s_dec, b));
    return nv_values;
  } else {
    static const std::vector<float> values = value_table<T>(1.0f);
    return values;
  }
}

template <class T>
Status dequantize_format(const DequantizeArgs& a) {
  constexpr int64_t kBlock = T::block;
  constexpr int kBits = T::elem_bits;
  constexpr int64_t kCodes = int64_t{1} << kBits;
  const bool rowwise = a.params.direction == Direction::rowwise;
  const DirectionPlan plan = plan_direction(rowwise, a.params, a.groups, a.rows, a.cols);
  const int64_t K = a.cols;
  const int64_t R = plan.data_rows;
  // Rows that belong to no group come out as 0 (an empty output may be null: no memset then).
  const int64_t out_bytes = a.batch * R * K * dtype_size(a.out_dtype);
  if (out_bytes > 0 && a.groups.groups.count > 0) std::memset(a.out, 0, static_cast<size_t>(out_bytes));

  const auto* data = static_cast<const uint8_t*>(a.data);
  std::vector<float> nv_values;
  for (int64_t b = 0; b < a.batch; ++b) {
    const std::vector<float>& values = batch_values<T>(a.s_dec, b, nv_values);
    const uint8_t* data_b = data + b * plan.data_batch_bytes;
    const uint8_t* scales_b = a.scales + b * plan.scale_batch_bytes;
    for (const Segment& s : plan.segments) {
      parallel_for(0, s.rows, K, [&](int64_t lo, int64_t hi) {
        std::vector<float> row(static_cast<size_t>(K));  // one output row in fp32
        for (int64_t i = lo; i < hi; ++i) {
          const int64_t m = s.out_row + i;
          if (rowwise) {
            // A block's elements share one scale: its row of the table is found once per block.
            const uint8_t* codes = data_b + m * code_bytes(K, kBits);
            for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
              const float* block_values = values.data() + scales_b[s.scales.offset(i, k0 / kBlock)] * kCodes;
              for (int64_t k = k0; k < std::min(K, k0 + kBlock); ++k)
                row[static_cast<size_t>(k)] = block_values[get_code<kBits>(codes, k)];
            }
          } else {
            for (int64_t k = 0; k < K; ++k) {
              const uint32_t code = get_code<kBits>(data_b + k * code_bytes(R, kBits), m);
              const uint8_t sb = scales_b[s.scales.offset(k, i / kBlock)];
              row[static_cast<size_t>(k)] = values[static_cast<size_t>(sb * kCodes + code)];
            }
          }
          store_floats(a.out, a.out_dtype, (b * R + m) * K, K, row.data());
        }
      });
    }
  }
  return Status();
}

}  // namespace

Status dequantize(const DequantizeArgs& args) {
  return num::dispatch_format(args.params.format,
                              [&](auto traits) { return dequantize_format<decltype(traits)>(args); });
}

}  // namespace mxq::cpu
