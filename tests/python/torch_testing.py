"""Helpers of the torch tests (imported only by test_torch_*.py, after torch is known to exist)."""
import contextlib

import numpy as np
import pytest
import torch

import mxq
from mxq_testing import rng, to_bf16_bits

CUDA = torch.cuda.is_available() and mxq.cuda_available()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not CUDA, reason="needs a CUDA device and libmxq built with CUDA"))]


@contextlib.contextmanager
def skip_unsupported():
    """Ops the cuda backend does not implement yet raise mxq.Unsupported: skip, do not fail."""
    try:
        yield
    except Exception as e:  # torch.compile may wrap the op's exception
        cause = e
        while cause is not None and not isinstance(cause, mxq.Unsupported):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            raise
        pytest.skip(f"not implemented on this backend yet: {cause}")


def bf16_pair(shape, seed, scale=1.0):
    """The same bf16 values as a numpy uint16 bit array and a torch.bfloat16 CPU tensor."""
    bits = to_bf16_bits(rng(seed).standard_normal(shape).astype(np.float32) * np.float32(scale))
    return bits, torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16)


def as_bytes(a):
    """numpy uint8 view of any numpy array or torch tensor (any device), for byte comparisons."""
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().contiguous().view(torch.uint8).numpy()
    return np.ascontiguousarray(a).view(np.uint8)


def assert_same_bytes(got, want):
    assert (got is None) == (want is None)
    if want is not None:
        g, w = as_bytes(got), as_bytes(want)
        np.testing.assert_array_equal(g, w)
