"""Expert parallelism: the MoE token all-to-all with quantized tokens, on torch.distributed.

dispatch() quantizes each rank's tokens once (rowwise, any format of mxq), sends every (token,
expert) pair's codes and scales to the rank that holds the expert with one
torch.distributed.all_to_all_single (NCCL for CUDA tensors, gloo for CPU tensors; no communication
code of mxq's own), and lays them out on the receiver exactly as mxq's grouped quantize would:
expert-major, each expert's rows padded to `alignment`, scales in per-group blocked (128x4)
layout, with the group offsets a grouped GEMM takes. combine() brings the expert outputs back to
their tokens in bf16 and sums each token's top-k outputs, weighted by the router. Both are
differentiable (torch.autograd.Function); docs/expert-parallel.md is the contract.

Host synchronisation: all_to_all_single needs its split sizes on the host, so dispatch copies the
per-rank row counts to the host once (one device-to-host copy of 2 * world int64 values, which
waits for the routing to be computed). Nothing else synchronises: combine and both backwards
reuse the counts that dispatch read.
"""
from collections import namedtuple

import torch
import torch.distributed as dist

from . import quantize as _quantize
from . import swizzle as _swizzle
from . import tensor_amax as _tensor_amax
from .errors import InvalidArgument

__all__ = ["dispatch", "combine", "DispatchResult", "DispatchHandle"]

DispatchResult = namedtuple(
    "DispatchResult",
    "data scales group_ends padded_starts padded_ends s_enc s_dec grad_carrier handle")
DispatchResult.__doc__ = """What dispatch returns, for this rank's local experts (G of them).

data: (P, K') codes, expert-major: expert g's rows start at padded_starts[g] (fp8 dtypes for
mxfp8, uint8 with two codes per byte for mxfp4 / nvfp4). scales: their scales in scale_layout
("blocked": flat, one 128x4 blocked matrix per expert group; "linear": (P, ceil(K/block))).
Both are byte for byte mxq.quantize(x_local, format, "rowwise", scale_rule, scale_layout,
group_ends=group_ends, pad_rowwise=alignment) of the received tokens in expert-major order.
group_ends: int32 (G,) cumulative token counts per local expert (unpadded). padded_starts /
padded_ends: int32 (G,) row offsets of each expert in data (None when alignment is 0: then
data is unpadded and group_ends are its offsets). s_enc, s_dec: nvfp4's float32 (1,) tensor
scales (the same on every rank), else None. grad_carrier: a (P, K) tensor of x's dtype without
storage that carries the autograd edge back to x (see dispatch). handle: the DispatchHandle that
combine takes."""


class DispatchHandle:
    """The routing of one dispatch, for combine and the backwards: split sizes (host ints) and
    device index tensors. Attributes a caller may read: num_local_experts, alignment, rows (P,
    the rows of data), received (rows received, unpadded), tokens_per_expert (int64 (G,), on the
    device), group_ends / padded_starts / padded_ends (as in DispatchResult)."""

    __slots__ = ("group", "num_tokens", "topk", "num_local_experts", "alignment", "send_splits",
                 "recv_splits", "order", "dst", "padding", "rows", "received", "tokens_per_expert",
                 "group_ends", "padded_starts", "padded_ends")

    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)


def _all_to_all(src, out_rows, output_splits, input_splits, group):
    """One all_to_all_single of the rows of a contiguous 2-D src into a fresh (out_rows, W)
    tensor. The rows travel as bytes, which every backend carries (gloo may lack bf16)."""
    width = src.shape[1]
    out = torch.empty((out_rows, width * src.element_size()), dtype=torch.uint8,
                      device=src.device)
    dist.all_to_all_single(out, src.view(torch.uint8), output_split_sizes=output_splits,
                           input_split_sizes=input_splits, group=group)
    return out.view(src.dtype)


def _plan(topk_ids, num_experts, alignment, group):
    """The routing: who sends how many rows where, and where each received row lands."""
    world = dist.get_world_size(group)
    if num_experts <= 0 or num_experts % world:
        raise InvalidArgument(f"dispatch: num_experts ({num_experts}) must be a positive multiple "
                              f"of the group's size ({world})")
    if alignment < 0 or (alignment & (alignment - 1)):
        raise InvalidArgument(f"dispatch: alignment must be 0 or a power of two (got {alignment})")
    G = num_experts // world
    T, k = topk_ids.shape
    device = topk_ids.device
    flat = topk_ids.reshape(-1).to(torch.int64)
    # Pairs sorted by expert (stable: by token, then slot, within an expert); experts are
    # contiguous per rank, so this is also the order of the destination ranks.
    order = torch.sort(flat, stable=True).indices
    # scatter_add rather than bincount: CUDA bincount reads the maximum on the host.
    counts = torch.zeros(num_experts, dtype=torch.int64, device=device)
    counts.scatter_add_(0, flat, torch.ones_like(flat))
    recv_counts = torch.empty_like(counts)  # [source rank s][local expert g]
    dist.all_to_all_single(recv_counts, counts, group=group)
    per_rank = torch.cat([counts.view(world, G).sum(1), recv_counts.view(world, G).sum(1)])
    host = per_rank.cpu().tolist()  # the one device-to-host copy: all_to_all_single's split sizes
    send_splits, recv_splits = host[:world], host[world:]
    received = sum(recv_splits)

    by_source = recv_counts.view(world, G)
    tokens_per_expert = by_source.sum(0)
    group_ends = torch.cumsum(tokens_per_expert, 0)
    if alignment:
        sizes = (tokens_per_expert + (alignment - 1)) // alignment * alignment
        padded_ends = torch.cumsum(sizes, 0)
        starts = padded_ends - sizes
        rows = (received + G * alignment + alignment - 1) // alignment * alignment
    else:
        starts = group_ends - tokens_per_expert
        padded_ends = None
        rows = received
    # Received rows come in blocks (source s, local expert g), s-major; block (s, g) lands at
    # expert g's start plus the rows that earlier sources sent to g.
    block_rows = by_source.reshape(-1)
    block_first = torch.cumsum(block_rows, 0) - block_rows
    earlier_sources = (torch.cumsum(by_source, 0) - by_source).reshape(-1)
    block_base = starts.repeat(world) + earlier_sources - block_first
    block_of_row = torch.repeat_interleave(torch.arange(world * G, device=device), block_rows,
                                           output_size=received)  # output_size: no host sync
    dst = torch.arange(received, device=device) + block_base.index_select(0, block_of_row)
    # The rows no token lands on (rows - received of them, a count the host knows): zeroed
    # alone rather than the whole output.
    is_real = torch.zeros(rows, dtype=torch.uint8, device=device).index_fill_(0, dst, 1)
    padding = torch.sort(is_real, stable=True).indices[:rows - received]
    return DispatchHandle(
        group=group, num_tokens=T, topk=k, num_local_experts=G, alignment=alignment,
        send_splits=send_splits, recv_splits=recv_splits, order=order, dst=dst, padding=padding,
        rows=rows, received=received, tokens_per_expert=tokens_per_expert,
        group_ends=group_ends.to(torch.int32),
        padded_starts=starts.to(torch.int32) if alignment else None,
        padded_ends=padded_ends.to(torch.int32) if alignment else None)


def _sum_slots(pairs):
    """(T, k, W) -> (T, W): the k slots summed in fp32 in slot order, rounded once."""
    acc = pairs[:, 0].float()
    for j in range(1, pairs.shape[1]):
        acc = acc + pairs[:, j].float()
    return acc


def _to_sources(rows_by_dst, h):
    """Rows in the receiver's padded layout -> (T, k, W) at their (token, slot) on the source."""
    received = rows_by_dst.index_select(0, h.dst)
    back = _all_to_all(received, h.num_tokens * h.topk, h.send_splits, h.recv_splits, h.group)
    pairs = torch.empty_like(back)
    pairs.index_copy_(0, h.order, back)
    return pairs.view(h.num_tokens, h.topk, back.shape[1])


def _to_experts(pairs, h):
    """(T, k, W) per (token, slot) -> rows in the receiver's padded layout (padding rows 0)."""
    flat = pairs.reshape(h.num_tokens * h.topk, pairs.shape[-1])
    sent = flat.index_select(0, h.order)
    received = _all_to_all(sent, h.received, h.recv_splits, h.send_splits, h.group)
    return _place(received, h)


def _place(received, h):
    """Received rows (received order) -> their rows of the padded layout, padding rows 0."""
    out = received.new_empty((h.rows, received.shape[1]))
    out.index_copy_(0, h.dst, received)
    out.index_fill_(0, h.padding, 0)
    return out


class _Dispatch(torch.autograd.Function):
    """x -> quantized expert-major rows; backward: the gradient of the dispatched activation
    (P, K) back to x, summed over each token's slots in fp32."""

    @staticmethod
    def forward(ctx, x, h, format, scale_rule, scale_layout, tensor_amax):
        q = _quantize(x.detach(), format, "rowwise", scale_rule, "linear",
                      tensor_amax=tensor_amax)
        data, scales = q.row_data, q.row_scales
        # One message per pair: [codes | scales] bytes, so one all-to-all carries both.
        code_bytes = data.shape[1]
        packed = torch.cat([data.view(torch.uint8), scales.view(torch.uint8)], dim=1)
        sent = packed.index_select(0, torch.div(h.order, h.topk, rounding_mode="floor"))
        received = _all_to_all(sent, h.received, h.recv_splits, h.send_splits, h.group)
        # Zero rows quantize to zero codes and zero scale bytes in every format (spec.md
        # section 2, 3), so zero padding equals the fused pad of quantize.
        out_data = _place(received[:, :code_bytes], h)
        out_scales = _place(received[:, code_bytes:], h)
        if scale_layout == "blocked":
            ends = h.padded_ends if h.alignment else h.group_ends
            out_scales = _swizzle(out_scales, ends, group_axis="m")
        carrier = torch.empty_strided((h.rows, x.shape[1]), (0, 0), dtype=x.dtype,
                                      device=x.device).zero_()
        ctx.h = h
        ctx.x_dtype = x.dtype
        ctx.set_materialize_grads(False)  # no zero gradients for the codes and scales
        outs = (out_data.view(data.dtype), out_scales.view(scales.dtype), q.s_enc, q.s_dec)
        ctx.mark_non_differentiable(*(t for t in outs if t is not None))
        return outs + (carrier,)

    @staticmethod
    def backward(ctx, _data, _scales, _s_enc, _s_dec, grad):
        if grad is None:
            return None, None, None, None, None, None
        pairs = _to_sources(grad, ctx.h)
        return _sum_slots(pairs).to(ctx.x_dtype), None, None, None, None, None


class _Combine(torch.autograd.Function):
    """Expert outputs (P, H) -> (T, k, H) at their tokens; backward: the dispatch-like way back,
    in the gradient's dtype, padding rows 0."""

    @staticmethod
    def forward(ctx, y, h):
        ctx.h = h
        return _to_sources(y.detach(), h)

    @staticmethod
    def backward(ctx, grad):
        return _to_experts(grad, ctx.h), None


class _WeightedSum(torch.autograd.Function):
    """out[t] = sum_j w[t, j] * y[t, j] in fp32 (slot order), rounded once to y's dtype. Its own
    Function so that backward keeps only y and w, not k fp32 copies of y."""

    @staticmethod
    def forward(ctx, pairs, weights):
        ctx.save_for_backward(pairs, weights)
        acc = pairs[:, 0].float() * weights[:, 0:1].float()
        for j in range(1, pairs.shape[1]):
            acc = acc + pairs[:, j].float() * weights[:, j:j + 1].float()
        return acc.to(pairs.dtype)

    @staticmethod
    def backward(ctx, grad):
        pairs, weights = ctx.saved_tensors
        g = grad.float()
        k = pairs.shape[1]
        grad_pairs = grad_weights = None
        if ctx.needs_input_grad[0]:
            grad_pairs = torch.stack(
                [(g * weights[:, j:j + 1].float()).to(pairs.dtype) for j in range(k)], dim=1)
        if ctx.needs_input_grad[1]:
            grad_weights = torch.stack(
                [(g * pairs[:, j].float()).sum(1) for j in range(k)], dim=1).to(weights.dtype)
        return grad_pairs, grad_weights


def dispatch(x, topk_ids, num_experts, group=None, format="mxfp8", scale_rule="rceil",
             scale_layout="blocked", alignment=32, tensor_amax=None):
    """Sends each token to the ranks of its top-k experts, quantized, and returns this rank's
    expert-major rows as a DispatchResult (see its docstring and docs/expert-parallel.md).

    x: (T, K) bf16 (fp16, fp32 work too) on this rank's device (CUDA with NCCL, CPU with gloo).
    topk_ids: (T, k) integer expert ids in [0, num_experts) (not checked: that would read them on
    the host); every rank of `group` holds num_experts / world experts, rank r experts
    [r*G, (r+1)*G). format / scale_rule / scale_layout: as mxq.quantize (rowwise).
    alignment: each expert's rows start at a multiple of it (a power of two; 0: unpadded).
    tensor_amax: nvfp4 only, float32 (1,), the same on every rank; None: the amax of all ranks'
    tokens, by an all_reduce(MAX) of each rank's mxq.tensor_amax(x) (a NaN may not survive that
    all-reduce: give tensor_amax to control it).

    Quantizes the T local tokens once, then moves the T*k (token, expert) pairs' codes and scales
    in one all_to_all_single. Host sync: one device-to-host copy of the per-rank row counts, which
    all_to_all_single needs as split sizes (after a small all-to-all of the per-expert counts).

    Autograd: the codes cannot carry a gradient, so grad_carrier does: pass it as an input to the
    autograd Function that consumes data (the grouped GEMM) and return the gradient of the
    dispatched activation, (P, K) (padding rows ignored), as its gradient. Dispatch's backward
    sends it back in that dtype and sums each token's k slots in fp32 (slot order) into x.grad.
    """
    if x.dim() != 2 or topk_ids.dim() != 2 or topk_ids.shape[0] != x.shape[0]:
        raise InvalidArgument(f"dispatch: expected x (T, K) and topk_ids (T, k) (got "
                              f"{tuple(x.shape)} and {tuple(topk_ids.shape)})")
    if topk_ids.shape[1] < 1 or topk_ids.dtype.is_floating_point or topk_ids.device != x.device:
        raise InvalidArgument("dispatch: topk_ids must be integers, k >= 1, on x's device")
    if scale_layout not in ("blocked", "linear"):
        raise InvalidArgument(f"dispatch: scale_layout must be 'blocked' or 'linear' "
                              f"(got {scale_layout!r})")
    if format == "nvfp4" and tensor_amax is None:
        tensor_amax = _tensor_amax(x.detach())
        dist.all_reduce(tensor_amax, op=dist.ReduceOp.MAX, group=group)
    h = _plan(topk_ids, num_experts, alignment, group)
    data, scales, s_enc, s_dec, carrier = _Dispatch.apply(x, h, format, scale_rule,
                                                         scale_layout, tensor_amax)
    return DispatchResult(data, scales, h.group_ends, h.padded_starts, h.padded_ends, s_enc,
                          s_dec, carrier, h)


def combine(y, handle, topk_weights=None):
    """The inverse of dispatch, in y's dtype (bf16): y (P, H) holds one output row per row of the
    dispatched data (padding rows are ignored); returns (T, H) for this rank's tokens,

        out[t] = sum over j = 0..k-1 of  w[t, j] * y_(t, j)

    with y_(t, j) the row that expert topk_ids[t, j] produced for token t, products and sum in
    fp32 in slot order (w[t, 0] * y_(t, 0) first), rounded once to y's dtype; without
    topk_weights the plain sum. One all_to_all_single, no host sync (the split sizes are the
    handle's). Differentiable in y and topk_weights: y's gradient goes back to the experts'
    ranks dispatch-like (in the gradient's dtype, padding rows 0), the weights' is
    sum_h grad[t, h] * y_(t, j)[h] in fp32."""
    if y.dim() != 2 or y.shape[0] != handle.rows:
        raise InvalidArgument(f"combine: expected y with {handle.rows} rows, one per dispatched "
                              f"row (got shape {tuple(y.shape)})")
    pairs = _Combine.apply(y, handle)
    if topk_weights is None:
        return _sum_slots(pairs).to(y.dtype)
    if tuple(topk_weights.shape) != (handle.num_tokens, handle.topk):
        raise InvalidArgument(f"combine: topk_weights must be ({handle.num_tokens}, "
                              f"{handle.topk}) (got {tuple(topk_weights.shape)})")
    return _WeightedSum.apply(pairs, topk_weights)
