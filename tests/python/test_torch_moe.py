"""The MoE expert MLP example (examples/moe_mxfp8_layer.py): MXFP8 forward and backward through
mxq against the bf16 reference, by SQNR. On torch CPU tensors (CPU backend) and on CUDA."""
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")

from mxq_testing import REPO  # noqa: E402
from torch_testing import CUDA, skip_unsupported  # noqa: E402


def _example():
    path = os.path.join(REPO, "examples", "moe_mxfp8_layer.py")
    spec = importlib.util.spec_from_file_location("moe_mxfp8_layer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check(device, **dims):
    moe = _example()
    with skip_unsupported():
        sqnr = moe.check(**dims, device=device)
    print(device, sqnr)
    for name, db in sqnr.items():
        assert db > moe.MIN_SQNR_DB, (name, db)


def test_moe_layer_cpu():
    _check("cpu", M=300, K=64, F=96, E=4)


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_moe_layer_cuda():
    _check("cuda", M=2048, K=512, F=1024, E=8)
