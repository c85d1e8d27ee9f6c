"""torch support: the torch adapter of _core.py and the torch.library custom ops `mxq::*`.

Imported only when a torch tensor is first seen (or by mxq.register_torch_ops()), so that the numpy
path never needs torch. Every op is a custom op with a fake (meta) implementation giving exact
output shapes, dtypes and strides (contiguous), so that it traces under torch.compile(fullgraph=
True), passes torch.library.opcheck and can be captured in a CUDA graph: CUDA tensors run on the
cuda backend on torch.cuda.current_stream(), with no host synchronisation and no allocation outside
torch's caching allocator. Ops return fresh tensors, never write into arguments (torch 2.11 cannot
compile ops that write into float8 out-arguments).

dtypes: fp8 data torch.float8_e4m3fn (mxfp8) / torch.float8_e5m2 (mxfp8_e5m2); fp4 data (mxfp4,
nvfp4) torch.uint8, two codes per byte, element 2i in the low nibble; MX scales
torch.float8_e8m0fnu; nvfp4 block scales torch.float8_e4m3fn; s_enc, s_dec float32;
padded_starts/ends int32. Outputs a call does not produce are empty (0,) tensors in the op and
None in mxq.quantize's result.
"""
import contextlib
from typing import List, Optional, Tuple

import torch

from . import _abi
from . import _core
from . import _shapes
from .errors import InvalidArgument

Tensor = torch.Tensor

_INPUT_DTYPES = {
    torch.bfloat16: _abi.DTYPE["bf16"],
    torch.float16: _abi.DTYPE["fp16"],
    torch.float32: _abi.DTYPE["fp32"],
    # One-byte payloads (pad / unpad of quantized data).
    torch.uint8: _abi.DTYPE["u8"],
    torch.int8: _abi.DTYPE["u8"],
    torch.float8_e4m3fn: _abi.DTYPE["u8"],
    torch.float8_e5m2: _abi.DTYPE["u8"],
    torch.float8_e8m0fnu: _abi.DTYPE["u8"],
}
_EMPTY_DTYPES = {
    "u8": torch.uint8, "i32": torch.int32, "f32": torch.float32, "fp32": torch.float32,
    "fp16": torch.float16, "bf16": torch.bfloat16, "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2, "e8m0": torch.float8_e8m0fnu,
}
OUT_DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


def _strides_ok(x):
    """Innermost stride 1, row/batch strides that do not overlap (else the op copies)."""
    st, rows, cols = x.stride(), x.shape[-2], x.shape[-1]
    if cols > 1 and st[-1] != 1:
        return False
    if rows > 1 and st[-2] < cols:
        return False
    if x.dim() == 3 and x.shape[0] > 1:
        extent = (rows - 1) * st[-2] + cols if rows else 0
        if st[0] < extent:
            return False
    return True


class TorchAdapter:
    def input_view(self, x):
        if x.dim() not in (2, 3):
            raise InvalidArgument(f"expected a 2-D (M, K) or 3-D (B, M, K) tensor (got shape "
                                  f"{tuple(x.shape)})")
        code = _INPUT_DTYPES.get(x.dtype)
        if code is None:
            raise InvalidArgument(f"unsupported tensor dtype {x.dtype} (bfloat16, float16, "
                                  f"float32, or a one-byte dtype for pad/unpad)")
        if not _strides_ok(x):
            x = x.contiguous()
        st = x.stride()
        rows, cols = x.shape[-2], x.shape[-1]
        batch = x.shape[0] if x.dim() == 3 else 1
        row_stride = st[-2] if rows > 1 else 0
        batch_stride = st[0] if x.dim() == 3 and batch > 1 else 0
        return x, (x.data_ptr(), batch, rows, cols, row_stride, batch_stride, code), x.dim() == 3

    @staticmethod
    def ptr(t):
        return 0 if t is None else t.data_ptr()

    @staticmethod
    def nbytes(t):
        return t.numel() * t.element_size()

    @staticmethod
    def shape(t):
        return tuple(t.shape)

    @staticmethod
    def contiguous(t):
        return t.contiguous()

    @staticmethod
    def _vector(t, dtype, like, what):
        if not isinstance(t, Tensor):
            raise InvalidArgument(f"{what} must be a tensor")
        if t.device != like.device:
            raise InvalidArgument(f"{what} is on {t.device} but the input is on {like.device}")
        if t.dim() != 1:
            raise InvalidArgument(f"{what} must be 1-D (got shape {tuple(t.shape)})")
        return t.to(dtype).contiguous()

    def int32_vector(self, t, like):
        return self._vector(t, torch.int32, like, "group_ends")

    def float32_vector(self, t, like):
        return self._vector(t, torch.float32, like, "tensor scale vector")

    @staticmethod
    def empty(shape, key, like):
        dtype = like.dtype if key == "same" else _EMPTY_DTYPES[key]
        return torch.empty(shape, dtype=dtype, device=like.device)

    @staticmethod
    def exec_args(like):
        if like.is_cuda:
            return _abi.BACKEND_CUDA, _raw_stream(like.get_device())
        return _abi.BACKEND_CPU, 0


# The current stream's handle: torch's raw-stream query (what torch.compile's generated code
# uses) costs 0.3 µs per call against 3-4 µs for torch.cuda.current_stream(device).cuda_stream
# (the H100 machine's host).
_raw_stream_query = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _raw_stream(index):
    if _raw_stream_query is not None:
        return _raw_stream_query(index)
    return torch.cuda.current_stream(index).cuda_stream


ADAPTER = TorchAdapter()


def _device_of(t):
    """Makes t's CUDA device current for the call (the cuda backend launches on the current
    device); a no-op on the common path where it already is."""
    if t.is_cuda and t.device.index != torch.cuda.current_device():
        return torch.cuda.device(t.device)
    return contextlib.nullcontext()


def _present(format, direction, pad_rowwise, pad_colwise):
    """Which of quantize's 8 outputs a call produces."""
    row = direction in ("rowwise", "both")
    col = direction in ("colwise", "both")
    nv = format == "nvfp4"
    pads = bool(pad_rowwise or pad_colwise)
    return (row, row, col, col, nv, nv, pads, pads)


def _quantize_dtypes(format):
    d, s = _EMPTY_DTYPES[_core.DATA_KEY[format]], _EMPTY_DTYPES[_core.SCALE_KEY[format]]
    return (d, s, d, s, torch.float32, torch.float32, torch.int32, torch.int32, torch.float32)


# ---- custom ops -------------------------------------------------------------------------------

@torch.library.custom_op("mxq::quantize", mutates_args=())
def _quantize(x: Tensor, format: str, direction: str, scale_rule: str, scale_layout: str,
              group_ends: Optional[Tensor], pad_rowwise: int, pad_colwise: int,
              tensor_amax: Optional[Tensor], with_amax: bool = False
              ) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    with _device_of(x):
        outs = _core.quantize(ADAPTER, x, format, direction, scale_rule, scale_layout, group_ends,
                              pad_rowwise, pad_colwise, tensor_amax, with_amax)
    return tuple(o if o is not None else torch.empty(0, dtype=dt, device=x.device)
                 for o, dt in zip(outs, _quantize_dtypes(format)))


@_quantize.register_fake
def _(x, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise, pad_colwise,
      tensor_amax, with_amax=False):
    batched = x.dim() == 3
    B = x.shape[0] if batched else 1
    G = group_ends.shape[0] if group_ends is not None else 0
    shapes = _shapes.quantize_shapes(format, direction, scale_layout, batched, B, x.shape[-2],
                                     x.shape[-1], G, pad_rowwise, pad_colwise)
    shapes = tuple(shapes) + ((B,) if with_amax else None,)
    return tuple(x.new_empty(s if s is not None else (0,), dtype=dt)
                 for s, dt in zip(shapes, _quantize_dtypes(format)))


@torch.library.custom_op("mxq::dequantize", mutates_args=())
def _dequantize(data: Tensor, scales: Tensor, s_dec: Optional[Tensor], shape: List[int],
                format: str, direction: str, scale_rule: str, scale_layout: str,
                group_ends: Optional[Tensor], pad_rowwise: int, pad_colwise: int,
                out_dtype: torch.dtype) -> Tensor:
    with _device_of(data):
        return _core.dequantize(ADAPTER, data, scales, shape, format, direction, scale_rule,
                                scale_layout, group_ends, pad_rowwise, pad_colwise, s_dec,
                                out_key(out_dtype))


@_dequantize.register_fake
def _(data, scales, s_dec, shape, format, direction, scale_rule, scale_layout, group_ends,
      pad_rowwise, pad_colwise, out_dtype):
    batched = len(shape) == 3
    B = shape[0] if batched else 1
    G = group_ends.shape[0] if group_ends is not None else 0
    out = _shapes.dequantize_shape(direction, batched, B, shape[-2], shape[-1], G, pad_rowwise,
                                   pad_colwise)
    return data.new_empty(out, dtype=out_dtype)


@torch.library.custom_op("mxq::tensor_amax", mutates_args=())
def _tensor_amax(x: Tensor) -> Tensor:
    with _device_of(x):
        return _core.tensor_amax(ADAPTER, x)


@_tensor_amax.register_fake
def _(x):
    return x.new_empty((x.shape[0] if x.dim() == 3 else 1,), dtype=torch.float32)


@torch.library.custom_op("mxq::pad", mutates_args=())
def _pad(x: Tensor, group_ends: Tensor, alignment: int,
         with_amax: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    with _device_of(x):
        return _core.pad(ADAPTER, x, group_ends, alignment, with_amax)


@_pad.register_fake
def _(x, group_ends, alignment, with_amax):
    G = group_ends.shape[0]
    rows = _shapes.padded_rows(x.shape[0], G, alignment)
    return (x.new_empty((rows, x.shape[1])), x.new_empty((G,), dtype=torch.int32),
            x.new_empty((G,), dtype=torch.int32),
            x.new_empty((1 if with_amax else 0,), dtype=torch.float32))


@torch.library.custom_op("mxq::unpad", mutates_args=())
def _unpad(x: Tensor, group_ends: Tensor, alignment: int, rows: int,
           with_amax: bool) -> Tuple[Tensor, Tensor]:
    with _device_of(x):
        return _core.unpad(ADAPTER, x, group_ends, alignment, rows, with_amax)


@_unpad.register_fake
def _(x, group_ends, alignment, rows, with_amax):
    return (x.new_empty((rows, x.shape[1])),
            x.new_empty((1 if with_amax else 0,), dtype=torch.float32))


@torch.library.custom_op("mxq::swizzle", mutates_args=())
def _swizzle(scales: Tensor, group_ends: Optional[Tensor], group_axis: str) -> Tensor:
    with _device_of(scales):
        return _core.swizzle(ADAPTER, scales, group_ends, group_axis)


@_swizzle.register_fake
def _(scales, group_ends, group_axis):
    batched = scales.dim() == 3
    B = scales.shape[0] if batched else 1
    G = group_ends.shape[0] if group_ends is not None else 0
    return scales.new_empty(_shapes.swizzle_shape(batched, B, scales.shape[-2], scales.shape[-1],
                                                  group_axis, G))


@torch.library.custom_op("mxq::unswizzle", mutates_args=())
def _unswizzle(blocked: Tensor, shape: List[int], group_ends: Optional[Tensor],
               group_axis: str) -> Tensor:
    with _device_of(blocked):
        return _core.unswizzle(ADAPTER, blocked, shape, group_ends, group_axis)


@_unswizzle.register_fake
def _(blocked, shape, group_ends, group_axis):
    return blocked.new_empty(tuple(shape))


# ---- the package's torch entry points (called by mxq.quantize & co. for torch tensors) ----------
#
# Eager calls on plain tensors run the op's implementation directly: through the custom op (its
# dispatch, autograd wrapper and output aliasing checks) a quantize call took 69-120 µs on the
# host against 27-63 µs directly in the same process (H100 machine, torch 2.11, mxq.overhead),
# more than the rowwise kernel at 16384 x 2048 (41 µs): the host would set the pace of an eager
# MoE step. Anything torch must see (torch.compile tracing, fake, functional or other subclass
# tensors, an active dispatch mode) goes through torch.ops.mxq.*; the bytes written are the same.

_PLAIN_TENSORS = (Tensor, torch.nn.Parameter)
_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None)


def _direct(t):
    return (not torch.compiler.is_compiling() and type(t) in _PLAIN_TENSORS
            and (_dispatch_modes is None or _dispatch_modes() == 0))


def out_key(out_dtype):
    try:
        return OUT_DTYPES[out_dtype]
    except KeyError:
        raise InvalidArgument(f"out_dtype must be torch.float32, torch.float16 or torch.bfloat16 "
                              f"(got {out_dtype!r})") from None


def as_group_ends(group_ends, like):
    """Group ends as a tensor on like's device (a Python list costs a host-to-device copy)."""
    if group_ends is None or isinstance(group_ends, Tensor):
        return group_ends
    return torch.tensor(group_ends, dtype=torch.int32, device=like.device)


def quantize(x, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise, pad_colwise,
             tensor_amax, with_amax=False):
    ends = as_group_ends(group_ends, x)
    if _direct(x):
        with _device_of(x):
            return _core.quantize(ADAPTER, x, format, direction, scale_rule, scale_layout, ends,
                                  pad_rowwise, pad_colwise, tensor_amax, with_amax)
    outs = torch.ops.mxq.quantize(x, format, direction, scale_rule, scale_layout, ends,
                                  pad_rowwise, pad_colwise, tensor_amax, with_amax)
    present = _present(format, direction, pad_rowwise, pad_colwise) + (with_amax,)
    return tuple(o if p else None for o, p in zip(outs, present))


def dequantize(data, scales, shape, format, direction, scale_rule, scale_layout, group_ends,
               pad_rowwise, pad_colwise, s_dec, out_dtype):
    ends = as_group_ends(group_ends, data)
    if _direct(data):
        with _device_of(data):
            return _core.dequantize(ADAPTER, data, scales, shape, format, direction, scale_rule,
                                    scale_layout, ends, pad_rowwise, pad_colwise, s_dec,
                                    out_key(out_dtype))
    return torch.ops.mxq.dequantize(data, scales, s_dec, list(shape), format, direction,
                                    scale_rule, scale_layout, ends, pad_rowwise, pad_colwise,
                                    out_dtype)


def tensor_amax(x):
    if _direct(x):
        with _device_of(x):
            return _core.tensor_amax(ADAPTER, x)
    return torch.ops.mxq.tensor_amax(x)


def pad(x, group_ends, alignment, with_amax):
    ends = as_group_ends(group_ends, x)
    if _direct(x):
        with _device_of(x):
            return _core.pad(ADAPTER, x, ends, alignment, with_amax)
    return torch.ops.mxq.pad(x, ends, alignment, with_amax)


def unpad(x, group_ends, alignment, rows, with_amax):
    ends = as_group_ends(group_ends, x)
    if _direct(x):
        with _device_of(x):
            return _core.unpad(ADAPTER, x, ends, alignment, rows, with_amax)
    return torch.ops.mxq.unpad(x, ends, alignment, rows, with_amax)


def swizzle(scales, group_ends, group_axis):
    ends = as_group_ends(group_ends, scales)
    if _direct(scales):
        with _device_of(scales):
            return _core.swizzle(ADAPTER, scales, ends, group_axis)
    return torch.ops.mxq.swizzle(scales, ends, group_axis)


def unswizzle(blocked, shape, group_ends, group_axis):
    ends = as_group_ends(group_ends, blocked)
    if _direct(blocked):
        with _device_of(blocked):
            return _core.unswizzle(ADAPTER, blocked, shape, ends, group_axis)
    return torch.ops.mxq.unswizzle(blocked, list(shape), ends, group_axis)


def validate_group_ends(group_ends, rows):
    with _device_of(group_ends):
        _core.validate_group_ends(ADAPTER, group_ends, rows)
