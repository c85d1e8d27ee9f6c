// Tuning of the token-group kernels (pad, unpad, the group walks they and the grouped kernels
// share): grid shapes as pure functions of the problem, and the device fact the grouped launchers
// ask for. Every constant is a measured choice; docs/kernels/groups.md gives the measurements.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mxq::cuda::kernels::groups {

// Above this peak HBM bandwidth per SM (GB/s; the H100 has 25, the H200 36) a CTA's fixed costs,
// the walk over the groups above all, weigh more against its tiles: the grouped launchers take
// fewer, longer CTAs there.
constexpr int64_t kFastMemoryGbpsPerSm = 30;

// Up to this many groups one warp stages the whole chunk with shuffle scans: one barrier before
// the body instead of the block scans' five, which every CTA pays before its first copy.
constexpr int kWarpChunkGroups = 64;

// Row copies: accesses per thread issued before the first store, enough loads in flight per SM to
// saturate HBM at 1024 resident threads (8 would spill at their 64 registers).
constexpr int kRowCopyUnroll = 4;

// pad / unpad: 512 threads of 2 group items each, two CTAs per SM (64 registers, no spills).
constexpr int kPadThreads = 512, kPadItems = 2, kPadCtasPerSm = 2;
// Output bytes per CTA: small ranges over many waves let the scheduler hand more to the SMs that
// finish first; smaller ranges lose again, as every CTA walks the groups before it copies.
constexpr int64_t kPadCtaBytes = 64 << 10;
// Most waves of resident CTAs, divided by the chunks of groups each CTA walks.
constexpr int64_t kPadMaxWaves = 64;

struct PadRanges {
  int64_t rows_per_cta;  // at least: range_grid evens them out
  int64_t max_waves;
};

// The ranges of pad / unpad: about kPadCtaBytes of output rows per CTA, in fewer waves when there
// are many groups to walk.
constexpr PadRanges pad_ranges(int64_t row_bytes, int64_t groups) {
  const int64_t chunk = int64_t{kPadThreads} * kPadItems;
  const int64_t chunks = (groups + chunk - 1) / chunk;
  return {std::max<int64_t>(1, kPadCtaBytes / std::max<int64_t>(1, row_bytes)),
          std::max<int64_t>(1, kPadMaxWaves / std::max<int64_t>(1, chunks))};
}

}  // namespace mxq::cuda::kernels::groups
