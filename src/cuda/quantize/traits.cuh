// Compile-time shape of the quantize tile kernel, derived from the input type and the format.
// A tile is 128 rows x 128 input columns; with 32-element blocks it maps to exactly one 512-byte
// blocked scale tile per direction (rowwise: 128 rows x 4 scale columns; colwise: 128 k-rows x 4
// m-block columns); with 16-element blocks (nvfp4) to two adjacent ones (8 scale columns).
// 4-bit codes are packed two per byte, low element first, along K (rowwise) or M (colwise).
#pragma once
#include <cstdint>
#include <type_traits>

#include <mxq/numerics.hpp>

#include "cuda/common.cuh"
#include "cuda/convert.cuh"
#include "cuda/e2m1_lines.hpp"
#include "cuda/quantize/tuning.hpp"

namespace mxq::cuda::kernels::quantize {

constexpr int kTileRows = 128;
constexpr int kTileCols = 128;
constexpr int kThreads = 256;
constexpr int kScaleTileBytes = 512;

// CTAs per SM of a tile kernel's launch bounds over In, with or without a colwise direction: a
// computed input states its own, as its arithmetic needs more registers than a load; other inputs
// take the tile's count (tuning.hpp).
template <class In>
constexpr int input_ctas_per_sm(int tile_ctas, bool col) {
  if constexpr (In::computed) {
    return In::ctas_per_sm(col);
  } else {
    return tile_ctas;
  }
}

template <class In, class Fmt>
struct TileTraits {
  using Input = In;
  using Raw = typename In::Raw;
  static constexpr int vec = 16 / static_cast<int>(sizeof(Raw));  // elements per 16-byte load
  static constexpr int chunks_per_row = kTileCols / vec;
  static constexpr int rows_per_pass = kThreads / chunks_per_row;
  static constexpr int passes = kTileRows / rows_per_pass;  // 16-byte loads per thread
  static constexpr int block = Fmt::block;
  static constexpr int lanes_per_block = block / vec;  // lanes sharing a rowwise block
  static constexpr int elem_bits = Fmt::elem_bits;
  static constexpr int row_bytes_per_chunk = vec * elem_bits / 8;  // rowwise output of one load
  static constexpr int scale_cols = kTileCols / block;             // per tile, rowwise
  static constexpr int col_blocks = kTileRows / block;             // per tile column, colwise
  static constexpr int scale_tiles = scale_cols / 4;               // 512-byte blocked tiles per direction
  static constexpr int block_bytes = block * elem_bits / 8;        // colwise codes of one block
  static constexpr int codes_per_word = 64 / elem_bits;            // codes in one 64-bit word
  static constexpr int block_words = block / codes_per_word;
  static constexpr int64_t staged_tile_bytes = int64_t{kTileRows} * kTileCols * sizeof(Raw);
  static constexpr int col_out_row_bytes = kTileRows * elem_bits / 8;  // colwise codes of one tile column
  static constexpr int64_t col_out_tile_bytes = int64_t{kTileCols} * col_out_row_bytes;
  // CTAs per SM of the grouped kernels' launch bounds, with or without a colwise direction (tuning.hpp).
  static constexpr int grouped_ctas_per_sm(bool col) {
    return input_ctas_per_sm<In>(
        tile_ctas_per_sm(sizeof(Raw), std::is_same<typename In::Plain, Bf16In>::value, elem_bits, block, true, true),
        col);
  }
  static_assert(lanes_per_block >= 1 && (lanes_per_block & (lanes_per_block - 1)) == 0,
                "a rowwise block spans a power-of-two number of lanes of one warp");
  static_assert(scale_cols == col_blocks && scale_cols % 4 == 0 && block_words >= 1,
                "whole 512-byte blocked scale tiles per direction and whole code words per block");
};

// Column tiles per band of the tile order (TileOrder): bands of kColwiseBandBytes of transposed
// output rows for colwise alone, else row-major (one band of every column tile).
template <class T, bool ROW, bool COL>
constexpr uint32_t tile_order_band(int64_t tiles_k) {
  return COL && !ROW ? kColwiseBandBytes / T::col_out_row_bytes : static_cast<uint32_t>(tiles_k);
}

// The launch bounds' CTAs per SM of the plain tile kernel (tuning.hpp).
template <class T, bool COL>
constexpr int min_ctas() {
  return input_ctas_per_sm<typename T::Input>(
      tile_ctas_per_sm(sizeof(typename T::Raw), std::is_same<typename T::Input::Plain, Bf16In>::value, T::elem_bits,
                       T::block, COL, false),
      COL);
}

// num::e8m0_reciprocal of every scale byte a finite block can have (0..254), without its branches:
// 2^(254 - b) has the exponent field 254 - b, except 2^-127 (b = 254), the subnormal 0x00400000,
// which the max supplies (every normal pattern is larger). Three integer instructions instead of
// a predicated block. The poison byte 255 gives -Inf here: a poisoned block's multiplier is never
// used (BlockScaler::multiplier returns 0 for it and its codes are selected NaN).
__host__ __device__ constexpr float e8m0_reciprocal_finite(uint8_t b) {
  const uint32_t normal = (254u - b) << 23;
  return num::u2f(normal > 0x00400000u ? normal : 0x00400000u);
}

constexpr bool e8m0_reciprocal_finite_matches_core() {
  for (int b = 0; b <= 254; ++b) {
    const uint8_t byte = static_cast<uint8_t>(b);
    if (num::f2u(e8m0_reciprocal_finite(byte)) != num::f2u(num::e8m0_reciprocal(byte))) return false;
  }
  return true;
}
static_assert(e8m0_reciprocal_finite_matches_core(), "bit-identical to num::e8m0_reciprocal for bytes 0..254");

// num::decode<E4M3> of every finite UE4M3 scale byte (0..0x7E), without its branches: the byte
// shifted into the fp32 exponent and mantissa fields reads as the same value times 2^-120 (its
// subnormals as fp32 subnormals, both exact), which one exact multiply restores.
__host__ __device__ constexpr float e4m3_value_finite(uint8_t sf) { return num::u2f(uint32_t{sf} << 20) * 0x1p120f; }

constexpr bool e4m3_value_finite_matches_core() {
  for (int b = 0; b <= 0x7E; ++b) {
    const uint8_t byte = static_cast<uint8_t>(b);
    if (num::f2u(e4m3_value_finite(byte)) != num::f2u(num::decode<num::E4M3>(byte))) return false;
  }
  return true;
}
static_assert(e4m3_value_finite_matches_core(), "bit-identical to num::decode<E4M3> for bytes 0..0x7E");

// nvfp4 multipliers by rcp_rn_in_range: with 2^-117 <= s_dec < 2^8, the product of every finite
// nonzero UE4M3 value d (2^-9 <= d <= 448) and s_dec lies in its range, and s_dec * 2^120 is a
// normal fp32 value, which takes e4m3_value_finite's exponent offset: u2f(sf << 20) * (s_dec *
// 2^120) is the same exact product as d * s_dec, so it rounds to the same fp32 value.
constexpr float kNvfp4FastSdecMin = 0x1p-117f, kNvfp4FastSdecEnd = 0x1p8f;
static_assert(kNvfp4FastSdecMin * 0x1p-9f >= num::kRcpInRangeMin && kNvfp4FastSdecEnd * 448.0f < num::kRcpInRangeEnd,
              "every d * s_dec of the fast range is in rcp_rn_in_range's range");

// The scale rule of one batch: MX blocks use `rule`; nvfp4 blocks use the batch's tensor scales.
template <class Fmt>
struct BlockScaler {
  ScaleRule rule;
  float s_enc, s_dec;
  // nvfp4: s_dec in [kNvfp4FastSdecMin, kNvfp4FastSdecEnd) (the same for the whole CTA), and then
  // s_dec * 2^120.
  bool fast_multipliers = false;
  float s_dec_2p120 = 0.0f;
  __device__ __forceinline__ void set_tensor_scales(float enc, float dec) {
    s_enc = enc;
    s_dec = dec;
    fast_multipliers = dec >= kNvfp4FastSdecMin && dec < kNvfp4FastSdecEnd;
    s_dec_2p120 = dec * 0x1p120f;
  }
  // The scale byte (in a 32-bit register, as the multiplier takes it).
  __device__ __forceinline__ uint32_t scale(uint32_t amax_bits) const {
    if constexpr (Fmt::nv) {
      // num::nvfp4_block_scale with the e4m3 conversion of convert.cuh (proven equal to
      // num::encode<E4M3> on every fp32 input) and the poison byte selected, not branched to.
      // The pair's second code, e4m3(0), is 0: the word is the byte.
      const float v = num::u2f(amax_bits) * (s_enc * num::kNvfp4OneSixth);
      const uint32_t sf = encode_pair<num::E4M3>(v, 0.0f);
      return num::is_nonfinite_abs_bits(amax_bits) ? num::kNvfp4ScaleNaN : sf;
    } else {
      return num::block_scale<Fmt>(amax_bits, rule, s_enc);
    }
  }
  // Element multiplier of a block (sb: a scale byte); unused (0) for a poisoned block, whose codes
  // are all NaN. A finite MX block's byte is at most 254 (both rules clamp), where
  // e8m0_reciprocal_finite is num::element_multiplier; a finite nvfp4 block's byte is at most
  // 0x7E, where e4m3_value_finite is num::decode<E4M3> in num::nvfp4_element_multiplier's formula.
  __device__ __forceinline__ float multiplier(uint32_t sb, bool poisoned) const {
    if constexpr (Fmt::nv) {
      float e;
      if (fast_multipliers) {
        // The byte 0 (d = 0) is the one finite byte outside rcp_rn_in_range's range: its
        // product 0 gives NaN there, which fminf replaces by FLT_MAX, num's 1 / 0 clamped.
        e = fminf(num::rcp_rn_in_range(num::u2f(sb << 20) * s_dec_2p120), num::kFltMax);
      } else {
        e = fminf(1.0f / (e4m3_value_finite(static_cast<uint8_t>(sb)) * s_dec), num::kFltMax);  // 1/0 = Inf -> FLT_MAX
      }
      return poisoned ? 0.0f : e;
    } else {
      return poisoned ? 0.0f : e8m0_reciprocal_finite(static_cast<uint8_t>(sb));
    }
  }
};

// Largest magnitude of each half of two packed 16-bit inputs (In: bf16 or fp16), in the low 15 bits
// of each half: one max.NaN.xorsign.abs, max(|a|, |b|) with the canonical NaN 0x7FFF when either
// is NaN (the sign bit, the XOR of the inputs' signs, is noise: magnitude_bits_16x2 clears it).
// Widened to fp32, the magnitude bits of the maximum are the numerics core's amax bits (abs_bits)
// for every finite block and non-finite exactly when one element is.
template <class In>
__device__ __forceinline__ uint32_t max_abs_16x2(uint32_t a, uint32_t b) {
  static_assert(sizeof(typename In::Raw) == 2, "16-bit inputs");
  uint32_t r;
  if constexpr (std::is_same<typename In::Plain, Bf16In>::value) {
    asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  } else {
    asm("max.NaN.xorsign.abs.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  }
  return r;
}
__device__ __forceinline__ uint32_t magnitude_bits_16x2(uint32_t v) { return v & 0x7FFF7FFFu; }

// The codes of N elements from their two 32-bit halves, or the format's NaN codes for a poisoned
// block (selected, not branched to: its codes are computed with multiplier 0 and discarded).
template <class Elem, int N>
__device__ __forceinline__ uint64_t codes_or_nan(const uint32_t (&half)[2], bool poisoned) {
  uint32_t nan_half = 0;
  for (int j = 0; j < 32 / Elem::bits; ++j) nan_half |= uint32_t{Elem::nan_code} << (j * Elem::bits);
  const uint64_t codes = uint64_t{half[0]} | (uint64_t{half[1]} << 32);
  constexpr uint64_t kWordMask = N * Elem::bits == 64 ? ~uint64_t{0} : (uint64_t{1} << (N * Elem::bits)) - 1;
  return poisoned ? ((uint64_t{nan_half} << 32 | nan_half) & kWordMask) : codes;
}

// Codes of N consecutive elements of one block, packed low element first (N * bits <= 64).
// A poisoned block (non-finite amax) encodes every element as the format's NaN code.
template <class Fmt, int N>
__device__ __forceinline__ uint64_t encode_codes(const float* x, float mult, bool poisoned) {
  using Elem = typename Fmt::Elem;
  static_assert(N % 2 == 0 && N * Elem::bits <= 64, "pairs of codes into one 64-bit word");
  // Pairs never straddle 32 bits: two 32-bit halves with constant shifts instead of 64-bit
  // shifts and ors.
  uint32_t half[2] = {0, 0};
  if constexpr (Elem::bits == 4) {
    // fp4: eight codes per 32-bit word (four for fp32 rows), two per bf16x2 instruction
    // (src/cuda/e2m1_lines.hpp). MX multipliers are powers of two, folded into the encoder's
    // lines; nvfp4's fp32 products are rounded first, as num::encode_element does.
    constexpr int kWord = N < 8 ? N : 8;
#pragma unroll
    for (int q = 0; q < N / kWord; ++q) {
      float v[kWord];
      if constexpr (Fmt::nv) {
#pragma unroll
        for (int j = 0; j < kWord; ++j) v[j] = x[kWord * q + j] * mult;
        half[q] = encode_e2m1(v);
      } else {
#pragma unroll
        for (int j = 0; j < kWord; ++j) v[j] = x[kWord * q + j];
        half[q] = encode_e2m1_pow2(v, mult);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < N; j += 2) {
      const int bit = j * Elem::bits;
      half[bit / 32] |= encode_pair<Elem>(x[j] * mult, x[j + 1] * mult) << (bit % 32);
    }
  }
  return codes_or_nan<Elem, N>(half, poisoned);
}

// MX fp4 of 16-bit inputs whose codes come from their packed words (encode_codes_mxfp4_pairs)
// rather than from fp32 widenings: bf16 always, fp16 up to a multiplier of kFp16PairsMaxPow2.
template <class In, class Fmt>
constexpr bool kMxfp4Pairs =
    (std::is_same<typename In::Plain, Bf16In>::value || std::is_same<typename In::Plain, Fp16In>::value) && Fmt::Elem::bits == 4 && !Fmt::nv;

// encode_codes of N consecutive 16-bit elements of an MX fp4 block given as N / 2 packed pairs
// (element 2k in the low half of pairs[k]), handed to the encoder's lines without widening (fewer
// instructions than widening every element): bf16 words as they are, fp16 words through
// fp16x2_scaled_odd_pair with the multiplier times 2^112. An fp16 block with a larger multiplier
// (amax below about 2^-13) takes the fp32 widenings.
template <class In, class Fmt, int N>
__device__ __forceinline__ uint64_t encode_codes_mxfp4_pairs(const uint32_t* pairs, float mult, bool poisoned) {
  static_assert(kMxfp4Pairs<In, Fmt> && N % 8 == 0 && N <= 16, "MX fp4 of 16-bit inputs, whole words of eight codes");
  constexpr bool kFp16 = std::is_same<typename In::Plain, Fp16In>::value;
  if (kFp16 && !(mult <= kFp16PairsMaxPow2)) {
    float x[N];
#pragma unroll
    for (int k = 0; k < N / 2; ++k) {
      x[2 * k] = In::to_float_for_codes(static_cast<uint16_t>(pairs[k] & 0xFFFFu));
      x[2 * k + 1] = In::to_float_for_codes(static_cast<uint16_t>(pairs[k] >> 16));
    }
    return encode_codes<Fmt, N>(x, mult, poisoned);
  }
  const float slope = kFp16 ? mult * kFp16PairsScale : mult;
  uint32_t half[2] = {0, 0};
#pragma unroll
  for (int q = 0; q < N / 8; ++q) {
    Bf16x2Odd p[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      p[k] = kFp16 ? fp16x2_scaled_odd_pair(pairs[4 * q + k]) : bf16x2_exact_pair(pairs[4 * q + k]);
    half[q] = encode_e2m1_pow2_pairs<4>(p, slope);
  }
  return codes_or_nan<typename Fmt::Elem, N>(half, poisoned);
}

// Stores one colwise block's T::block_bytes bytes at dst (aligned to them when `vec`), or its
// first `bytes` bytes one by one.
template <class T>
__device__ __forceinline__ void store_block(uint8_t* dst, const uint64_t (&words)[T::block_words], bool vec,
                                            int64_t bytes) {
  if (vec) {
    if constexpr (T::block_bytes == 8) {
      *reinterpret_cast<uint2*>(dst) =
          make_uint2(static_cast<uint32_t>(words[0]), static_cast<uint32_t>(words[0] >> 32));
    } else {
#pragma unroll
      for (int q = 0; q < T::block_bytes / 16; ++q) {
        reinterpret_cast<uint4*>(dst)[q] =
            make_uint4(static_cast<uint32_t>(words[2 * q]), static_cast<uint32_t>(words[2 * q] >> 32),
                       static_cast<uint32_t>(words[2 * q + 1]), static_cast<uint32_t>(words[2 * q + 1] >> 32));
      }
    }
  } else {
    // Constant word indices keep `words` in registers (a runtime index would put it in local memory).
#pragma unroll
    for (int i = 0; i < T::block_bytes; ++i) {
      if (i < bytes) dst[i] = static_cast<uint8_t>(words[i / 8] >> (8 * (i % 8)));
    }
  }
}

// Bytes of `n` codes (n even for 4-bit codes, which the API guarantees along the packed dimension).
template <class T>
__device__ __forceinline__ int64_t code_bytes(int64_t n) {
  return n * T::elem_bits / 8;
}

}  // namespace mxq::cuda::kernels::quantize
