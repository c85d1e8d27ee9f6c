"""mxq.swiglu_quantize / swiglu_backward_quantize: the quantized outputs are exactly quantize() of
the computed tensor; the activation and gradients against float64 formulas; numpy and torch
(CPU, and CUDA where present) give the same bytes; errors name the rule."""
import numpy as np
import pytest

import mxq
from mxq_testing import from_bf16_bits, rng, to_bf16_bits

QUANT = dict(format="mxfp8", direction="both", scale_layout="blocked", group_ends=[0, 30, 30, 77],
             pad_rowwise=32, pad_colwise=32)


def _h(M, F, seed):
    return to_bf16_bits(rng(seed).standard_normal((M, 2 * F)).astype(np.float32) * 3)


def _halves(h, layout):
    x = from_bf16_bits(h).astype(np.float64)
    F = x.shape[1] // 2
    return (x[:, 0::2], x[:, 1::2]) if layout == "interleaved" else (x[:, :F], x[:, F:])


def _reference(gate, up, variant, alpha=1.702, limit=7.0):
    if variant == "silu":
        s = 1 / (1 + np.exp(-gate))
        return gate * s * up
    g = np.minimum(gate, limit)
    return (np.clip(up, -limit, limit) + 1) * g / (1 + np.exp(-alpha * g))


def _same(a, b):
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            assert np.array_equal(np.ascontiguousarray(x).view(np.uint8), np.ascontiguousarray(y).view(np.uint8))


@pytest.mark.parametrize("variant", ["silu", "clamped"])
@pytest.mark.parametrize("layout", ["concatenated", "interleaved"])
def test_forward_is_quantize_of_the_activation(variant, layout):
    h = _h(77, 96, 1)
    w = rng(2).random(77).astype(np.float32)
    q, a = mxq.swiglu_quantize(h, weights=w, variant=variant, layout=layout, keep_activation=True,
                              **QUANT)
    assert a.shape == (77, 96) and a.dtype == np.uint16
    _same(q, mxq.quantize(a, **QUANT))
    gate, up = _halves(h, layout)
    want = _reference(gate, up, variant) * w[:, None]
    np.testing.assert_allclose(from_bf16_bits(a), want, rtol=2 ** -8, atol=1e-6)


@pytest.mark.parametrize("variant", ["silu", "clamped"])
def test_backward_is_quantize_of_the_gradient(variant):
    h = _h(77, 64, 3)
    dA = rng(4).standard_normal((77, 64)).astype(np.float32)
    w = rng(5).random(77).astype(np.float32)
    q, dh, dw = mxq.swiglu_backward_quantize(dA, h, weights=w, variant=variant, keep_grad_input=True,
                                             **QUANT)
    assert dh.shape == (77, 128) and dw.shape == (77,)
    _same(q, mxq.quantize(dh, **QUANT))
    gate, up = _halves(h, "concatenated")
    act = _reference(gate, up, variant)
    np.testing.assert_allclose(dw, (dA.astype(np.float64) * act).sum(axis=1), rtol=1e-4, atol=1e-4)
    # d_up of silu: dA * w * silu(gate), rounded to bf16.
    if variant == "silu":
        want_up = dA * w[:, None] * gate / (1 + np.exp(-gate))
        np.testing.assert_allclose(from_bf16_bits(dh)[:, 64:], want_up, rtol=2 ** -7, atol=1e-5)
    q2, dh2, dw2 = mxq.swiglu_backward_quantize(dA, h, variant=variant, **QUANT)
    assert dw2 is None and dh2 is None


def test_errors_name_the_rule():
    with pytest.raises(mxq.InvalidArgument, match=r"input.cols \(63\) must be even"):
        mxq.swiglu_quantize(np.zeros((4, 63), np.float32))
    with pytest.raises(mxq.InvalidArgument, match="variant"):
        mxq.swiglu_quantize(np.zeros((4, 64), np.float32), variant="gelu")
    with pytest.raises(mxq.InvalidArgument, match="swiglu.limit"):
        mxq.swiglu_quantize(np.zeros((4, 64), np.float32), variant="clamped", limit=-1.0)
    with pytest.raises(mxq.InvalidArgument, match="weights"):
        mxq.swiglu_quantize(np.zeros((4, 64), np.float32), weights=np.ones(3, np.float32))


# nvfp4 without tensor_amax: the cuda backend writes the tensor, then quantizes it; mxfp8: it
# quantizes as it computes.
@pytest.mark.parametrize("kw", [
    dict(format="nvfp4", direction="both", scale_layout="blocked", group_ends=[10, 10, 100],
         pad_rowwise=128, pad_colwise=128, variant="clamped", layout="interleaved"),
    dict(format="mxfp8", direction="both", scale_layout="blocked", group_ends=[10, 10, 100],
         pad_rowwise=32, pad_colwise=32, variant="silu", layout="concatenated")])
def test_torch_matches_numpy(kw):
    torch = pytest.importorskip("torch")
    from torch_testing import DEVICES  # noqa: F401 - imported for its CUDA detection
    h = _h(130, 64, 6)
    dA = to_bf16_bits(rng(7).standard_normal((130, 64)).astype(np.float32))
    w = rng(8).random(130).astype(np.float32)
    want_f = mxq.swiglu_quantize(h, weights=w, keep_activation=True, **kw)
    want_b = mxq.swiglu_backward_quantize(dA, h, weights=w, keep_grad_input=True, **kw)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() and mxq.cuda_available() else [])
    as_t = lambda a: torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)  # noqa: E731
    for dev in devices:
        th, tdA, tw = as_t(h).to(dev), as_t(dA).to(dev), torch.from_numpy(w).to(dev)
        kw_t = dict(kw, group_ends=torch.tensor(kw["group_ends"], dtype=torch.int32, device=dev))
        as_np = lambda ts: [None if t is None else t.cpu().view(torch.uint8).numpy() for t in ts]  # noqa: E731
        for keep in (True, False):
            q, a = mxq.swiglu_quantize(th, weights=tw, keep_activation=keep, **kw_t)
            assert (a is not None) == keep
            _same([*want_f[0], want_f[1] if keep else None], as_np([*q, a]))
            qb, dh, dw = mxq.swiglu_backward_quantize(tdA, th, weights=tw, keep_grad_input=keep, **kw_t)
            _same([*want_b[0], want_b[1] if keep else None, want_b[2]], as_np([*qb, dh, dw]))
