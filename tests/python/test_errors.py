"""Failures surface as the mxq.Error hierarchy with the library's own message."""
import numpy as np
import pytest

import mxq
from mxq import _abi

X = np.ones((64, 64), np.float32)


def test_hierarchy():
    for cls, base in [(mxq.InvalidArgument, ValueError), (mxq.Unsupported, NotImplementedError),
                      (mxq.CudaError, RuntimeError), (mxq.InvalidOffsets, ValueError)]:
        assert issubclass(cls, mxq.Error) and issubclass(cls, base)
    assert [c.code for c in (mxq.InvalidArgument, mxq.Unsupported, mxq.CudaError,
                             mxq.InvalidOffsets)] == [1, 2, 3, 4]


def test_library_message_is_carried():
    with pytest.raises(mxq.InvalidArgument) as e:
        mxq.quantize(X, group_ends=np.array([64], np.int32), pad_rowwise=3)
    assert str(e.value) == mxq.library().last_error().decode()
    assert str(e.value).startswith("quantize_sizes: groups.pad_rowwise (3) must be 0")
    assert e.value.code == _abi.ERR_INVALID_ARGUMENT


@pytest.mark.parametrize("call,message", [
    (lambda: mxq.quantize(np.ones((4, 33), np.float32), format="mxfp4"), "must be even"),
    (lambda: mxq.quantize(np.ones((3, 4, 64), np.float32), group_ends=[4]), "batch == 1"),
    (lambda: mxq.quantize(X, pad_rowwise=32), "groups.groups.count is 0"),
    (lambda: mxq.quantize(X, tensor_amax=[1.0]), "nvfp4 only"),
    (lambda: mxq.quantize(np.ones((4, 32, 32), np.float32), format="nvfp4", tensor_amax=[1.0]),
     "tensor_amax has 1 elements but the input has 4 batches"),
    (lambda: mxq.dequantize(np.ones((4, 32, 16), np.uint8), np.ones(4, np.uint8), (4, 32, 32),
                            format="nvfp4", s_dec=np.ones(1, np.float32)),
     "s_dec has 1 elements but the input has 4 batches"),
    (lambda: mxq.pad(X, [64], alignment=3), "alignment (3)"),
    (lambda: mxq.unpad(X, [64], 64, alignment=32), "input.rows (64) must be >="),
    (lambda: mxq.swizzle(np.ones((4, 4), np.uint8), group_axis="m"), "groups.count is 0"),
    (lambda: mxq.dequantize(np.ones((64, 64), np.uint8), np.ones(512, np.uint8), (64, 64),
                            direction="both"), "rowwise' or 'colwise'"),
])
def test_invalid_arguments(call, message):
    with pytest.raises(mxq.InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


@pytest.mark.parametrize("call", [
    lambda: mxq.quantize(X, format="mxfp6"),
    lambda: mxq.quantize(X, direction="sideways"),
    lambda: mxq.quantize(X, scale_rule="round"),
    lambda: mxq.quantize(X, scale_layout="tiled"),
    lambda: mxq.quantize(np.ones((2, 2, 2, 32), np.float32)),
    lambda: mxq.quantize(np.ones((32, 32), np.int32)),
    lambda: mxq.swizzle(np.ones((4, 4), np.uint8), group_axis="n"),
    lambda: mxq.dequantize(X, X, X.shape, out_dtype=np.int32),
])
def test_invalid_python_arguments(call):
    with pytest.raises(mxq.InvalidArgument):
        call()


@pytest.mark.parametrize("call,message", [
    (lambda: mxq.quantize(X, pad_rowwise=2**40, group_ends=[64]), "pad_rowwise (1099511627776) is not an integer that fits"),
    (lambda: mxq.quantize(X, pad_rowwise=1.5, group_ends=[64]), "pad_rowwise (1.5) is not an integer"),
    (lambda: mxq.pad(X, [64], alignment=2.0), "alignment (2.0) is not an integer"),
    (lambda: mxq.unpad(X, [64], -1), "rows (-1) must be in [0,"),
    (lambda: mxq.unpad(X, [64], 1.5), "rows must be an integer"),
    (lambda: mxq.validate_group_ends(np.array([1], np.int32), 2**64 + 10), "rows (18446744073709551626) must be in"),
    (lambda: mxq.quantize([[1.0] * 32] * 32), "expected a numpy array or a torch tensor (got list)"),
    (lambda: mxq.tensor_amax(3.0), "expected a numpy array or a torch tensor (got float)"),
    (lambda: mxq.swizzle(np.ones((4, 4), np.float32)), "scales must have a one-byte dtype"),
    (lambda: mxq.unswizzle(np.ones(512, np.int32), (4, 4)), "blocked scales must have a one-byte dtype"),
    (lambda: mxq.dequantize(np.ones((64, 64), np.uint8), np.ones(512, np.uint8), (64, -64)), "shape (-64) must be in [0,"),
])
def test_python_arguments_raise_mxq_errors(call, message):
    """Out-of-range or non-integer numbers and non-arrays are InvalidArgument, never struct.error,
    a numpy error, a silently wrapped integer or uninitialised output."""
    with pytest.raises(mxq.InvalidArgument) as e:
        call()
    assert message in str(e.value)


def test_dequantize_checks_buffer_sizes():
    q = mxq.quantize(X)
    with pytest.raises(mxq.InvalidArgument, match="data has 4032 bytes"):
        mxq.dequantize(q.row_data[:63], q.row_scales, X.shape)
    with pytest.raises(mxq.InvalidArgument, match="scales has"):
        mxq.dequantize(q.row_data, q.row_scales[:-1], X.shape)
    with pytest.raises(mxq.InvalidArgument, match="blocked scales has"):
        mxq.unswizzle(q.row_scales[:-1], (64, 2))


def test_unsupported_backend_is_raised_as_unsupported():
    if mxq.cuda_available():
        pytest.skip("a CUDA device is present")
    lib = mxq.library()
    view = _abi.TensorView(X.ctypes.data, 1, 64, 64, 0, 0, _abi.DTYPE["fp32"])
    out = np.empty(1, np.float32)
    status = lib.tensor_amax(view, out.ctypes.data, _abi.BACKEND_CUDA, None)
    assert status == _abi.ERR_UNSUPPORTED
    with pytest.raises(mxq.Unsupported, match="backend cuda"):
        lib.check(status)


def test_a_failure_does_not_break_the_next_call():
    with pytest.raises(mxq.InvalidArgument):
        mxq.quantize(X, format="mxfp4", direction="colwise", group_ends=[3], pad_colwise=1)
    q = mxq.quantize(X)
    assert q.row_data.shape == (64, 64)


def test_library_location_is_reported():
    assert mxq.library().path in mxq.library_candidates()
    assert mxq.version()
