// Hooks for the tests and the benchmark, not part of the public API (include/mxq has no such
// call): they force a grouped kernel where the problem could take either, so that both kernels
// can be tested and timed on the same shapes. The library itself never calls the setters.
#pragma once

namespace mxq::cuda::kernels::quantize_grouped {

enum class ColwiseKernel { automatic, windows, tiles };

// Process-wide; automatic (the tuning's choice) until set.
void force_colwise_kernel(ColwiseKernel kernel);
ColwiseKernel forced_colwise_kernel();

// Rowwise alone: group_tiles takes the group tiles wherever the tuning would take input row tiles
// (small grids, and every computed input with 8-bit codes).
enum class RowwiseKernel { automatic, group_tiles };
void force_rowwise_kernel(RowwiseKernel kernel);
RowwiseKernel forced_rowwise_kernel();

}  // namespace mxq::cuda::kernels::quantize_grouped
