// Tuning of the SwiGLU kernels: the path a call takes (one_pass) and the launch shapes of the
// computed input and the elementwise kernels. docs/kernels/swiglu.md gives the reasons.
#pragma once

namespace mxq::cuda::kernels::swiglu {

// ---- Path per call ---------------------------------------------------------------------------------

struct Facts {
  bool half_precision_h = false;   // h is bf16 or fp16
  bool grad_dtype_of_h = false;    // backward: dA has h's dtype (forward: true)
  bool whole_tensor_pass = false;  // nvfp4 without the caller's tensor amax, or an amax output
  bool elements_aligned = false;   // h, dA and the weights aligned to their element size
};

// The quantize kernels compute a (or dh) from h as they read it, with no bf16 copy written and
// read back, unless a pass over the whole tensor must come before the first tile (the tensor
// amax) or the inputs are not the 16-bit, element-aligned ones the computed input reads; then the
// elementwise kernel writes the tensor and the quantize reads it.
constexpr bool one_pass(const Facts& f) {
  return f.half_precision_h && f.grad_dtype_of_h && !f.whole_tensor_pass && f.elements_aligned;
}

// ---- Computed input of the quantize tile kernels (source.cuh) --------------------------------------

// Chunks whose loads go out before the first is computed: two chunks' 32-48 bytes in flight per
// thread fit the tile kernels' register caps (below). The paired input too: four, issued ahead
// pass by pass (spilling under its 128-register cap), ran 5-9 % slower on an H100.
constexpr int kLoadsInFlight = 2;

// CTAs per SM of the tile kernels' launch bounds over the computed input, rowwise alone or with a
// colwise direction: 256 threads each, so a register cap of 65536 / (256 * CTAs) per thread that
// the chunk arithmetic and the tile code share. Rowwise runs faster at 64 registers with a few
// spills than at 80 without; the colwise tile's code spills more, and runs faster at 80. Two CTAs
// (128 registers) leave too few warps.
constexpr int kCtasPerSmRowwise = 4;
constexpr int kCtasPerSmColwise = 3;

// The grouped rows kernel (rowwise alone) with 8-bit codes stages a forward tile's gate and up
// chunks in shared memory with cp.async and computes each chunk from there as its pass group
// lands: the whole tile's loads are in flight at once and hold no registers, where the chunks
// computed from loads into registers keep kLoadsInFlight per thread in flight. Its 64 KB of
// operands leave room for three CTAs per SM. On an H100, same run: mxfp8 0.98-0.99 against
// 0.93 at 131072 rows, 0.85-0.88 against 0.81-0.83 at 16384 rows; nvfp4 lost 1-2 % at 16384 rows
// and gained under 1 % at 131072 rows, where the group tiles stay faster.
constexpr bool rows_stage_operands(int elem_bits) { return elem_bits == 8; }
constexpr int kCtasPerSmStagedRows = 3;

// The backward of concatenated h computes each pair once for both of its gradients where a CTA
// makes the d_gate tile and the d_up tile of the same pairs together (SwigluPairedInput): in both
// directions in one launch, on the 16-byte path, with each half of dh in whole 128-column tiles.
// The second staged tile (80 KB of shared memory in all) leaves room for two CTAs per SM; on an
// H100 the pairs ran 5-14 % faster than the unpaired three CTAs per SM at 131072 and 16384 rows,
// G = 8 (about equal at 16384 rows, G = 64, in runs apart).
struct PairFacts {
  bool concatenated_backward = false;
  bool both_directions = false;  // in one launch: the token groups' directions share their row tiles
  bool vec = false;              // the 16-byte path
  bool halves_in_tiles = false;  // F a multiple of 128
};
constexpr bool pair_halves(const PairFacts& f) {
  return f.concatenated_backward && f.both_directions && f.vec && f.halves_in_tiles;
}
constexpr int kCtasPerSmPaired = 2;

// ---- Elementwise kernels (elementwise.cu) ----------------------------------------------------------

// 256 threads, each kVec consecutive pairs a work item: 16-byte accesses for every dtype.
constexpr int kThreads = 256;
constexpr int kVec = 8;
// A grid dimension's CTAs at most (the y limit); the kernels loop over what is left.
constexpr int kMaxCtas = 65535;
// Rows past the token groups (a kept copy's tail, often empty and counted only on the device):
// CTAs along rows, enough to fill the GPU when the tail is long.
constexpr int kTailRowCtas = 256;

}  // namespace mxq::cuda::kernels::swiglu
