"""SwiGLU + quantize on the GPU: mxq.swiglu_quantize / swiglu_backward_quantize against a device
copy of the same bytes in the same run, and the unfused path (the activation by torch.compile,
then mxq.quantize).

    python3 bench/python_swiglu.py
    python3 bench/python_swiglu.py --shapes 16384x1536 --groups 8 --cases "mxfp8 rowwise"

Each case is timed as triton.testing.do_bench times it (L2 flushed between calls, eager, median):
µs, GB/s of the bytes the op must move (h (and dA) read, the quantized outputs written; the ops
run without keep_activation / keep_grad_input, so they write no bf16 copy), and the ratio of the
copy's time to the op's (1.0 = copy speed).
"""
import argparse


def group_ends(M, G, torch):
    """G sorted ends over M rows with jagged sizes (seeded), the last one M."""
    g = torch.Generator().manual_seed(G)
    cuts = torch.sort(torch.randint(0, M + 1, (G - 1,), generator=g)).values
    return torch.cat([cuts, torch.tensor([M])]).to(torch.int32).cuda()


def nbytes(outs):
    return sum(t.nbytes for t in outs if t is not None)


def main():
    import torch
    from triton.testing import do_bench

    import mxq

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="131072x2048,16384x1536", help="M x F list (h is M x 2F)")
    p.add_argument("--groups", default="8,64")
    p.add_argument("--cases", default="",
                   help="comma-separated words: only the cases whose names contain one (default: all)")
    a = p.parse_args()

    def wanted(name):
        return not a.cases or any(w in name for w in a.cases.split(","))
    print(f"mxq {mxq.version()}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'case':64s} {'µs':>9s} {'GB/s':>8s} {'of copy':>8s}")

    def timed(name, fn, moved):
        src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        copy_us = do_bench(lambda: dst.copy_(src), return_mode="median") * 1e3
        us = do_bench(fn, return_mode="median") * 1e3
        print(f"{name:64s} {us:9.1f} {moved / us / 1e3:8.0f} {copy_us / us:8.3f}")

    @torch.compile
    def swiglu_torch(h):
        gate, up = h.chunk(2, dim=-1)
        return torch.nn.functional.silu(gate) * up

    for shape in a.shapes.split(","):
        M, F = (int(v) for v in shape.split("x"))
        h = torch.randn(M, 2 * F, device="cuda").to(torch.bfloat16)
        dA = torch.randn(M, F, device="cuda").to(torch.bfloat16)
        amax = torch.tensor([8.0], device="cuda")
        for G in (int(g) for g in a.groups.split(",")):
            ends = group_ends(M, G, torch)
            tag = f"{M} x 2*{F}, G={G}"
            grouped = dict(group_ends=ends, pad_rowwise=32, pad_colwise=32)
            cases = [
                ("fwd mxfp8 rowwise", dict(format="mxfp8", direction="rowwise", **grouped)),
                ("fwd mxfp8 both", dict(format="mxfp8", direction="both", **grouped)),
                ("fwd nvfp4 rowwise amax given",
                 dict(format="nvfp4", direction="rowwise", tensor_amax=amax, group_ends=ends,
                      pad_rowwise=128)),
            ]
            for name, kw in cases:
                unfused = "unfused: torch.compile activation + mxq.quantize"
                with_unfused = name == "fwd mxfp8 rowwise" and wanted(unfused)
                if not (wanted(name) or with_unfused):
                    continue
                q, _ = mxq.swiglu_quantize(h, **kw)
                if wanted(name):
                    timed(f"{name}, {tag}", lambda: mxq.swiglu_quantize(h, **kw), h.nbytes + nbytes(q))
                if with_unfused:
                    timed(f"  {unfused}, {tag}", lambda: mxq.quantize(swiglu_torch(h), **kw),
                          h.nbytes + nbytes(q))
            kw = dict(format="mxfp8", direction="both", **grouped)
            if wanted("bwd mxfp8 both"):
                q, _, _ = mxq.swiglu_backward_quantize(dA, h, **kw)
                timed(f"bwd mxfp8 both, {tag}", lambda: mxq.swiglu_backward_quantize(dA, h, **kw),
                      h.nbytes + dA.nbytes + nbytes(q))
        del h, dA
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
