"""Expert-parallel dispatch / combine (mxq.expert_parallel) against the reference path: a bf16
all_to_all_single of every (token, expert) pair, the expert-major permutation, then mxq.quantize
with the group ends and fused padding; byte for byte, gradients included. gloo with 2 and 4 CPU
processes; NCCL with 1, 2 and 4 GPUs where the machine has them (NVLink multicast off). Routings
with empty experts, one expert taking every token, odd token counts and a rank with one token.
Skipped without torch."""
import datetime
import itertools
import os
import time
import warnings
from collections import namedtuple

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

import torch.multiprocessing as mp  # noqa: E402

import mxq  # noqa: E402
from mxq import expert_parallel as ep  # noqa: E402

# format, slots k, experts per rank, K, H (expert output width), alignment, scale layout,
# routing, whether the caller gives nvfp4's tensor amax.
Case = namedtuple("Case", "fmt k local K H alignment layout routing given_amax")
CASES = [
    Case("mxfp8", 2, 2, 64, 48, 32, "blocked", "random", False),
    Case("mxfp8_e5m2", 3, 3, 96, 32, 16, "blocked", "empty_experts", False),
    Case("mxfp4", 1, 2, 64, 40, 32, "blocked", "one_expert", False),
    Case("mxfp4", 3, 3, 64, 32, 128, "blocked", "one_expert", False),
    Case("nvfp4", 2, 2, 80, 48, 32, "blocked", "random", False),
    Case("nvfp4", 2, 2, 64, 32, 64, "blocked", "empty_experts", True),
    Case("mxfp8", 4, 4, 64, 32, 0, "blocked", "random", False),
    Case("mxfp8", 2, 2, 96, 32, 32, "linear", "random", False),
]
TOKENS = [7, 1, 13, 30]  # tokens of rank r: TOKENS[r % 4]
BF16 = torch.bfloat16


def _same(got, want, what):
    assert (got is None) == (want is None), what
    if want is None:
        return
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape), \
        (what, got.dtype, tuple(got.shape), want.dtype, tuple(want.shape))
    g = got.detach().cpu().contiguous().view(torch.uint8)
    w = want.detach().cpu().contiguous().view(torch.uint8)
    assert torch.equal(g, w), f"{what}: bytes differ at {(g != w).nonzero()[:8].tolist()}"


def _routing(kind, T, k, E, gen):
    """(T, k) distinct expert ids per token."""
    if kind == "one_expert":  # slot 0 of every token goes to the last expert
        others = torch.rand(T, E - 1, generator=gen).argsort(dim=1)[:, :k - 1]
        return torch.cat([torch.full((T, 1), E - 1, dtype=torch.int64), others], dim=1)
    allowed = list(range(E))
    if kind == "empty_experts":  # experts 1, 4, 7, ... get no token from any rank
        allowed = [e for e in range(E) if e % 3 != 1]
        if len(allowed) < k:
            allowed = [e for e in range(E) if e != 1] if E - 1 >= k else list(range(E))
    allowed = torch.tensor(allowed, dtype=torch.int64)
    return allowed[torch.rand(T, len(allowed), generator=gen).argsort(dim=1)[:, :k]]


def _exchange(x, out_splits, in_splits):
    """all_to_all_single of the rows of x, as bytes (older gloo lacks bf16)."""
    x = x.contiguous()
    out = torch.empty((sum(out_splits), x.shape[1] * x.element_size()), dtype=torch.uint8,
                      device=x.device)
    dist.all_to_all_single(out, x.view(torch.uint8), out_splits, in_splits)
    return out.view(x.dtype)


class _RefAllToAll(torch.autograd.Function):
    """The reference's bf16 all_to_all_single, differentiable: backward is the reverse exchange."""

    @staticmethod
    def forward(ctx, x, out_splits, in_splits):
        ctx.splits = (out_splits, in_splits)
        return _exchange(x, out_splits, in_splits)

    @staticmethod
    def backward(ctx, grad):
        out_splits, in_splits = ctx.splits
        return _exchange(grad, in_splits, out_splits), None, None


Reference = namedtuple("Reference", "q ends x_send x_pad send send_splits recv_splits perm pos")


def _index(values, device):
    return torch.tensor(values, dtype=torch.int64, device=device)


def _reference_dispatch(x, ids, E, case, amax, device):
    """Pairs sorted by expert, bf16 all-to-all, expert-major permutation (by source rank, then
    the source's order), mxq.quantize with group_ends and pad_rowwise; x_pad is the padded bf16
    activation, differentiable in x."""
    world, rank = dist.get_world_size(), dist.get_rank()
    G = E // world
    T, k = ids.shape
    flat = ids.reshape(-1).tolist()
    send = sorted(range(T * k), key=lambda p: (flat[p], p))
    send_splits = [sum(1 for p in send if flat[p] // G == d) for d in range(world)]
    recv_splits_t = torch.empty(world, dtype=torch.int64, device=device)
    dist.all_to_all_single(recv_splits_t, _index(send_splits, device))
    recv_splits = recv_splits_t.tolist()
    x_send = x.index_select(0, _index([p // k for p in send], device))
    x_send.retain_grad()
    recv = _RefAllToAll.apply(x_send, recv_splits, send_splits)
    recv_experts = torch.empty(sum(recv_splits), dtype=torch.int64, device=device)
    dist.all_to_all_single(recv_experts, _index([flat[p] for p in send], device), recv_splits,
                           send_splits)
    local = [e - rank * G for e in recv_experts.tolist()]
    perm = sorted(range(len(local)), key=lambda i: (local[i], i))
    x_perm = recv.index_select(0, _index(perm, device))
    sizes = [local.count(g) for g in range(G)]
    ends = list(itertools.accumulate(sizes))
    A = case.alignment
    q = mxq.quantize(x_perm.detach(), case.fmt, "rowwise", "rceil", case.layout,
                     group_ends=torch.tensor(ends, dtype=torch.int32, device=device),
                     pad_rowwise=A, tensor_amax=amax)
    pos, start = [], 0
    for n in sizes:
        pos += range(start, start + n)
        start += -(-n // A) * A if A else n
    x_pad = x_perm.new_zeros((q.row_data.shape[0], x.shape[1])).index_copy(
        0, _index(pos, device), x_perm)
    return Reference(q, ends, x_send, x_pad, send, send_splits, recv_splits, perm, pos)


def _weighted_sum(pairs, w):
    """The combine contract: fp32 products, summed in slot order, rounded once."""
    acc = pairs[:, 0].float() * w[:, 0:1].float()
    for j in range(1, pairs.shape[1]):
        acc = acc + pairs[:, j].float() * w[:, j:j + 1].float()
    return acc.to(pairs.dtype)


def _plain_sum(pairs):
    acc = pairs[:, 0].float()
    for j in range(1, pairs.shape[1]):
        acc = acc + pairs[:, j].float()
    return acc.to(pairs.dtype)


def _reference_pairs(y, ref, T, k, device):
    """Expert outputs (P, H) back to (T, k, H) through the reference's bf16 all-to-all."""
    rows = y.index_select(0, _index(ref.pos, device))  # expert-major, as perm orders them
    inv = [0] * len(ref.perm)
    for i, r in enumerate(ref.perm):
        inv[r] = i
    received_order = rows.index_select(0, _index(inv, device))
    back = _RefAllToAll.apply(received_order, ref.send_splits, ref.recv_splits)
    inv_send = [0] * (T * k)
    for i, p in enumerate(ref.send):
        inv_send[p] = i
    return back.index_select(0, _index(inv_send, device)).view(T, k, y.shape[1])


def _global_amax(x):
    """nvfp4's tensor amax over every rank's tokens, gathered rather than all-reduced."""
    local = mxq.tensor_amax(x)
    every = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(every, local)
    return torch.stack(every).max(dim=0).values


def _check_case(index, case, rank, world, device):
    E = case.local * world
    T, k, K, H = TOKENS[rank % 4], case.k, case.K, case.H
    gen = torch.Generator().manual_seed(1000 * index + rank)
    ids = _routing(case.routing, T, k, E, gen)
    ids = (ids.to(torch.int32) if index % 2 else ids).to(device)  # int32 and int64 ids
    row_scale = torch.exp2(torch.randint(-6, 7, (T, 1), generator=gen).float())
    base = (torch.randn(T, K, generator=gen) * row_scale).to(BF16).to(device)
    x = base.clone().requires_grad_()
    x_ref = base.clone().requires_grad_()
    amax = amax_arg = None
    if case.fmt == "nvfp4":
        amax = _global_amax(base)
        if case.given_amax:  # a caller's amax (delayed scaling), not the tokens' own
            amax = amax * 2
            amax_arg = amax
    what = f"{case} rank {rank}/{world}"

    res = ep.dispatch(x, ids, E, format=case.fmt, scale_layout=case.layout,
                      alignment=case.alignment, tensor_amax=amax_arg)
    ref = _reference_dispatch(x_ref, ids, E, case, amax, device)
    _same(res.data, ref.q.row_data, what + " data")
    _same(res.scales, ref.q.row_scales, what + " scales")
    _same(res.group_ends, torch.tensor(ref.ends, dtype=torch.int32), what + " group_ends")
    _same(res.padded_starts, ref.q.padded_starts, what + " padded_starts")
    _same(res.padded_ends, ref.q.padded_ends, what + " padded_ends")
    _same(res.s_enc, ref.q.s_enc, what + " s_enc")
    _same(res.s_dec, ref.q.s_dec, what + " s_dec")
    h = res.handle
    assert h.rows == res.data.shape[0] and h.received == len(ref.perm), what
    assert tuple(res.grad_carrier.shape) == (h.rows, K), what

    # dispatch backward: the activation's gradient back to x, each token's slots summed in fp32
    gd = torch.randn(h.rows, K, generator=gen).to(BF16).to(device)
    torch.autograd.backward(res.grad_carrier, gd)
    ref.x_pad.backward(gd)
    pair_grad = torch.zeros(T * k, K, dtype=BF16, device=device)
    pair_grad[_index(ref.send, device)] = ref.x_send.grad
    _same(x.grad, _plain_sum(pair_grad.view(T, k, K)), what + " dispatch grad")
    # autograd's own reference sums in bf16 (index_add), so only close
    torch.testing.assert_close(x.grad.float(), x_ref.grad.float(), rtol=0.05, atol=0.05)

    # combine and its backward
    y_base = torch.randn(h.rows, H, generator=gen).to(BF16).to(device)
    w_base = (torch.rand(T, k, generator=gen) + 0.01).to(device)
    y, y_ref = y_base.clone().requires_grad_(), y_base.clone().requires_grad_()
    w, w_ref = w_base.clone().requires_grad_(), w_base.clone().requires_grad_()
    out = ep.combine(y, h, w)
    want = _weighted_sum(_reference_pairs(y_ref, ref, T, k, device), w_ref)
    _same(out, want, what + " combine")
    go = torch.randn(T, H, generator=gen).to(BF16).to(device)
    out.backward(go)
    want.backward(go)
    _same(y.grad, y_ref.grad, what + " combine grad y")
    torch.testing.assert_close(w.grad, w_ref.grad, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        _same(ep.combine(y_base, h), _plain_sum(_reference_pairs(y_base, ref, T, k, device)),
              what + " unweighted combine")


class _Linear(torch.autograd.Function):
    """A stand-in for the grouped GEMM that consumes the dispatched codes: it takes
    grad_carrier as an input and returns the activation's gradient as its gradient."""

    @staticmethod
    def forward(ctx, grad_carrier, activation, weight):
        ctx.save_for_backward(weight)
        return (activation.float() @ weight.float()).to(BF16)

    @staticmethod
    def backward(ctx, grad):
        weight, = ctx.saved_tensors
        return (grad.float() @ weight.float().t()).to(BF16), None, None


def _check_layer(index, case, rank, world, device):
    """dispatch -> a GEMM Function fed grad_carrier -> combine -> loss: x's gradient equals the
    reference's pair gradients summed in fp32 by slot."""
    E = case.local * world
    T, k, K, H = TOKENS[rank % 4], case.k, case.K, case.H
    gen = torch.Generator().manual_seed(5000 + 1000 * index + rank)
    ids = _routing(case.routing, T, k, E, gen).to(device)
    base = torch.randn(T, K, generator=gen).to(BF16).to(device)
    weight = (torch.randn(K, H, generator=gen) / K ** 0.5).to(BF16).to(device)
    w = (torch.rand(T, k, generator=gen) + 0.01).to(device)
    go = torch.randn(T, H, generator=gen).to(BF16).to(device)
    x, x_ref = base.clone().requires_grad_(), base.clone().requires_grad_()
    amax = _global_amax(base) if case.fmt == "nvfp4" else None

    res = ep.dispatch(x, ids, E, format=case.fmt, scale_layout=case.layout,
                      alignment=case.alignment, tensor_amax=amax)
    ref = _reference_dispatch(x_ref, ids, E, case, amax, device)
    # The GEMM here reads the bf16 rows (what the codes stand for is not the point)
    y = _Linear.apply(res.grad_carrier, ref.x_pad.detach(), weight)
    ep.combine(y, res.handle, w).backward(go)
    y_ref = (ref.x_pad.float() @ weight.float()).to(BF16)
    _weighted_sum(_reference_pairs(y_ref, ref, T, k, device), w).backward(go)
    pair_grad = torch.zeros(T * k, K, dtype=BF16, device=device)
    pair_grad[_index(ref.send, device)] = ref.x_send.grad
    _same(x.grad, _plain_sum(pair_grad.view(T, k, K)), f"{case} rank {rank}/{world} layer grad")


def _synchronisations(fn):
    """How many synchronising CUDA calls fn makes (torch's sync debug mode)."""
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            result = fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return result, sum("synchroniz" in str(w.message) for w in caught)


def _check_host_syncs(rank, world, device):
    """dispatch copies its counts to the host once; combine and both backwards never sync."""
    T, K, H, k, E = 64, 128, 64, 2, 2 * world
    gen = torch.Generator().manual_seed(77 + rank)
    ids = _routing("random", T, k, E, gen).to(device)
    x = torch.randn(T, K, generator=gen).to(BF16).to(device).requires_grad_()
    w = torch.rand(T, k, generator=gen).to(device).requires_grad_()
    for attempt in range(2):  # the first round warms NCCL and the allocator up
        res, n_dispatch = _synchronisations(lambda: ep.dispatch(x, ids, E))
        y = torch.randn(res.handle.rows, H, device=device, dtype=BF16, requires_grad=True)
        out, n_combine = _synchronisations(lambda: ep.combine(y, res.handle, w))
        gd = torch.randn(res.handle.rows, K, device=device, dtype=BF16)
        _, n_backward = _synchronisations(lambda: torch.autograd.backward(
            [out, res.grad_carrier], [torch.ones_like(out), gd]))
    assert (n_dispatch, n_combine, n_backward) == (1, 0, 0), \
        f"rank {rank}: synchronisations dispatch {n_dispatch}, combine {n_combine}, " \
        f"backward {n_backward}"


def _worker(rank, world, backend, init_file):
    os.environ["NCCL_NVLS_ENABLE"] = "0"  # NVLink multicast stays off in every multi-GPU run
    if backend == "nccl":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        device = torch.device("cpu")
    dist.init_process_group(backend, init_method="file://" + init_file, rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=120))
    try:
        for index, case in enumerate(CASES):
            _check_case(index, case, rank, world, device)
        for index in (0, 4):
            _check_layer(index, CASES[index], rank, world, device)
        if backend == "nccl":
            _check_host_syncs(rank, world, device)
    finally:
        dist.destroy_process_group()


def _spawn(world, backend, tmp_path, timeout=300):
    context = mp.spawn(_worker, args=(world, backend, str(tmp_path / "rendezvous")),
                       nprocs=world, join=False)
    deadline = time.monotonic() + timeout
    while not context.join(timeout=1):  # raises, with the worker's traceback, when one fails
        if time.monotonic() > deadline:
            for p in context.processes:
                p.kill()
            pytest.fail(f"{backend} with {world} processes: no result after {timeout} s")


def test_package_exports():
    assert mxq.dispatch is ep.dispatch and mxq.combine is ep.combine
    assert mxq.DispatchResult is ep.DispatchResult


@pytest.mark.parametrize("world", [2, 4])
def test_gloo_cpu(world, tmp_path):
    _spawn(world, "gloo", tmp_path)


NCCL = (torch.cuda.is_available() and dist.is_nccl_available() and mxq.cuda_available())


@pytest.mark.skipif(not NCCL, reason="needs CUDA, NCCL and libmxq built with CUDA")
@pytest.mark.parametrize("world", [1, 2, 4])
def test_nccl_gpus(world, tmp_path, monkeypatch):
    if torch.cuda.device_count() < world:
        pytest.skip(f"needs {world} GPUs (has {torch.cuda.device_count()})")
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    _spawn(world, "nccl", tmp_path)
