// mxq::cuda::quantize_grouped: fills the GroupedProblem from validated arguments and launches the
// grouped tile kernel for (input dtype, format, rule, directions) on the caller's stream.
#include "launcher.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "../groups/launch_shape.cuh"
#include "../quantize/dispatch.cuh"
#include "../quantize/tensor_scale.hpp"
#include "col_windows_kernel.cuh"
#include "kernel.cuh"
#include "rows_kernel.cuh"

namespace mxq::cuda {
namespace {

using qgroup::GroupedProblem;

// Both directions share the row tiles of each group only when their padded sizes need the same
// number of 128-row tiles: both pad alike, or the one alignment divides 128.
bool directions_share_tiles(const QuantizeGroups& g) {
  return g.pad_rowwise == g.pad_colwise || g.pad_rowwise + g.pad_colwise <= qgroup::kTileRows;
}

GroupedProblem make_problem(const QuantizeArgs& a, const QuantizeSizes& sizes) {
  const QuantizeGroups& g = a.groups;
  const int64_t block = num::format_block(a.params.format);
  const int64_t G = g.groups.count;
  const int64_t Mc = has_colwise(a.params.direction) ? sizes.col_data_cols : 0;
  GroupedProblem p;
  // Linear colwise scales of groups along K: ceil(Mc / block) + G columns per k row.
  p.tile = quant::make_tile_problem(a, Mc, num::ceil_div(Mc, block) + G);
  p.walk.ends = g.groups.ends;
  p.walk.G = static_cast<int32_t>(G);
  // Rows past 2^31 - 1 lie past every int32 end offset.
  p.walk.M = static_cast<int32_t>(std::min<int64_t>(a.input.rows, std::numeric_limits<int32_t>::max()));
  const int32_t pad = g.pad_rowwise > 0 ? g.pad_rowwise : g.pad_colwise;  // a power of two, or 0
  p.walk.pad_mask = pad > 0 ? pad - 1 : 0;
  p.walk.block_shift = block == 16 ? 4 : 5;
  p.walk.padded_starts = a.out.padded_starts;
  p.walk.padded_ends = a.out.padded_ends;
  p.row_padded = g.pad_rowwise > 0;
  p.col_padded = g.pad_colwise > 0;
  p.Mr = has_rowwise(a.params.direction) ? sizes.row_data_rows : 0;
  p.row_scale_bytes = sizes.row_scale_bytes;
  p.col_scale_bytes = sizes.col_scale_bytes;
  p.k_rows_padded = num::blocked_rows(a.input.cols);
  // At least one column tile, so that the offsets and the zero bytes are written when K is 0.
  p.tiles_k = a.input.cols > 0 ? num::ceil_div(a.input.cols, qgroup::kTileCols) : 1;
  return p;
}

// Row tiles per CTA: two (kMaxStrip) once the grid has at least two tiles per CTA slot, else one.
// A CTA walks the offsets once and then runs its tiles one after another, so a strip amortises the
// walk. With strips of up to eight tiles, ncu showed SMs idling on latency when fewer than about
// four rounds of CTAs were left (16384 x 2048, G = 8, colwise: 5 tiles per CTA in one round kept
// DRAM 31 % busy against 65 % for the plain kernel's four rounds); with two-tile strips, H200, the
// sum of the grouped times at 16384 tokens (dims 1536, 2048, 7168; G = 8, 16, 64; two runs each)
// was 2243 us when strips needed at least one round of CTAs against 2266 us at four rounds (both
// directions 0.82 -> 0.85-0.87 at dims 1536 and 2048, G = 64 rowwise 0.80 -> 0.85; but rowwise at
// 16384 x 1536, G = 8, 0.95 -> 0.91).
// One tile per CTA (the one-tile kernel, kernel.cuh) wherever the groups add less than a quarter
// to the row tiles of one group (few_groups: G <= 16 at 16384 tokens, G <= 64 at 131072), on
// every GPU and at any number of rounds (FP4 colwise alone: up to kFp4ColwiseOneTileRounds): H200,
// mxfp8, same run against session 21's rule (two-tile strips there), 16384 and 131072 tokens,
// dims 1536-7168: colwise 1.1-6.8 % and both 0.7-7.0 % faster, no case slower. Both directions
// also take one tile per CTA with more groups on slow memory (kFastMemoryGbpsPerSm,
// launch_shape.cuh) up to kOneTileRounds rounds of CTAs: H100, same run, 16384 tokens, G = 64,
// one-tile CTAs through the strips kernel against two-tile strips:
// 0.818 -> 0.853 at dim 1536, 0.840 -> 0.867 at dim 2048, 0.9 % slower at dim 7168 (20 rounds,
// past this limit). With more groups colwise alone keeps the strips (one tile lost 3.5 % at
// G = 64, dims 5120 / 7168; sessions 9 and 15), and so does both directions on fast memory
// beyond kFastBothOneTileRounds.
constexpr int64_t kOneTileRounds = 16;
// On fast memory both directions with many groups take one tile per CTA up to 24 rounds: H200,
// same run, 16384 tokens, G = 64, the one-tile kernel against the strips: 7.6 % faster at dim
// 1536 (4.7 rounds, 0.717 -> 0.779 of the copy), 4.0 % at dim 2048 (6.3 rounds); the one-tile
// path was 2-2.5 % slower at dims 5120 / 7168 (16-22 rounds) until partial tiles skipped their
// empty blocks (quantize_col_pairs), then 2.4-2.5 % faster there (0.808 -> 0.836, 0.815 -> 0.830;
// 15 and 21 rounds) and 4.8 % at 32768 x 2048 (10 rounds; 0.840 -> 0.878). Not measured past 21
// rounds.
constexpr int64_t kFastBothOneTileRounds = 24;
// FP4 colwise alone keeps the strips beyond a few rounds of CTAs: H200, same run, 8 groups, one
// tile per CTA against two-tile strips: 3.5-6 % faster at 16384 x 1536 (3 rounds), 0.5-1.3 %
// slower at 16384 x 7168 (15 rounds), 1.3-4.4 % slower at 65536 and 131072 tokens (mxfp8 colwise
// and FP4 both directions gain from one tile at every size).
constexpr int64_t kFp4ColwiseOneTileRounds = 4;

// Strides from the typical row tiles, on fast memory, where many groups inflate the grid's bound
// (at least 5/4 of ceil(rows / 128) + 1) and the strips take at least kTypicalStrideRounds rounds of
// CTAs: the bound counts a partial tile for every group and the most padding, 208 row tiles at
// 16384 tokens and G = 64 where the bench's jagged groups need about 156, so strips of the bound
// make a third more CTAs than tiles need, each paying the walk and the prologue. With the stride of
// the typical tiles a CTA takes up to kStripTiles, most of them past the last group (a share of the
// zero bytes). H200, 16384 tokens, G = 64, same run against the bound's strips, three repetitions:
// colwise +3.1 / +3.6 % at dims 5120 / 7168 (0.812 -> 0.837, 0.832 -> 0.860), both +5.2 / +3.6 /
// +3.9 % at dims 2048 / 5120 / 7168 (0.729 -> 0.759, 0.752 -> 0.778, 0.754 -> 0.785), colwise at
// dim 2048 -0.6 %. An earlier run applied it everywhere; what the rules exclude measured: dim
// 1536 (2.4 rounds: the CTAs with a third tile made a tail, -4 to -7 % at G = 8-64), G <= 16 (-1.5
// to +2.8 %), 131072 tokens (-0.4 to +1.4 %) and the H100 (colwise -0.3 to -3.4 %, both -0.9 to
// +1.1 %).
constexpr int64_t kTypicalStrideRounds = 3;

// Both directions with 8-bit codes, one tile per CTA, up to this many rounds of CTAs: the rowwise
// passes start as the thread's own copies land (quantize_tile's kRowsLand; FP4 always does).
// Same run against the whole-tile wait, one-tile kernel, mxfp8: 16384 tokens, dims 1536 / 2048
// (3-6 rounds) H200 0.5-2.8 % faster (G = 64 at dim 1536: 38.61 -> 37.55 us), H100 -0.8 to +0.1 %;
// dims 5120 / 7168 (10-15 rounds) within +-0.6 %; 131072 tokens (23+ rounds) on the H200 up to
// 0.8 % slower, as the plain kernel was (perf notes, session 18).
constexpr int64_t kBothLandRounds = 8;

struct Strips {
  int tiles;       // row tiles per CTA, at most qgroup::kStripTiles
  int64_t stride;  // row tiles between a CTA's tiles: the CTAs per column tile
};

// tile_rows: the grid's bound of row tiles; typical_rows: those of one group, ceil(rows / 128) + 1.
Strips choose_strips(bool both, bool fp4_colwise, bool fast_memory, int64_t tile_rows, int64_t typical_rows,
                     int64_t tiles_k, int64_t slots) {
  const int64_t tiles = tile_rows * tiles_k;
  const bool few_groups = 4 * tile_rows < 5 * typical_rows;
  const bool one_tile = (few_groups && !(fp4_colwise && tiles > kFp4ColwiseOneTileRounds * slots)) ||
                        (both && tiles <= (fast_memory ? kFastBothOneTileRounds : kOneTileRounds) * slots);
  const int strip = one_tile ? 1 : static_cast<int>(std::clamp(tiles / slots, int64_t{1}, int64_t{qgroup::kMaxStrip}));
  const int64_t stride = num::ceil_div(tile_rows, int64_t{strip});
  if (!one_tile && fast_memory && !few_groups && stride * tiles_k >= kTypicalStrideRounds * slots) {
    const int64_t typical = std::max(num::ceil_div(typical_rows, int64_t{strip}),
                                     num::ceil_div(tile_rows, int64_t{qgroup::kStripTiles}));
    return {static_cast<int>(num::ceil_div(tile_rows, typical)), typical};
  }
  return {strip, stride};
}

// The grid of one launch for the directions ROW / COL of p: the rows of the tile bound come from
// the directions served; the groups' tiles from their padded size when a served direction pads.
// Fails when even single-tile strips would need more than 2^31 - 1 CTAs.
Status shape_launch(bool row, bool col, GroupedProblem* p) {
  const int64_t rows = (row && col) ? std::max(p->Mr, p->tile.Mc) : row ? p->Mr : p->tile.Mc;
  p->walk.tiles_from_padded = (row && p->row_padded) || (col && p->col_padded);
  p->walk.q_from_padded = p->col_padded;
  p->tile_rows = num::ceil_div(rows, int64_t{qgroup::kTileRows}) + p->walk.G;
  if (p->tile_rows * p->tiles_k > 0x7FFFFFFF) return Status::error(Code::unsupported, "quantize: more than 2^31 - 1 tiles");
  return {};
}

// Rowwise only, up to this many rounds of CTAs, tiles of the input rows whichever groups they
// hold (rows_kernel.cuh); beyond it, the strips of group-local tiles. H200, bf16, G = 8, same run:
// at 16384 tokens the row tiles were faster for every dim and format (mxfp8 G = 64: 92.5 against
// 108 us at dim 7168; mxfp4 25.4 against 27.6 us at dim 1536); at 131072 x (2048 | 7168) (31 and
// 109 rounds) mxfp4 and nvfp4 were 2-6 % slower, mxfp8 within 1 %.
constexpr int64_t kRowTileRounds = 16;

template <class In, class Fmt, ScaleRule kRule>
Status launch_rows(const GroupedProblem& p, int64_t ctas, cudaStream_t stream) {
  auto kernel = qgroup::grouped_rows_kernel<In, Fmt, kRule>;
  const size_t smem = static_cast<size_t>(quant::TileTraits<In, Fmt>::staged_tile_bytes);
  const Status st = quant::allow_dynamic_smem(kernel, smem);
  if (!st.ok()) return st;
  kernel<<<static_cast<unsigned>(ctas), quant::kThreads, smem, stream>>>(p);
  return launch_status("quantize");
}

// Colwise alone, groups along K padded to whole 32-element blocks of one-byte codes, 16-bit input,
// up to kWarpWalkGroups groups and many small groups (on average at most kWindowsMaxMeanRows rows
// each): windows of input rows (col_windows_kernel.cuh). The strips pay a partial tile per group,
// the windows a block search and byte-wise scale stores per block. Against the tiles, same run,
// three repetitions, mxfp8, 16384 tokens, G = 64 (256 rows per group): H200 7.1 / 9.2 / 4.1 / 2.4 %
// faster at dims 1536 / 2048 / 5120 / 7168, H100 5.2 / 4.2 / 1.7 / 1.1 %; at 1024 or more rows per
// group (16384 tokens, G <= 16; 131072 tokens, G <= 64) the H200 ran up to 5.2 % slower.
// MXQ_GROUPED_COLWISE=windows or =tiles forces the choice for the cases that can take either
// (tests, A/B runs).
constexpr int64_t kWindowsMaxMeanRows = 512;
// On slow memory per SM (kFastMemoryGbpsPerSm: the H100) the windows also win with long groups
// while their grid is a few rounds of CTAs. H100, same run, three repetitions, against the tiles:
// 16384 tokens, G = 1 / 8 / 16, dims 1536 / 2048 0.2-1.8 % faster (16384 x 2048, G = 8: 0.892 ->
// 0.902), dims 5120 / 7168 within ±0.5 % (up to 15.6 rounds); 131072 x 2048 / 7168 (35 and 124
// rounds) 0.1-0.4 % slower.
constexpr int64_t kWindowsSlowMemoryRounds = 16;

// One group takes windows of a plain tile's rows (qgroup::OneGroupWindows) while they make at most
// kWindowsSlowMemoryRounds rounds of CTAs, on every GPU: they load before the walk, as the plain
// kernel does, and one group never has a block that runs past its window. Same run, three
// repetitions, 16384 tokens, G = 1, against the tiles, dims 1536 / 2048 / 5120 / 7168: H200
// 0.839 / 0.856 / 0.927 / 0.947 -> 0.870 / 0.890 / 0.939 / 0.954 of the copy, H100 0.864 / 0.904 /
// 0.931 / 0.945 -> 0.904 / 0.927 / 0.944 / 0.953 (the 112-row windows: 0.875 / 0.913 / 0.933 /
// 0.943); at 131072 tokens (32 rounds and more) the tiles are as fast.
bool one_group(const GroupedProblem& p) { return p.walk.G == 1; }

// f(shape) with the window geometry of p (a qgroup::WindowShape): the one place that picks it.
template <class F>
auto with_window_shape(const GroupedProblem& p, F&& f) {
  return one_group(p) ? f(qgroup::OneGroupWindows{}) : f(qgroup::GroupWindows{});
}

template <class W>
int64_t window_count(const GroupedProblem& p) {
  return std::max(num::ceil_div(p.tile.M, int64_t{W::owned}), int64_t{1});
}

enum class ColwiseKernel { automatic, windows, tiles };

ColwiseKernel forced_colwise_kernel() {
  static const ColwiseKernel forced = [] {
    const char* e = std::getenv("MXQ_GROUPED_COLWISE");
    if (e != nullptr && std::string(e) == "windows") return ColwiseKernel::windows;
    if (e != nullptr && std::string(e) == "tiles") return ColwiseKernel::tiles;
    return ColwiseKernel::automatic;
  }();
  return forced;
}

template <class T>
constexpr bool kWindowsTypes = T::block == 32 && T::elem_bits == 8 && sizeof(typename T::Raw) == 2;

// sms: the device's SMs.
bool takes_windows(const GroupedProblem& p, int sms) {
  if (!(p.col_padded && p.walk.pad_mask >= 31 && p.walk.G <= qgroup::kWarpWalkGroups && p.tile.K > 0)) return false;
  switch (forced_colwise_kernel()) {
    case ColwiseKernel::windows: return true;
    case ColwiseKernel::tiles: return false;
    default:
      return p.tile.M <= kWindowsMaxMeanRows * p.walk.G ||
             ((one_group(p) || !fast_memory_per_sm()) && with_window_shape(p, [&](auto shape) {
                return window_count<decltype(shape)>(p) * p.tiles_k <=
                       kWindowsSlowMemoryRounds * sms * qgroup::kWindowCtasPerSm;
              }));
  }
}

template <class In, class Fmt, ScaleRule kRule, class W>
Status launch_windows(GroupedProblem p, cudaStream_t stream) {
  using T = quant::TileTraits<In, Fmt>;
  const int64_t windows = window_count<W>(p);
  p.tile_rows = windows;
  p.order = quant::TileOrder(static_cast<uint32_t>(windows), static_cast<uint32_t>(p.tiles_k),
                             quant::tile_order_band<T, false, true>(p.tiles_k));
  auto kernel = qgroup::grouped_col_windows_kernel<In, Fmt, kRule, W>;
  const size_t smem = qgroup::window_dynamic_smem<T, W>();
  const Status st = quant::allow_dynamic_smem(kernel, smem);
  if (!st.ok()) return st;
  kernel<<<static_cast<unsigned>(windows * p.tiles_k), quant::kThreads, smem, stream>>>(p);
  return launch_status("quantize");
}

template <class In, class Fmt, bool ROW, bool COL, ScaleRule kRule>
Status launch(GroupedProblem p, cudaStream_t stream) {
  using T = quant::TileTraits<In, Fmt>;
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return cuda_status("quantize", e);
  const int64_t slots = int64_t{sms} * T::min_ctas_per_sm;
  if constexpr (ROW && !COL) {
    // The rows kernel's tiles of input rows (p.tile_rows counts the groups' row tiles instead).
    const int64_t input_row_tiles = std::max(p.tile.tiles_m, int64_t{1});
    if (input_row_tiles * p.tiles_k <= kRowTileRounds * slots) {
      p.order = quant::TileOrder(static_cast<uint32_t>(input_row_tiles), static_cast<uint32_t>(p.tiles_k),
                                 static_cast<uint32_t>(p.tiles_k));
      return launch_rows<In, Fmt, kRule>(p, input_row_tiles * p.tiles_k, stream);
    }
  }
  if constexpr (COL && !ROW && kWindowsTypes<T>) {
    if (takes_windows(p, sms)) {
      return with_window_shape(p, [&](auto shape) {
        return launch_windows<In, Fmt, kRule, decltype(shape)>(p, stream);
      });
    }
  }
  const Strips strips = choose_strips(ROW && COL, COL && !ROW && T::elem_bits == 4, fast_memory_per_sm(), p.tile_rows,
                                      num::ceil_div(p.tile.M, int64_t{qgroup::kTileRows}) + 1, p.tiles_k, slots);
  p.strip_tiles = strips.tiles;
  p.strip_stride = strips.stride;
  p.order = quant::TileOrder(static_cast<uint32_t>(p.strip_stride), static_cast<uint32_t>(p.tiles_k),
                             quant::tile_order_band<T, ROW, COL>(p.tiles_k));
  const int64_t ctas = p.strip_stride * p.tiles_k;
  auto kernel = p.strip_tiles == 1 ? qgroup::grouped_quantize_kernel<In, Fmt, ROW, COL, kRule, true>
                                    : qgroup::grouped_quantize_kernel<In, Fmt, ROW, COL, kRule, false>;
  if constexpr (ROW && COL && T::elem_bits == 8) {
    if (p.strip_tiles == 1 && ctas <= kBothLandRounds * slots) {
      kernel = qgroup::grouped_quantize_kernel<In, Fmt, ROW, COL, kRule, true, true>;
    }
  }
  const size_t smem = quant::tile_dynamic_smem<T, COL>();
  const Status st = quant::allow_dynamic_smem(kernel, smem);
  if (!st.ok()) return st;
  kernel<<<static_cast<unsigned>(ctas), quant::kThreads, smem, stream>>>(p);
  return launch_status("quantize");
}

}  // namespace

Status quantize_grouped(const QuantizeArgs& args, const QuantizeSizes& sizes) {
  const Direction d = args.params.direction;
  // A padding alignment above 128 on one direction only: the directions need different row tiles
  // per group, one launch each (the first writes the padded offsets).
  const bool split = d == Direction::both && !directions_share_tiles(args.groups);
  GroupedProblem first = make_problem(args, sizes), second = first;
  const Status shaped = shape_launch(has_rowwise(d), has_colwise(d) && !split, &first);
  if (!shaped.ok()) return shaped;
  if (split) {
    second.walk.padded_starts = second.walk.padded_ends = nullptr;
    const Status second_shaped = shape_launch(false, true, &second);
    if (!second_shaped.ok()) return second_shaped;
  }
  const cudaStream_t stream = as_stream(args.stream);
  const Status scales = write_tensor_scales_and_amax(args, stream);
  if (!scales.ok()) return scales;
  return quant::dispatch_tile_types(args.input.dtype, args.params.format, args.params.rule,
                                    [&](auto in, auto fmt, auto rule) {
    using In = decltype(in);
    using Fmt = decltype(fmt);
    constexpr ScaleRule kRule = decltype(rule)::value;
    if (split) {
      const Status s = launch<In, Fmt, true, false, kRule>(first, stream);
      return s.ok() ? launch<In, Fmt, false, true, kRule>(second, stream) : s;
    }
    return quant::dispatch_directions(d, [&](auto row, auto col) {
      return launch<In, Fmt, decltype(row)::value, decltype(col)::value, kRule>(first, stream);
    });
  });
}

}  // namespace mxq::cuda
