// Which grouped quantize kernel serves a problem, and how its CTAs take the row tiles: one pure
// function (choose_kernel) of the problem and device facts below. Every constant is a measured
// threshold; docs/kernels/quantize_grouped.md gives the measurements behind each.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mxq::cuda::kernels::quantize_grouped {

// ---- Kernel geometry that was tuned -------------------------------------------------------------

// Most row tiles per CTA in strips of the grid's bound: longer strips left SMs idle in the last
// rounds of CTAs.
constexpr int kMaxStrip = 2;
// Entries of the walk's per-tile storage (the most row tiles a CTA takes): storage for two tiles
// made the colwise and both kernels markedly slower for an unknown reason, so it keeps eight.
constexpr int kStripTiles = 8;
// Window geometry of the colwise windows kernel: 112 owned block starts in 144 staged rows fit four
// CTAs per SM in 64 registers without spills, which beat larger windows at three CTAs per SM.
constexpr int kWindowOwnedRows = 112;
constexpr int kWindowStagedRows = 144;
// One group's blocks start on multiples of 32, so a plain tile's 128 rows hold all of a window's
// blocks with no extra rows.
constexpr int kOneGroupWindowRows = 128;
// The windows kernel's launch bounds (CTAs per SM).
constexpr int kWindowCtasPerSm = 4;

// ---- Thresholds of the choice, in rounds of CTAs (grid CTAs / resident CTA slots) ----------------

// Rowwise alone: tiles of input rows (whichever groups they hold) beat group-local tiles up to this
// many rounds; beyond, the FP4 formats lose to the strips' fewer partial tiles.
constexpr int64_t kRowTileRounds = 16;
// Both directions take one tile per CTA (no strips) up to this many rounds on slow memory per SM:
// a CTA's short start path beats amortising the walk while the grid is small.
constexpr int64_t kOneTileRounds = 16;
// The same bound on fast memory per SM, where the one-tile start path gains for longer.
constexpr int64_t kFastBothOneTileRounds = 24;
// FP4 colwise alone with few groups keeps one tile per CTA only up to this many rounds: beyond, the
// strips' walk amortisation wins.
constexpr int64_t kFp4ColwiseOneTileRounds = 4;
// Many groups on fast memory: strips stride over the typical row tiles (not the grid's bound, which
// counts a partial tile per group) from this many rounds on; with fewer rounds the third tiles of
// some CTAs form a tail.
constexpr int64_t kTypicalStrideRounds = 3;
// Both directions with 8-bit codes on one tile per CTA start the rowwise passes as their copies
// land up to this many rounds; on larger grids the whole-tile wait is as fast or faster.
constexpr int64_t kBothLandRounds = 8;
// Colwise windows: groups of at most this many rows on average put several group boundaries in a
// tile, where the windows' block search costs less than the tiles' partial tile per group.
constexpr int64_t kWindowsMaxMeanRows = 512;
// Colwise windows with longer groups, one group or slow memory per SM: up to this many rounds the
// windows' loads before the walk still beat the tiles.
constexpr int64_t kWindowsSlowMemoryRounds = 16;

// Colwise alone stages its strips' tiles with the 256-byte L2 prefetch hint: it helped the colwise
// strips only (the one-tile path, both directions and the plain kernel gained nothing).
constexpr bool strips_fetch256(bool row, bool col) { return col && !row; }

// ---- The choice ----------------------------------------------------------------------------------

enum class Kernel {
  input_row_tiles,    // rows_kernel.cuh: rowwise alone, tiles of input rows
  windows,            // col_windows_kernel.cuh, kWindowOwnedRows windows
  one_group_windows,  // col_windows_kernel.cuh, kOneGroupWindowRows windows (G = 1)
  group_tiles,        // kernel.cuh: strips of group-local tiles
};

struct Facts {
  bool row = false, col = false;  // the directions this launch serves
  int elem_bits = 8;              // code width: 8 or 4
  bool windows_types = false;     // 16-bit input, 32-element blocks, one-byte codes
  bool windows_layout = false;    // colwise groups padded to whole blocks, few enough for one warp's walk, K > 0
  bool computed = false;          // the input is computed as it is read (swiglu/source.cuh)
  int64_t groups = 0;             // G
  int64_t rows = 0;               // input rows M
  int64_t input_row_tiles = 1;    // max(ceil(M / 128), 1)
  int64_t tile_rows = 0;          // the grid's bound of group row tiles: ceil(rows / 128) + G
  int64_t typical_rows = 0;       // the row tiles of one group: ceil(M / 128) + 1
  int64_t tiles_k = 1;            // column tiles
  // Device: the SMs, the tile kernel's resident CTA slots (SMs x its CTAs per SM), and whether the
  // peak memory bandwidth per SM is above groups/tuning.hpp's kFastMemoryGbpsPerSm.
  int64_t sms = 0, slots = 0;
  bool fast_memory = false;
  // Tests and bench only: windows or tiles where the problem can take either.
  bool force_windows = false, force_tiles = false;
  // Tests only: group tiles for rowwise alone where input row tiles would serve.
  bool force_row_group_tiles = false;
};

struct Choice {
  Kernel kernel = Kernel::group_tiles;
  int strip_tiles = 1;       // group_tiles: row tiles per CTA
  int64_t strip_stride = 1;  // group_tiles: row tiles between a CTA's tiles (the CTAs per column tile)
  bool rows_land = false;    // group_tiles, both directions: rowwise passes start as copies land
};

constexpr int64_t window_count(int64_t rows, int owned) {
  const int64_t n = (rows + owned - 1) / owned;
  return n > 1 ? n : 1;
}

constexpr bool takes_windows(const Facts& f) {
  if (!(f.col && !f.row && f.windows_types && f.windows_layout)) return false;
  if (f.force_windows) return true;
  if (f.force_tiles) return false;
  const bool one_group = f.groups == 1;
  const int64_t windows = window_count(f.rows, one_group ? kOneGroupWindowRows : kWindowOwnedRows);
  return f.rows <= kWindowsMaxMeanRows * f.groups ||
         ((one_group || !f.fast_memory) && windows * f.tiles_k <= kWindowsSlowMemoryRounds * f.sms * kWindowCtasPerSm);
}

// The groups' partial tiles add under a quarter to one group's row tiles.
constexpr bool groups_add_few_tiles(const Facts& f) { return 4 * f.tile_rows < 5 * f.typical_rows; }

// Strips of the group-local tiles: one tile per CTA where the groups add little to one group's
// tiles (few groups) or, for both directions, while the grid is small; else strips of up to
// kMaxStrip tiles, strided over the typical tiles where many groups inflate the bound.
constexpr Choice choose_strips(const Facts& f) {
  const bool both = f.row && f.col;
  const bool fp4_colwise = f.col && !f.row && f.elem_bits == 4;
  const int64_t tiles = f.tile_rows * f.tiles_k;
  const bool few_groups = groups_add_few_tiles(f);
  const bool one_tile = (few_groups && !(fp4_colwise && tiles > kFp4ColwiseOneTileRounds * f.slots)) ||
                        (both && tiles <= (f.fast_memory ? kFastBothOneTileRounds : kOneTileRounds) * f.slots);
  Choice c;
  c.strip_tiles = one_tile ? 1 : static_cast<int>(std::clamp(tiles / f.slots, int64_t{1}, int64_t{kMaxStrip}));
  c.strip_stride = (f.tile_rows + c.strip_tiles - 1) / c.strip_tiles;
  if (!one_tile && f.fast_memory && !few_groups && c.strip_stride * f.tiles_k >= kTypicalStrideRounds * f.slots) {
    const int64_t typical =
        std::max((f.typical_rows + c.strip_tiles - 1) / c.strip_tiles, (f.tile_rows + kStripTiles - 1) / kStripTiles);
    c.strip_tiles = static_cast<int>((f.tile_rows + typical - 1) / typical);
    c.strip_stride = typical;
  }
  c.rows_land =
      both && f.elem_bits == 8 && c.strip_tiles == 1 && c.strip_stride * f.tiles_k <= kBothLandRounds * f.slots;
  return c;
}

// Rowwise alone on input row tiles: up to kRowTileRounds rounds, or at any size where the chunk
// arithmetic of a computed input bounds the kernel and the codes are 8-bit. FP4 codes of a computed
// input take the group tiles where the groups add few tiles: over SwiGLU (H100, same run) these ran
// 1-8 % faster than the row tiles with 8 groups at 16384 and 131072 rows and 64 at 131072, and 7 %
// slower with 64 groups at 16384 rows, where the groups add half the tiles.
constexpr bool takes_input_row_tiles(const Facts& f) {
  if (!(f.row && !f.col) || f.force_row_group_tiles) return false;
  if (f.computed) {
    if (f.elem_bits == 8) return true;
    if (groups_add_few_tiles(f)) return false;
  }
  return f.input_row_tiles * f.tiles_k <= kRowTileRounds * f.slots;
}

constexpr Choice choose_kernel(const Facts& f) {
  if (takes_input_row_tiles(f)) return Choice{Kernel::input_row_tiles};
  if (takes_windows(f)) return Choice{f.groups == 1 ? Kernel::one_group_windows : Kernel::windows};
  Choice c = choose_strips(f);
  c.kernel = Kernel::group_tiles;
  return c;
}

}  // namespace mxq::cuda::kernels::quantize_grouped
