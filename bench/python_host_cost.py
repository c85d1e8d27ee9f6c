"""Host cost of mxq's Python entry points, and what it leaves of the kernels' bandwidth.

    python3 bench/python_host_cost.py                 # torch CUDA tensors (needs a GPU)
    python3 bench/python_host_cost.py --numpy         # numpy arrays, CPU backend

torch: microseconds of host time per call, back-to-back calls on a (256, 2048) bf16 CUDA tensor,
through mxq.quantize & co. and through torch.ops.mxq.* directly, eager and inside a torch.compile
graph without CUDA graphs (per call of a graph of 8, and each call added to it), next to
torch.empty_like and torch.abs in the same run. Then the eager mxfp8 rowwise quantize of an
8192 x 2048 tensor timed as triton.testing.do_bench times it (L2 flushed between calls, no CUDA
graph): µs, GB/s and the ratio to a device copy of the same bytes in the same run.
"""
import argparse
import time


def host_us(fn, calls=200, reps=7, sync=None):
    """Best host time per call over `reps` bursts of back-to-back calls (device idle between)."""
    fn()
    best = float("inf")
    for _ in range(reps):
        if sync:
            sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    if sync:
        sync()
    return best


def torch_rows(M=256, K=2048, groups=8):
    import torch
    import torch._dynamo

    import mxq

    dev = "cuda"
    x = torch.randn(M, K, device=dev).to(torch.bfloat16)
    ends = torch.linspace(M // groups, M, groups, device=dev).to(torch.int32)
    q = mxq.quantize(x)
    ops = torch.ops.mxq
    eager = {
        "torch.empty_like (reference)": lambda: torch.empty_like(x),
        "torch.abs (reference: a native op with one launch)": lambda: torch.abs(x),
        "mxq.quantize mxfp8 rowwise blocked": lambda: mxq.quantize(x),
        "torch.ops.mxq.quantize mxfp8 rowwise blocked": lambda: ops.quantize(
            x, "mxfp8", "rowwise", "rceil", "blocked", None, 0, 0, None),
        f"mxq.quantize both, {groups} groups, fused pad": lambda: mxq.quantize(
            x, direction="both", group_ends=ends, pad_rowwise=32, pad_colwise=32),
        f"torch.ops.mxq.quantize both, {groups} groups, fused pad": lambda: ops.quantize(
            x, "mxfp8", "both", "rceil", "blocked", ends, 32, 32, None),
        "mxq.pad": lambda: mxq.pad(x, ends),
        "torch.ops.mxq.pad": lambda: ops.pad(x, ends, 32, False),
        "mxq.dequantize": lambda: mxq.dequantize(q.row_data, q.row_scales, x.shape,
                                                 out_dtype=torch.bfloat16),
        "torch.ops.mxq.dequantize": lambda: ops.dequantize(
            q.row_data, q.row_scales, None, [M, K], "mxfp8", "rowwise", "rceil", "blocked", None,
            0, 0, torch.bfloat16),
    }
    rows = [(name, host_us(fn, sync=torch.cuda.synchronize)) for name, fn in eager.items()]

    # Inside a compiled graph (inductor, no CUDA graphs): graphs of n calls of the op, so that the
    # graph's own entry cost (guards, wrappers) is shared; the same graphs of empty_like are the
    # reference. Per call: a graph of 8 / 8. Each added call: (graph of 16 - graph of 8) / 8, the
    # op's own cost in a graph, without the entry cost.
    def graph(op, n):
        def fn(x, ends):
            return [op(x, ends) for _ in range(n)]
        # Every graph shares fn's code: without a reset, dynamo's recompile limit would run the
        # later ones eagerly.
        torch._dynamo.reset()
        compiled = torch.compile(fn, fullgraph=True)
        return lambda: compiled(x, ends)

    def graph_us(op, n):
        return host_us(graph(op, n), calls=50, sync=torch.cuda.synchronize)

    in_graph = {
        "torch.empty_like (reference)": lambda x, e: torch.empty_like(x),
        "mxq.quantize mxfp8 rowwise blocked": lambda x, e: mxq.quantize(x).row_data,
        f"mxq.quantize both, {groups} groups, fused pad": lambda x, e: mxq.quantize(
            x, direction="both", group_ends=e, pad_rowwise=32, pad_colwise=32).col_data,
        "mxq.pad": lambda x, e: mxq.pad(x, e)[0],
        "mxq.dequantize": lambda x, e: mxq.dequantize(q.row_data, q.row_scales, (M, K),
                                                      out_dtype=torch.bfloat16),
    }
    for name, op in in_graph.items():
        t8, t16 = graph_us(op, 8), graph_us(op, 16)
        rows.append((f"compiled graph of 8, per call: {name}", t8 / 8))
        rows.append((f"compiled graph, each added call: {name}", (t16 - t8) / 8))
    # The same graphs compiled without inductor's checks of each op output's sizes, strides and
    # alignment (what a deployment may turn off): the part of the compiled cost that is inductor's.
    from torch._inductor import config as inductor_config
    no_asserts = {k: False for k in ("size_asserts", "alignment_asserts") if hasattr(inductor_config, k)}
    with inductor_config.patch(**no_asserts):
        for name, op in in_graph.items():
            rows.append((f"compiled graph of 8, no output asserts, per call: {name}",
                         graph_us(op, 8) / 8))
    return rows


def torch_bandwidth(M=8192, K=2048):
    """(name, µs, GB/s, ratio to copy) of the eager rowwise quantize and a copy of its bytes."""
    import torch
    from triton.testing import do_bench

    import mxq

    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    q = mxq.quantize(x)
    moved = x.nbytes + q.row_data.nbytes + q.row_scales.nbytes  # read x, write data and scales
    src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_us = do_bench(lambda: dst.copy_(src), return_mode="median") * 1e3
    quant_us = do_bench(lambda: mxq.quantize(x), return_mode="median") * 1e3
    return [("device copy of the same bytes", copy_us, moved / copy_us / 1e3, 1.0),
            (f"mxq.quantize mxfp8 rowwise blocked {M} x {K} (eager)", quant_us,
             moved / quant_us / 1e3, copy_us / quant_us)]


def numpy_rows():
    import numpy as np

    import mxq

    x = np.ones((32, 32), np.float32)
    ends = np.array([16, 32], np.int32)
    q = mxq.quantize(x, scale_layout="linear")
    calls = {
        "mxq.quantize mxfp8 rowwise": lambda: mxq.quantize(x),
        "mxq.quantize both, groups, padded": lambda: mxq.quantize(
            x, direction="both", group_ends=ends, pad_rowwise=32, pad_colwise=32),
        "mxq.dequantize": lambda: mxq.dequantize(q.row_data, q.row_scales, (32, 32),
                                                 scale_layout="linear"),
        "mxq.pad": lambda: mxq.pad(x, ends),
        "np.empty_like (reference)": lambda: np.empty_like(x),
    }
    return [(name, host_us(fn, calls=2000)) for name, fn in calls.items()]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--numpy", action="store_true", help="numpy arrays on the CPU backend")
    a = p.parse_args()
    if a.numpy:
        print("mxq host cost, numpy (32, 32) float32, CPU backend: µs per call")
        for name, us in numpy_rows():
            print(f"  {name:60s} {us:8.2f}")
        return
    import torch
    print(f"mxq host cost, torch {torch.__version__}, {torch.cuda.get_device_name()}: µs per call, "
          f"(256, 2048) bf16 CUDA input")
    rows = torch_rows()
    ref = rows[0][1]
    for name, us in rows:
        print(f"  {name:70s} {us:8.2f}  ({us / ref:5.2f} x empty_like)")
    print("eager bandwidth (triton.testing.do_bench: L2 flushed, no CUDA graph, median)")
    for name, us, gbs, ratio in torch_bandwidth():
        print(f"  {name:70s} {us:8.2f} µs {gbs:8.1f} GB/s {ratio:6.3f} of copy")


if __name__ == "__main__":
    main()
