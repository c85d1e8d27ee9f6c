"""Expert-parallel dispatch + combine (mxq.expert_parallel) against the bf16 path, one process per
GPU of one host, NCCL, NVLink multicast off (NCCL_NVLS_ENABLE=0, set here):

    torchrun --nproc-per-node 8 bench/python_expert_parallel.py [--tokens 16384 --hidden 7168
        --topk 8 --experts 256 --format mxfp8]

Uniform random top-k routing (each rank its own seed). Timed, median over --iters calls after a
barrier, the slowest rank's median reported (CUDA events on the current stream; dispatch's one
host sync included):
- mxq dispatch: quantize once, one all-to-all of codes + scales, expert-major padded layout with
  per-group blocked scales.
- bf16 dispatch + quantize: the reference path to the same bytes: bf16 all-to-all, permute,
  mxq.quantize with group_ends and fused padding.
- bf16 dispatch: the bf16 all-to-all and permute alone (what a bf16 grouped GEMM takes).
- combine: mxq.combine (bf16) and an unfused torch version of the same exchange and weighted sum.
Wire bytes: what this rank sends to other ranks (its own rows stay local), averaged over ranks;
GB/s = wire bytes / time. Target: mxq dispatch >= 1.6x faster than bf16 dispatch + quantize.
"""
import argparse
import os
import statistics

if os.environ.get("NCCL_NVLS_ENABLE", "0") != "0":
    print(f"python_expert_parallel: NCCL_NVLS_ENABLE={os.environ['NCCL_NVLS_ENABLE']} overridden "
          f"to 0 (NVLink multicast stays off)")
os.environ["NCCL_NVLS_ENABLE"] = "0"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import mxq  # noqa: E402
from mxq import expert_parallel as ep  # noqa: E402


def timed_us(fn, iters, warmup):
    """Median µs of fn on this rank; the slowest rank's median."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def mean_over_ranks(value):
    t = torch.tensor([float(value)], device="cuda", dtype=torch.float64)
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


def bf16_dispatch(x, ids, E, quantize, a):
    """The bf16 path: the same routing plan, bf16 rows on the wire, permuted, then (quantize)
    mxq.quantize with group_ends and fused padding, i.e. dispatch's bytes."""
    h = ep._plan(ids, E, 0, None)  # unpadded expert-major destinations
    sent = x.index_select(0, torch.div(h.order, h.topk, rounding_mode="floor"))
    recv = ep._all_to_all(sent, h.received, h.recv_splits, h.send_splits, None)
    permuted = torch.empty_like(recv)
    permuted.index_copy_(0, h.dst, recv)
    if not quantize:
        return permuted
    return mxq.quantize(permuted, a.format, "rowwise", group_ends=h.group_ends,
                        pad_rowwise=a.alignment, tensor_amax=a.amax)


def unfused_combine(y, h, w):
    """Combine as plain torch: gather, all-to-all, unsort, weighted sum over the slots."""
    rows = y.index_select(0, h.dst)
    back = ep._all_to_all(rows, h.num_tokens * h.topk, h.send_splits, h.recv_splits, None)
    pairs = torch.empty_like(back)
    pairs.index_copy_(0, h.order, back)
    pairs = pairs.view(h.num_tokens, h.topk, -1)
    return (pairs.float() * w.unsqueeze(-1)).sum(1).to(y.dtype)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=16384, help="tokens per rank")
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--topk", type=int, default=8)
    p.add_argument("--experts", type=int, default=256)
    p.add_argument("--format", default="mxfp8")
    p.add_argument("--alignment", type=int, default=32)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    T, K, k, E = a.tokens, a.hidden, a.topk, a.experts
    gen = torch.Generator(device="cuda").manual_seed(1234 + rank)
    x = torch.randn(T, K, device="cuda", generator=gen).to(torch.bfloat16)
    ids = torch.rand(T, E, device="cuda", generator=gen).topk(k, dim=1).indices
    w = torch.rand(T, k, device="cuda", generator=gen)
    a.amax = None
    if a.format == "nvfp4":  # one amax for every rank, as dispatch requires
        a.amax = mxq.tensor_amax(x)
        dist.all_reduce(a.amax, op=dist.ReduceOp.MAX)

    res = ep.dispatch(x, ids, E, format=a.format, alignment=a.alignment, tensor_amax=a.amax)
    h = res.handle
    y = torch.randn(h.rows, K, device="cuda", generator=gen).to(torch.bfloat16)
    code_bytes = res.data.shape[1] * res.data.element_size()
    scale_bytes = -(-K // (16 if a.format == "nvfp4" else 32))
    sent_away = sum(h.send_splits) - h.send_splits[rank]  # rows that leave this rank
    recv_away = h.received - h.recv_splits[rank]
    wire = {
        "mxq": mean_over_ranks(sent_away * (code_bytes + scale_bytes)),
        "bf16": mean_over_ranks(sent_away * 2 * K),
        "combine": mean_over_ranks(recv_away * 2 * K),
    }

    t = {
        "mxq dispatch": timed_us(lambda: ep.dispatch(x, ids, E, format=a.format,
                                                      alignment=a.alignment,
                                                      tensor_amax=a.amax), a.iters, a.warmup),
        "bf16 dispatch + quantize": timed_us(lambda: bf16_dispatch(x, ids, E, True, a), a.iters,
                                             a.warmup),
        "bf16 dispatch": timed_us(lambda: bf16_dispatch(x, ids, E, False, a), a.iters, a.warmup),
        "mxq combine": timed_us(lambda: ep.combine(y, h, w), a.iters, a.warmup),
        "unfused bf16 combine": timed_us(lambda: unfused_combine(y, h, w), a.iters, a.warmup),
    }
    if rank == 0:
        print(f"mxq {mxq.version()}, torch {torch.__version__}, {world} x "
              f"{torch.cuda.get_device_name()}, NCCL_NVLS_ENABLE={os.environ['NCCL_NVLS_ENABLE']}")
        print(f"{T} tokens per rank, hidden {K}, top-{k} of {E} experts, {a.format}, "
              f"alignment {a.alignment}; wire = bytes a rank sends to other ranks (mean)")
        print(f"{'path':28s} {'µs':>10s} {'wire MB':>9s} {'GB/s':>7s}")
        for name, wire_key in (("mxq dispatch", "mxq"), ("bf16 dispatch + quantize", "bf16"),
                               ("bf16 dispatch", "bf16"), ("mxq combine", "combine"),
                               ("unfused bf16 combine", "combine")):
            us = t[name]
            print(f"{name:28s} {us:10.1f} {wire[wire_key] / 1e6:9.1f} "
                  f"{wire[wire_key] / us / 1e3:7.1f}")
        speedup = t["bf16 dispatch + quantize"] / t["mxq dispatch"]
        print(f"dispatch speedup vs bf16 dispatch + quantize: {speedup:.2f}x (target >= 1.6x: "
              f"{'met' if speedup >= 1.6 else 'missed'}); vs bf16 dispatch alone: "
              f"{t['bf16 dispatch'] / t['mxq dispatch']:.2f}x; wire bytes "
              f"{wire['bf16'] / max(wire['mxq'], 1):.2f}x fewer")
        print(f"combine: mxq {t['mxq combine']:.1f} µs vs unfused {t['unfused bf16 combine']:.1f}"
              f" µs ({t['unfused bf16 combine'] / t['mxq combine']:.2f}x)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
