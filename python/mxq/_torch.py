"""torch support: mxq's native torch operators torch.ops.mxq.* (python/csrc/torch_ops.cpp, built
against the local torch when the package is installed) and their fake functions for torch.compile.

Imported on the first call with a torch tensor (or by mxq.register_torch_ops()), so that the numpy
path never needs torch. Each op runs in C++ from torch's dispatcher to the kernel launch: CUDA
tensors on the cuda backend on the tensor's device and torch's current stream, with no host
synchronisation and outputs from torch's caching allocator; CPU tensors on the CPU backend. The
fake functions below give exact output shapes, dtypes and (contiguous) strides from _shapes.py, on
symbolic sizes too, so that the ops trace under torch.compile(fullgraph=True, dynamic=True), pass
torch.library.opcheck and can be captured in CUDA graphs. Ops return fresh tensors and never write
into their arguments.

dtypes: fp8 data torch.float8_e4m3fn (mxfp8) / torch.float8_e5m2 (mxfp8_e5m2); fp4 data (mxfp4,
nvfp4) torch.uint8, two codes per byte, element 2i in the low nibble; MX scales
torch.float8_e8m0fnu; nvfp4 block scales torch.float8_e4m3fn; s_enc, s_dec float32;
padded_starts/ends int32. torch.ops.mxq.quantize returns only the outputs the call produces, in
QuantizeResult's order; mxq.quantize puts None in the places of the others.
"""
import torch

from . import _shapes
from .errors import CudaError, InvalidArgument, Unsupported

INSTALL_COMMAND = "pip install --no-build-isolation ./python"

try:
    from . import _torch_ops  # noqa: F401  (registers torch.ops.mxq.*)
except ImportError as e:
    raise ImportError(
        f"mxq: the native torch operators (mxq._torch_ops) are not built for this torch "
        f"{torch.__version__}: install the package on this machine, with torch installed, from the "
        f"mxq repository root: {INSTALL_COMMAND}  (cause: {e})") from e

Tensor = torch.Tensor
_ops = torch.ops.mxq
_quantize = _ops.quantize.default
_dequantize = _ops.dequantize.default
_tensor_amax = _ops.tensor_amax.default
_swiglu_quantize = _ops.swiglu_quantize.default
_swiglu_backward_quantize = _ops.swiglu_backward_quantize.default
_pad = _ops.pad.default
_unpad = _ops.unpad.default
_swizzle = _ops.swizzle.default
_unswizzle = _ops.unswizzle.default

_DATA_DTYPES = {"mxfp8": torch.float8_e4m3fn, "mxfp8_e5m2": torch.float8_e5m2,
                "mxfp4": torch.uint8, "nvfp4": torch.uint8}
_SCALE_DTYPES = {"mxfp8": torch.float8_e8m0fnu, "mxfp8_e5m2": torch.float8_e8m0fnu,
                 "mxfp4": torch.float8_e8m0fnu, "nvfp4": torch.float8_e4m3fn}


def _raise(e):
    """The operators raise ValueError / NotImplementedError / RuntimeError with the library's
    message; the package raises its own classes, which derive from those. RuntimeError subclasses
    (out of memory, say) are torch's, not the library's: they pass unchanged."""
    if isinstance(e, ValueError):
        raise InvalidArgument(str(e)) from None
    if isinstance(e, NotImplementedError):
        raise Unsupported(str(e)) from None
    if type(e) is RuntimeError:
        raise CudaError(str(e)) from None
    raise e


# ---- fake (meta) functions: shapes only, symbolic sizes included --------------------------------

def _quantize_dtypes(format):
    d, s = _DATA_DTYPES[format], _SCALE_DTYPES[format]
    return (d, s, d, s, torch.float32, torch.float32, torch.int32, torch.int32, torch.float32)


@torch.library.register_fake("mxq::quantize")
def _(x, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise, pad_colwise,
      tensor_amax, with_amax=False):
    batched = x.dim() == 3
    B = x.shape[0] if batched else 1
    G = group_ends.shape[0] if group_ends is not None else 0
    shapes = _shapes.quantize_shapes(format, direction, scale_layout, batched, B, x.shape[-2],
                                     x.shape[-1], G, pad_rowwise, pad_colwise)
    shapes = tuple(shapes) + ((B,) if with_amax else None,)
    return [x.new_empty(s, dtype=dt) for s, dt in zip(shapes, _quantize_dtypes(format))
            if s is not None]


def _fake_quantized(format, direction, scale_layout, like, M, cols, group_ends, pad_rowwise,
                    pad_colwise):
    G = group_ends.shape[0] if group_ends is not None else 0
    shapes = _shapes.quantize_shapes(format, direction, scale_layout, False, 1, M, cols, G,
                                     pad_rowwise, pad_colwise)
    return [like.new_empty(s, dtype=dt) for s, dt in zip(shapes, _quantize_dtypes(format))
            if s is not None]


@torch.library.register_fake("mxq::swiglu_quantize")
def _(h, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise, pad_colwise,
      tensor_amax, weights, variant, layout, alpha, limit, keep_computed=False):
    M, F = h.shape[0], h.shape[1] // 2
    return _fake_quantized(format, direction, scale_layout, h, M, F, group_ends, pad_rowwise,
                           pad_colwise) + ([h.new_empty((M, F))] if keep_computed else [])


@torch.library.register_fake("mxq::swiglu_backward_quantize")
def _(grad, h, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise, pad_colwise,
      tensor_amax, weights, variant, layout, alpha, limit, keep_computed=False):
    M, K = h.shape[0], h.shape[1]
    outs = _fake_quantized(format, direction, scale_layout, h, M, K, group_ends, pad_rowwise,
                           pad_colwise) + ([h.new_empty((M, K))] if keep_computed else [])
    if weights is not None:
        outs.append(h.new_empty((M,), dtype=torch.float32))
    return outs


@torch.library.register_fake("mxq::dequantize")
def _(data, scales, s_dec, shape, format, direction, scale_rule, scale_layout, group_ends,
      pad_rowwise, pad_colwise, out_dtype):
    batched = len(shape) == 3
    B = shape[0] if batched else 1
    G = group_ends.shape[0] if group_ends is not None else 0
    out = _shapes.dequantize_shape(direction, batched, B, shape[-2], shape[-1], G, pad_rowwise,
                                   pad_colwise)
    return data.new_empty(out, dtype=out_dtype)


@torch.library.register_fake("mxq::tensor_amax")
def _(x):
    return x.new_empty((x.shape[0] if x.dim() == 3 else 1,), dtype=torch.float32)


@torch.library.register_fake("mxq::pad")
def _(x, group_ends, alignment, with_amax):
    G = group_ends.shape[0]
    rows = _shapes.padded_rows(x.shape[0], G, alignment)
    return (x.new_empty((rows, x.shape[1])), x.new_empty((G,), dtype=torch.int32),
            x.new_empty((G,), dtype=torch.int32),
            x.new_empty((1 if with_amax else 0,), dtype=torch.float32))


@torch.library.register_fake("mxq::unpad")
def _(x, group_ends, alignment, rows, with_amax):
    return (x.new_empty((rows, x.shape[1])),
            x.new_empty((1 if with_amax else 0,), dtype=torch.float32))


@torch.library.register_fake("mxq::swizzle")
def _(scales, group_ends, group_axis):
    batched = scales.dim() == 3
    B = scales.shape[0] if batched else 1
    G = group_ends.shape[0] if group_ends is not None else 0
    return scales.new_empty(_shapes.swizzle_shape(batched, B, scales.shape[-2], scales.shape[-1],
                                                  group_axis, G))


@torch.library.register_fake("mxq::unswizzle")
def _(blocked, shape, group_ends, group_axis):
    return blocked.new_empty(tuple(shape))


# ---- the package's torch entry points (mxq.quantize & co. for torch tensors) --------------------

def _positions(format, direction, pads, with_amax):
    """The places in QuantizeResult of the outputs torch.ops.mxq.quantize returns."""
    row = direction in ("rowwise", "both")
    col = direction in ("colwise", "both")
    nv = format == "nvfp4"
    present = (row, row, col, col, nv, nv, pads, pads, with_amax)
    return tuple(i for i, p in enumerate(present) if p)


# Every combination, computed once: a lookup per call, and nothing for torch.compile to trace.
_POSITIONS = {(f, d, pads, amax): _positions(f, d, pads, amax)
              for f in _DATA_DTYPES for d in ("rowwise", "colwise", "both")
              for pads in (False, True) for amax in (False, True)}


def as_group_ends(group_ends, like):
    """Group ends as a tensor on like's device (a Python list costs a host-to-device copy)."""
    if group_ends is None or isinstance(group_ends, Tensor):
        return group_ends
    return torch.tensor(group_ends, dtype=torch.int32, device=like.device)


def quantize(x, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise, pad_colwise,
             tensor_amax, with_amax=False):
    try:
        outs = _quantize(x, format, direction, scale_rule, scale_layout,
                         as_group_ends(group_ends, x), pad_rowwise, pad_colwise, tensor_amax,
                         with_amax)
    except (ValueError, NotImplementedError, RuntimeError) as e:
        _raise(e)
    result = [None] * 9
    for i, t in zip(_POSITIONS[format, direction, bool(pad_rowwise or pad_colwise), with_amax],
                    outs):
        result[i] = t
    return result


def _placed(format, direction, pads, outs):
    """The quantize outputs in QuantizeResult's places (None for those the call does not write)."""
    result = [None] * 8
    for i, t in zip(_POSITIONS[format, direction, pads, False], outs):
        result[i] = t
    return result


def swiglu_quantize(h, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise,
                    pad_colwise, tensor_amax, weights, variant, layout, alpha, limit, keep):
    try:
        outs = _swiglu_quantize(h, format, direction, scale_rule, scale_layout,
                                as_group_ends(group_ends, h), pad_rowwise, pad_colwise,
                                tensor_amax, weights, variant, layout, alpha, limit, keep)
    except (ValueError, NotImplementedError, RuntimeError) as e:
        _raise(e)
    n = len(outs) - (1 if keep else 0)
    return _placed(format, direction, bool(pad_rowwise or pad_colwise), outs[:n]) + [
        outs[n] if keep else None]


def swiglu_backward_quantize(grad, h, format, direction, scale_rule, scale_layout, group_ends,
                             pad_rowwise, pad_colwise, tensor_amax, weights, variant, layout,
                             alpha, limit, keep):
    try:
        outs = _swiglu_backward_quantize(grad, h, format, direction, scale_rule, scale_layout,
                                         as_group_ends(group_ends, h), pad_rowwise, pad_colwise,
                                         tensor_amax, weights, variant, layout, alpha, limit, keep)
    except (ValueError, NotImplementedError, RuntimeError) as e:
        _raise(e)
    n = len(outs) - (1 if weights is not None else 0) - (1 if keep else 0)
    dh = outs[n] if keep else None
    dw = outs[-1] if weights is not None else None
    return _placed(format, direction, bool(pad_rowwise or pad_colwise), outs[:n]) + [dh, dw]


def dequantize(data, scales, shape, format, direction, scale_rule, scale_layout, group_ends,
               pad_rowwise, pad_colwise, s_dec, out_dtype):
    try:
        return _dequantize(data, scales, s_dec, list(shape), format, direction, scale_rule,
                           scale_layout, as_group_ends(group_ends, data), pad_rowwise,
                           pad_colwise, out_dtype)
    except (ValueError, NotImplementedError, RuntimeError) as e:
        _raise(e)


def tensor_amax(x):
    try:
        return _tensor_amax(x)
    except (ValueError, NotImplementedError, RuntimeError) as e:
        _raise(e)


def pad(x, group_ends, alignment, with_amax):
    try:
        return _pad(x, as_group_ends(group_ends, x), alignment, with_amax)
    except (ValueError, NotImplementedError, RuntimeError) as e:
        _raise(e)


def unpad(x, group_ends, alignment, rows, with_amax):
    try:
        return _unpad(x, as_group_ends(group_ends, x), alignment, rows, with_amax)
    except (ValueError, NotImplementedError, RuntimeError) as e:
        _raise(e)


def swizzle(scales, group_ends, group_axis):
    try:
        return _swizzle(scales, as_group_ends(group_ends, scales), group_axis)
    except (ValueError, NotImplementedError, RuntimeError) as e:
        _raise(e)


def unswizzle(blocked, shape, group_ends, group_axis):
    try:
        return _unswizzle(blocked, list(shape), as_group_ends(group_ends, blocked), group_axis)
    except (ValueError, NotImplementedError, RuntimeError) as e:
        _raise(e)
