// Tuning of the plain quantize tile kernel: its CTAs per SM (launch bounds), the tile order of
// colwise alone, and the kernel variant chosen per call (choose_kernel). Every constant is a
// measured choice; docs/kernels/quantize.md gives the measurements behind each.
#pragma once
#include <cstdint>

namespace mxq::cuda::kernels::quantize {

// ---- Launch bounds (CTAs per SM) ------------------------------------------------------------------

// 16-bit input: four CTAs (32 KB of staged tile each) keep enough loads in flight per SM.
constexpr int kCtasPerSm16BitInput = 4;
// fp32 input: a register cap of two CTAs per SM; its 64 KB tiles fit no more than three anyway.
constexpr int kCtasPerSm32BitInput = 2;
// bf16 to FP4 (colwise or both; rowwise nvfp4) fits 48 registers without notable spills, so a fifth
// CTA per SM adds loads in flight; fp16 and 8-bit codes would spill or run out of shared memory.
constexpr int kCtasPerSmBf16Fp4 = 5;

// CTAs per SM of a tile kernel's launch bounds; grouped: the grouped kernel (which keeps the 16-bit
// count: its FP4 code would spill under five).
constexpr int tile_ctas_per_sm(int input_bytes, bool bf16, int elem_bits, int block, bool col, bool grouped) {
  const int base = input_bytes == 2 ? kCtasPerSm16BitInput : kCtasPerSm32BitInput;
  return !grouped && bf16 && elem_bits == 4 && (col || block == 16) ? kCtasPerSmBf16Fp4 : base;
}

// ---- Tile order ------------------------------------------------------------------------------------

// Colwise alone takes column tiles in bands whose transposed output rows hold this many bytes per
// row tile (2 tiles of 8-bit codes, 4 of FP4): long runs of each output row are written together.
// Both directions and rowwise keep row-major order, where the rowwise output rows are long too.
constexpr int kColwiseBandBytes = 256;

// ---- Tensor amax (tensor_scale.cu) ----------------------------------------------------------------

// 256 threads with 4 16-byte loads in flight each, and 8 CTAs per SM (2048 threads): enough bytes in
// flight per SM to stream the input once at full bandwidth.
constexpr int kAmaxThreads = 256;
constexpr int kAmaxUnroll = 4;
constexpr int kAmaxCtasPerSm = 8;

// ---- Kernel variant per call -----------------------------------------------------------------------

// nvfp4 with the caller's amax: the tile kernel derives the tensor scales itself (no separate kernel
// and its launch) up to this many tiles; on larger tensors the separate kernel is cheaper overall.
constexpr int64_t kDeriveTensorScalesTiles = 6144;  // about 9 rounds of 5 CTAs on 132 SMs

struct Facts {
  bool nvfp4 = false;
  int64_t tiles = 0;                      // batch x row tiles x column tiles
  bool scales_from_given_amax = false;    // nvfp4: the tile kernel could derive the tensor scales (tensor_scale.hpp)
  bool amax_out_with_given_amax = false;  // nvfp4: out.amax asked for while the caller gives amax
};

struct Choice {
  bool derive_tensor_scales = false;  // the tile kernel derives s_enc / s_dec (TileOptions)
  bool amax_in_tiles = false;         // the tile kernel folds out.amax in (no second read of the input)
};

constexpr Choice choose_kernel(const Facts& f) {
  Choice c;
  c.derive_tensor_scales = f.tiles > 0 && f.tiles <= kDeriveTensorScalesTiles && f.scales_from_given_amax;
  c.amax_in_tiles = f.nvfp4 && f.tiles > 0 && f.amax_out_with_given_amax;
  return c;
}

}  // namespace mxq::cuda::kernels::quantize
