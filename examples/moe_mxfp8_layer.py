"""An MoE expert layer (grouped GEMM over token groups) trained in MXFP8, with mxq doing every
quantization and padding step.

    y[tokens of expert e] = x[tokens of e] @ W[e]^T      x: (M, K) tokens sorted by expert,
                                                          W: (E, N, K), offs: (E,) int32 group ends

Forward : x quantized both ways in one read (rowwise for y, colwise kept for dW), per token group,
          each group padded to 32 rows; W (3-D) both ways (rowwise for y, colwise for dX).
Backward: dy quantized both ways in one read with per-group padding: rowwise (scales grouped
          along M) for dX = dy @ W[e], colwise (K-group scales: blocks along tokens never cross a
          group) for dW[e] = dy[e]^T @ x[e].
Scales use the blocked 128x4 layout (per group where grouped), as block-scaled tensor cores read
them. Hopper has no block-scaled tensor cores, so the GEMMs are emulated: mxq.dequantize back to
bf16, then torch._grouped_mm (a loop of matmuls where that op is missing or refuses the operands).
The result is checked against a bf16 reference (SQNR of y, dX, dW) and timed next to the bf16
layer.

    pip install --no-build-isolation ./python && python3 examples/moe_mxfp8_layer.py
"""
import argparse
import sys
import time

import torch

import mxq

ALIGN = 32  # token-group padding: every group starts on a 32-row (one MX block) boundary
MIN_SQNR_DB = 25.0  # MXFP8 e4m3 on both operands gives about 28.5 dB on normal data

_grouped_mm_refusals = set()


def grouped_mm(a, b, offs):
    """torch._grouped_mm(a, b, offs) in bf16: 2-D x 3-D -> 2-D (groups of rows of a), or 2-D x 2-D
    -> 3-D (groups along the reduction dimension). Falls back to a loop of matmuls (which reads the
    offsets on the host) where the op is unavailable or rejects the operands."""
    if hasattr(torch, "_grouped_mm") and a.is_cuda:
        try:
            return torch._grouped_mm(a, b, offs=offs)
        except RuntimeError as e:
            if str(e) not in _grouped_mm_refusals:
                _grouped_mm_refusals.add(str(e))
                print(f"note: torch._grouped_mm refused {tuple(a.shape)} x {tuple(b.shape)} "
                      f"({e}); using a loop of matmuls")
    ends = offs.tolist()
    starts = [0] + ends[:-1]
    if b.dim() == 3:
        out = torch.zeros(a.shape[0], b.shape[-1], dtype=a.dtype, device=a.device)
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[s:e] = a[s:e] @ b[g]
        return out
    return torch.stack([a[:, s:e] @ b[s:e] for s, e in zip(starts, ends)])


def _dequantize(data, scales, shape, direction, offs=None):
    """bf16 values of one direction of an mxq.quantize call made with _quantize's arguments."""
    grouped = offs is not None
    return mxq.dequantize(data, scales, shape, format="mxfp8", direction=direction,
                          scale_layout="blocked", group_ends=offs,
                          pad_rowwise=ALIGN if grouped else 0, pad_colwise=ALIGN if grouped else 0,
                          out_dtype=torch.bfloat16)


def _quantize(t, offs=None):
    grouped = offs is not None
    return mxq.quantize(t, format="mxfp8", direction="both", scale_rule="rceil",
                        scale_layout="blocked", group_ends=offs,
                        pad_rowwise=ALIGN if grouped else 0, pad_colwise=ALIGN if grouped else 0)


class MXFP8GroupedExperts(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, offs):
        M, K = x.shape
        E, N, _ = w.shape
        xq = _quantize(x, offs)  # padded rows P = round_up(M + E*32, 32)
        wq = _quantize(w)        # 3-D: rowwise along K, colwise along N, per expert
        x_rows = _dequantize(xq.row_data, xq.row_scales, (M, K), "rowwise", offs)  # (P, K)
        w_rows = _dequantize(wq.row_data, wq.row_scales, (E, N, K), "rowwise")     # (E, N, K)
        y_padded = grouped_mm(x_rows, w_rows.transpose(-2, -1), xq.padded_ends)   # (P, N)
        ctx.save_for_backward(xq.col_data, xq.col_scales, wq.col_data, wq.col_scales, offs)
        ctx.dims = (M, K, E, N)
        return mxq.unpad(y_padded, offs, M, alignment=ALIGN)

    @staticmethod
    def backward(ctx, dy):
        x_col_data, x_col_scales, w_col_data, w_col_scales, offs = ctx.saved_tensors
        M, K, E, N = ctx.dims
        dyq = _quantize(dy.contiguous(), offs)
        # dX = dy @ W[e]: dy along N (rowwise), W along N (its colwise data).
        dy_rows = _dequantize(dyq.row_data, dyq.row_scales, (M, N), "rowwise", offs)  # (P, N)
        w_cols = _dequantize(w_col_data, w_col_scales, (E, N, K), "colwise")          # (E, N, K)
        dx = mxq.unpad(grouped_mm(dy_rows, w_cols, dyq.padded_ends), offs, M, alignment=ALIGN)
        # dW[e] = dy[e]^T @ x[e]: both along the tokens of each group (colwise, K-group scales).
        dy_cols = _dequantize(dyq.col_data, dyq.col_scales, (M, N), "colwise", offs)  # (P, N)
        x_cols = _dequantize(x_col_data, x_col_scales, (M, K), "colwise", offs)       # (P, K)
        dw = grouped_mm(dy_cols.t(), x_cols, dyq.padded_ends)                         # (E, N, K)
        return dx, dw, None


class BF16GroupedExperts(torch.autograd.Function):
    """The same layer in bf16 (the baseline for the step time)."""

    @staticmethod
    def forward(ctx, x, w, offs):
        ctx.save_for_backward(x, w, offs)
        return grouped_mm(x, w.transpose(-2, -1), offs)

    @staticmethod
    def backward(ctx, dy):
        x, w, offs = ctx.saved_tensors
        dy = dy.contiguous()
        return grouped_mm(dy, w, offs), grouped_mm(dy.t(), x, offs), None


def reference(x, w, offs, dy):
    """y, dX, dW of the bf16 layer by per-expert matmuls and autograd (no grouped op involved)."""
    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
    ends = offs.tolist()
    starts = [0] + ends[:-1]
    y = torch.cat([x[s:e] @ w[g].t() for g, (s, e) in enumerate(zip(starts, ends))])
    y.backward(dy)
    return y.detach(), x.grad, w.grad


def sqnr_db(ref, test):
    ref, err = ref.double(), ref.double() - test.double()
    return (10 * torch.log10(ref.pow(2).sum() / err.pow(2).sum().clamp_min(1e-300))).item()


def make_inputs(M, K, N, E, device, seed=0):
    torch.manual_seed(seed)
    sizes = torch.distributions.Dirichlet(torch.ones(E)).sample() * (M - E)
    sizes = sizes.floor().long() + 1  # every expert gets tokens; sizes not multiples of 32
    sizes[-1] += M - sizes.sum()
    offs = sizes.cumsum(0).to(torch.int32)
    x = torch.randn(M, K, ).to(torch.bfloat16)
    w = (torch.randn(E, N, K, ) / K ** 0.5).to(torch.bfloat16)
    dy = torch.randn(M, N, ).to(torch.bfloat16)
    return x.to(device), w.to(device), offs.to(device), dy.to(device)


def check(M=1024, K=512, N=1024, E=8, device="cuda"):
    """SQNR (dB) of the MXFP8 layer's y, dX, dW against the bf16 reference."""
    x, w, offs, dy = make_inputs(M, K, N, E, device)
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = MXFP8GroupedExperts.apply(xg, wg, offs)
    y.backward(dy)
    y_ref, dx_ref, dw_ref = reference(x, w, offs, dy)
    assert y.shape == y_ref.shape and xg.grad.shape == x.shape and wg.grad.shape == w.shape
    return {"y": sqnr_db(y_ref, y), "dX": sqnr_db(dx_ref, xg.grad), "dW": sqnr_db(dw_ref, wg.grad)}


def step_ms(layer, x, w, offs, dy, iters=10):
    """Milliseconds per forward + backward step."""
    x, w = x.clone().requires_grad_(), w.clone().requires_grad_()

    def step():
        x.grad = w.grad = None
        layer.apply(x, w, offs).backward(dy)

    for _ in range(3):
        step()
    if x.is_cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            step()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    return (time.perf_counter() - t0) * 1e3 / iters


def main():
    p = argparse.ArgumentParser(description="MXFP8 MoE expert layer with mxq (emulated GEMMs)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--tokens", type=int, default=4096)
    p.add_argument("--dim", type=int, default=1024, help="K (model dim)")
    p.add_argument("--hidden", type=int, default=2048, help="N (expert hidden dim)")
    p.add_argument("--experts", type=int, default=8)
    a = p.parse_args()
    dims = dict(M=a.tokens, K=a.dim, N=a.hidden, E=a.experts)
    try:
        sq = check(**dims, device=a.device)
    except mxq.Unsupported as e:  # e.g. a cuda backend without token-group kernels yet
        print(f"SKIP: mxq on {a.device} cannot run this layer yet: {e}")
        return 77
    print(f"mxq {mxq.version()} on {a.device}: M={a.tokens} K={a.dim} N={a.hidden} E={a.experts}")
    for name, db in sq.items():
        print(f"  SQNR {name:3s} vs bf16 reference: {db:6.2f} dB (min {MIN_SQNR_DB})")
    x, w, offs, dy = make_inputs(**dims, device=a.device)
    t_mx = step_ms(MXFP8GroupedExperts, x, w, offs, dy)
    t_bf = step_ms(BF16GroupedExperts, x, w, offs, dy)
    print(f"  step (fwd+bwd): mxfp8 emulated {t_mx:.3f} ms, bf16 {t_bf:.3f} ms")
    if min(sq.values()) < MIN_SQNR_DB:
        print("FAIL: SQNR below threshold")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
