// Which dequantize kernel serves a problem and how many CTAs share a strip of grouped work: pure
// functions of the problem and device facts below. Every constant is a measured choice;
// docs/kernels/dequantize.md gives the measurements behind each.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mxq::cuda::kernels::dequantize {

enum class Kernel {
  per_element,        // kernel.cuh / grouped_kernel.cuh: any shape or alignment
  vector,             // whole aligned octets along the code rows
  vector_straddling,  // grouped colwise: vector, with per-element strips where groups end off octets
};

struct Facts {
  bool colwise = false;
  int64_t K = 0;              // columns of the logical matrix
  int64_t positions = 0;      // colwise octets run along these (plain: M; grouped: the padded rows R)
  bool data_aligned = false;  // the codes' pointer is aligned to an octet's bytes
  bool out_aligned = false;   // the output pointer is aligned to 16 bytes
  bool grouped = false;
  int64_t pad = 0;  // grouped colwise: the groups' padding (0: unpadded)
};

// Vector kernels need octets that never straddle a row (or colwise a code row) and aligned loads
// and 16-byte stores; grouped colwise groups that may end off a multiple of 8 take the
// instantiation that converts those strips element by element (a separate one: the fallback in
// the octet path spilled registers).
constexpr Kernel choose_kernel(const Facts& f) {
  const bool vector = f.K % 8 == 0 && (!f.colwise || f.positions % 8 == 0) && f.data_aligned && f.out_aligned;
  if (!vector) return Kernel::per_element;
  if (f.grouped && f.colwise && (f.pad % 8 != 0 || f.pad == 0)) return Kernel::vector_straddling;
  return Kernel::vector;
}

// ---- Grouped: CTAs per strip --------------------------------------------------------------------

// The per-element grouped kernel: CTAs sharing one strip, column tiles dealt round robin.
constexpr int kGroupedColumnCtas = 8;
// Rowwise, a CTA takes at most this many column tiles of its strip, so that where the strips alone
// fill a round of CTAs one CTA per strip does not run long and leave the last round a tail.
constexpr int64_t kRowTilesPerCta = 8;
// Colwise on slow memory per SM: at least this many CTAs per strip, or this many rounds of CTAs
// (a colwise tile of 128 code rows is long; many short CTAs even out).
constexpr int64_t kColwiseCtasPerStrip = 16;
constexpr int64_t kColwiseRounds = 8;
// Colwise on fast memory per SM (groups/tuning.hpp): the walk weighs more against a tile, so fewer,
// longer CTAs: at least this many per strip, or this many rounds.
constexpr int64_t kFastColwiseCtasPerStrip = 4;
constexpr int64_t kFastColwiseRounds = 4;

// CTAs per strip of the grouped vector kernel; resident: its CTAs resident at once. Rowwise fills
// one round (more rounds leave a tail, and every CTA walks the groups).
constexpr int64_t vector_ctas_per_strip(bool colwise, int64_t strips, int64_t tiles_k, int64_t resident,
                                        bool fast_memory) {
  strips = std::max<int64_t>(strips, 1);
  if (!colwise) return std::max(resident / strips, (tiles_k + kRowTilesPerCta - 1) / kRowTilesPerCta);
  if (fast_memory) return std::max(kFastColwiseCtasPerStrip, (kFastColwiseRounds * resident + strips - 1) / strips);
  return std::max(kColwiseCtasPerStrip, (kColwiseRounds * resident + strips - 1) / strips);
}

// ---- Launch bounds -------------------------------------------------------------------------------

// CTAs per SM of the grouped vector kernel. Colwise: four for 16-bit outputs (64 registers, no
// spills with the compact conversion), three otherwise (fp32 outputs and the straddling fallback
// spill or slow down at four). Rowwise FP4 to 16-bit outputs: four, as resident threads are what
// keeps its 4-byte loads in flight; mxfp8 lost at that bound, so the rest has none.
constexpr int grouped_vector_ctas_per_sm(bool colwise, int elem_bits, int out_bytes, bool may_straddle) {
  if (colwise) return out_bytes == 2 && !may_straddle ? 4 : 3;
  return elem_bits == 4 && out_bytes == 2 ? 4 : 1;
}

// The compact conversion (one or two octets at a time instead of an 8 x 8 block of floats) holds
// registers down; the plain kernels gain from it for nvfp4 only, the grouped ones for every format.
constexpr bool compact_conversion(bool grouped, bool nvfp4) { return grouped || nvfp4; }

}  // namespace mxq::cuda::kernels::dequantize
