"""The numpy adapter of _core.py: host arrays on the CPU backend.

numpy has no bf16 or fp8 dtypes, so bf16 tensors are uint16 arrays of bf16 bit patterns (in and
out), and quantized data and scales of every format are uint8 arrays of the codes.
"""
import numpy as np

from . import _abi

_INPUT_DTYPES = {
    np.dtype(np.float32): _abi.DTYPE["fp32"],
    np.dtype(np.float16): _abi.DTYPE["fp16"],
    np.dtype(np.uint16): _abi.DTYPE["bf16"],  # bf16 bit patterns
    np.dtype(np.uint8): _abi.DTYPE["u8"],
    np.dtype(np.int8): _abi.DTYPE["u8"],
}
_EMPTY_DTYPES = {"f32": np.float32, "fp32": np.float32, "fp16": np.float16, "bf16": np.uint16,
                 "i32": np.int32}
# numpy spellings accepted for dequantize's out_dtype.
OUT_DTYPES = {np.dtype(np.float32): "fp32", np.dtype(np.float16): "fp16",
              np.dtype(np.uint16): "bf16"}


def _invalid(message):
    from .errors import InvalidArgument
    return InvalidArgument(message)


def _strides_ok(a):
    """Innermost stride 1 element, row/batch strides whole elements that do not overlap."""
    item = a.itemsize
    if a.strides[-1] != item:
        return False
    rows, cols = a.shape[-2], a.shape[-1]
    rs = a.strides[-2]
    if rows > 1 and (rs % item or rs < cols * item):
        return False
    if a.ndim == 3 and a.shape[0] > 1:
        bs = a.strides[0]
        extent = ((rows - 1) * rs + cols * item) if rows else 0
        if bs % item or bs < extent:
            return False
    return True


class NumpyAdapter:
    def input_view(self, x):
        if x.ndim not in (2, 3):
            raise _invalid(f"expected a 2-D (M, K) or 3-D (B, M, K) array (got shape {x.shape})")
        code = _INPUT_DTYPES.get(x.dtype)
        if code is None:
            raise _invalid(f"unsupported array dtype {x.dtype} (float32, float16, uint16 holding "
                           f"bf16 bits, or uint8)")
        if not _strides_ok(x):
            x = np.ascontiguousarray(x)
        item = x.itemsize
        rows, cols = x.shape[-2], x.shape[-1]
        batch = x.shape[0] if x.ndim == 3 else 1
        row_stride = x.strides[-2] // item if rows > 1 else 0
        batch_stride = x.strides[0] // item if x.ndim == 3 and batch > 1 else 0
        return x, (x.ctypes.data, batch, rows, cols, row_stride, batch_stride, code), x.ndim == 3

    @staticmethod
    def ptr(a):
        return 0 if a is None else a.ctypes.data

    @staticmethod
    def nbytes(a):
        return a.nbytes

    @staticmethod
    def itemsize(a):
        return a.itemsize

    @staticmethod
    def shape(a):
        return a.shape

    @staticmethod
    def contiguous(a):
        return np.ascontiguousarray(a)

    @staticmethod
    def int32_vector(a, like):
        v = np.asarray(a)
        if v.ndim != 1:
            raise _invalid(f"group_ends must be 1-D (got shape {v.shape})")
        if v.dtype != np.int32:
            if v.size and (v.dtype.kind not in "iu" or v.min() < -2**31 or v.max() >= 2**31):
                raise _invalid(f"group_ends must be int32 values (got {v.dtype})")
            v = v.astype(np.int32)
        return np.ascontiguousarray(v)

    @staticmethod
    def float32_vector(a, like):
        return np.ascontiguousarray(a, dtype=np.float32).reshape(-1)

    @staticmethod
    def empty(shape, key, like):
        dtype = like.dtype if key == "same" else _EMPTY_DTYPES.get(key, np.uint8)
        return np.empty(shape, dtype)

    @staticmethod
    def exec_args(like):
        return _abi.BACKEND_CPU, 0


ADAPTER = NumpyAdapter()


def out_key(out_dtype):
    """'bf16' / 'fp16' / 'fp32', numpy dtypes (uint16 = bf16 bits) or their names."""
    if out_dtype in ("bf16", "fp16", "fp32"):
        return out_dtype
    if out_dtype == "bfloat16":
        return "bf16"
    try:
        return OUT_DTYPES[np.dtype(out_dtype)]
    except (TypeError, KeyError):
        raise _invalid(f"out_dtype must be float32, float16 or 'bfloat16' (got {out_dtype!r})") from None
