"""An MoE expert MLP (two grouped GEMMs around SwiGLU, over token groups) trained in MXFP8, with
mxq doing every quantization, activation and padding step.

    h = x @ W13[e]^T (M, 2F: [gate | up]),  a = silu(gate) * up (M, F),  y = a @ W2[e]^T (M, K)
    x: (M, K) tokens sorted by expert, W13: (E, 2F, K), W2: (E, K, F), offs: (E,) int32 group ends

Forward : x quantized both ways in one read (rowwise for h, colwise kept for dW13), per token group,
          each group padded to 32 rows; the weights (3-D) both ways. The activation is computed
          and quantized in one call (mxq.swiglu_quantize: rowwise for y, colwise for dW2).
Backward: dy quantized both ways (rowwise for da = dy @ W2[e], colwise for dW2[e] = dy[e]^T @
          a[e]); mxq.swiglu_backward_quantize turns da and h into dh, quantized both ways (rowwise
          for dX = dh @ W13[e], colwise for dW13[e] = dh[e]^T @ x[e]).
Scales use the blocked 128x4 layout (per group where grouped), as block-scaled tensor cores read
them. Hopper has no block-scaled tensor cores, so the GEMMs are emulated: mxq.dequantize back to
bf16, then torch._grouped_mm (a loop of matmuls where that op is missing or refuses the operands).
The result is checked against a bf16 reference (SQNR of y, dX, dW13, dW2) and timed next to the
bf16 layer.

    pip install --no-build-isolation ./python && python3 examples/moe_mxfp8_layer.py
"""
import argparse
import sys
import time

import torch

import mxq

ALIGN = 32  # token-group padding: every group starts on a 32-row (one MX block) boundary
MIN_SQNR_DB = 20.0  # MXFP8 e4m3 on both operands of two GEMMs in sequence, around an activation

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


def _quantize_grouped(quantize_fn, *args, offs):
    return quantize_fn(*args, format="mxfp8", direction="both", scale_layout="blocked",
                       group_ends=offs, pad_rowwise=ALIGN, pad_colwise=ALIGN)


class MXFP8ExpertMLP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w13, w2, offs):
        M, K = x.shape
        E, F2, _ = w13.shape
        F = F2 // 2
        xq = _quantize(x, offs)  # padded rows P = round_up(M + E*32, 32)
        w13q, w2q = _quantize(w13), _quantize(w2)  # 3-D: rowwise along K resp. F, per expert
        x_rows = _dequantize(xq.row_data, xq.row_scales, (M, K), "rowwise", offs)      # (P, K)
        w13_rows = _dequantize(w13q.row_data, w13q.row_scales, (E, F2, K), "rowwise")  # (E, 2F, K)
        h = mxq.unpad(grouped_mm(x_rows, w13_rows.transpose(-2, -1), xq.padded_ends), offs, M,
                      alignment=ALIGN)                                                 # (M, 2F)
        aq, _ = _quantize_grouped(mxq.swiglu_quantize, h, offs=offs)
        a_rows = _dequantize(aq.row_data, aq.row_scales, (M, F), "rowwise", offs)      # (P, F)
        w2_rows = _dequantize(w2q.row_data, w2q.row_scales, (E, K, F), "rowwise")      # (E, K, F)
        y = grouped_mm(a_rows, w2_rows.transpose(-2, -1), aq.padded_ends)              # (P, K)
        ctx.save_for_backward(xq.col_data, xq.col_scales, w13q.col_data, w13q.col_scales,
                              aq.col_data, aq.col_scales, w2q.col_data, w2q.col_scales, h, offs)
        ctx.dims = (M, K, E, F)
        return mxq.unpad(y, offs, M, alignment=ALIGN)

    @staticmethod
    def backward(ctx, dy):
        (x_cd, x_cs, w13_cd, w13_cs, a_cd, a_cs, w2_cd, w2_cs, h, offs) = ctx.saved_tensors
        M, K, E, F = ctx.dims
        dyq = _quantize(dy.contiguous(), offs)
        # da = dy @ W2[e] (along K: dy rowwise, W2 colwise); dW2[e] = dy[e]^T @ a[e] (along tokens).
        dy_rows = _dequantize(dyq.row_data, dyq.row_scales, (M, K), "rowwise", offs)   # (P, K)
        w2_cols = _dequantize(w2_cd, w2_cs, (E, K, F), "colwise")                      # (E, K, F)
        da = mxq.unpad(grouped_mm(dy_rows, w2_cols, dyq.padded_ends), offs, M, alignment=ALIGN)
        dy_cols = _dequantize(dyq.col_data, dyq.col_scales, (M, K), "colwise", offs)   # (P, K)
        a_cols = _dequantize(a_cd, a_cs, (M, F), "colwise", offs)                      # (P, F)
        dw2 = grouped_mm(dy_cols.t(), a_cols, dyq.padded_ends)                         # (E, K, F)
        # dh from da and h in one call, quantized both ways.
        dhq, _, _ = _quantize_grouped(mxq.swiglu_backward_quantize, da, h, offs=offs)
        dh_rows = _dequantize(dhq.row_data, dhq.row_scales, (M, 2 * F), "rowwise", offs)
        w13_cols = _dequantize(w13_cd, w13_cs, (E, 2 * F, K), "colwise")               # (E, 2F, K)
        dx = mxq.unpad(grouped_mm(dh_rows, w13_cols, dhq.padded_ends), offs, M, alignment=ALIGN)
        dh_cols = _dequantize(dhq.col_data, dhq.col_scales, (M, 2 * F), "colwise", offs)
        x_cols = _dequantize(x_cd, x_cs, (M, K), "colwise", offs)                      # (P, K)
        dw13 = grouped_mm(dh_cols.t(), x_cols, dhq.padded_ends)                        # (E, 2F, K)
        return dx, dw13, dw2, None


def _swiglu(h):
    gate, up = h.chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


class BF16ExpertMLP(torch.autograd.Function):
    """The same layer in bf16 (the baseline for the step time)."""

    @staticmethod
    def forward(ctx, x, w13, w2, offs):
        h = grouped_mm(x, w13.transpose(-2, -1), offs)
        ctx.save_for_backward(x, w13, w2, h, offs)
        return grouped_mm(_swiglu(h), w2.transpose(-2, -1), offs)

    @staticmethod
    def backward(ctx, dy):
        x, w13, w2, h, offs = ctx.saved_tensors
        dy = dy.contiguous()
        with torch.enable_grad():
            hg = h.detach().requires_grad_()
            a = _swiglu(hg)
        da = grouped_mm(dy, w2, offs)
        (dh,) = torch.autograd.grad(a, hg, da)
        return grouped_mm(dh, w13, offs), grouped_mm(dh.t(), x, offs), grouped_mm(dy.t(), a.detach(), offs), None


def reference(x, w13, w2, offs, dy):
    """y, dX, dW13, dW2 of the bf16 layer by per-expert matmuls and autograd (no grouped op)."""
    x, w13, w2 = (t.detach().requires_grad_() for t in (x, w13, w2))
    ends = offs.tolist()
    starts = [0] + ends[:-1]
    y = torch.cat([_swiglu(x[s:e] @ w13[g].t()) @ w2[g].t()
                   for g, (s, e) in enumerate(zip(starts, ends))])
    y.backward(dy)
    return y.detach(), x.grad, w13.grad, w2.grad


def sqnr_db(ref, test):
    ref, err = ref.double(), ref.double() - test.double()
    return (10 * torch.log10(ref.pow(2).sum() / err.pow(2).sum().clamp_min(1e-300))).item()


def make_inputs(M, K, F, E, device, seed=0):
    torch.manual_seed(seed)
    sizes = torch.distributions.Dirichlet(torch.ones(E)).sample() * (M - E)
    sizes = sizes.floor().long() + 1  # every expert gets tokens; sizes not multiples of 32
    sizes[-1] += M - sizes.sum()
    offs = sizes.cumsum(0).to(torch.int32)
    x = torch.randn(M, K).to(torch.bfloat16)
    w13 = (torch.randn(E, 2 * F, K) / K ** 0.5).to(torch.bfloat16)
    w2 = (torch.randn(E, K, F) / F ** 0.5).to(torch.bfloat16)
    dy = torch.randn(M, K).to(torch.bfloat16)
    return x.to(device), w13.to(device), w2.to(device), offs.to(device), dy.to(device)


def check(M=1024, K=512, F=1024, E=8, device="cuda"):
    """SQNR (dB) of the MXFP8 layer's y, dX, dW13, dW2 against the bf16 reference."""
    x, w13, w2, offs, dy = make_inputs(M, K, F, E, device)
    xg, w13g, w2g = (t.clone().requires_grad_() for t in (x, w13, w2))
    y = MXFP8ExpertMLP.apply(xg, w13g, w2g, offs)
    y.backward(dy)
    y_ref, dx_ref, dw13_ref, dw2_ref = reference(x, w13, w2, offs, dy)
    assert y.shape == y_ref.shape and xg.grad.shape == x.shape
    return {"y": sqnr_db(y_ref, y), "dX": sqnr_db(dx_ref, xg.grad),
            "dW13": sqnr_db(dw13_ref, w13g.grad), "dW2": sqnr_db(dw2_ref, w2g.grad)}


def step_ms(layer, x, w13, w2, offs, dy, iters=10):
    """Milliseconds per forward + backward step."""
    x, w13, w2 = (t.clone().requires_grad_() for t in (x, w13, w2))

    def step():
        x.grad = w13.grad = w2.grad = None
        layer.apply(x, w13, w2, offs).backward(dy)

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
    p.add_argument("--hidden", type=int, default=2048, help="F (expert hidden dim)")
    p.add_argument("--experts", type=int, default=8)
    a = p.parse_args()
    dims = dict(M=a.tokens, K=a.dim, F=a.hidden, E=a.experts)
    try:
        sq = check(**dims, device=a.device)
    except mxq.Unsupported as e:  # e.g. a cuda backend without token-group kernels yet
        print(f"SKIP: mxq on {a.device} cannot run this layer yet: {e}")
        return 77
    print(f"mxq {mxq.version()} on {a.device}: M={a.tokens} K={a.dim} F={a.hidden} E={a.experts}")
    for name, db in sq.items():
        print(f"  SQNR {name:4s} vs bf16 reference: {db:6.2f} dB (min {MIN_SQNR_DB})")
    inputs = make_inputs(**dims, device=a.device)
    t_mx = step_ms(MXFP8ExpertMLP, *inputs)
    t_bf = step_ms(BF16ExpertMLP, *inputs)
    print(f"  step (fwd+bwd): mxfp8 emulated {t_mx:.3f} ms, bf16 {t_bf:.3f} ms")
    if min(sq.values()) < MIN_SQNR_DB:
        print("FAIL: SQNR below threshold")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
