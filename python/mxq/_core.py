"""The ops over libmxq's C ABI for arrays of an adapter (numpy arrays, see _numpy.py; torch
tensors take the native operators of _torch.py instead).

Each op: turns its arrays into the C structs of mxq.h (one Packer.fill per struct), asks the
library for the output sizes, allocates the outputs with the shapes of _shapes.py after checking
that they hold exactly the library's byte counts, and runs the op. Inputs whose size the library
cannot check (quantized data and scales, padded payloads) are checked here against the same
shapes, so that a wrong buffer is an InvalidArgument and never an out-of-bounds access.

An adapter provides:
  input_view(x) -> (x, (data, batch, rows, cols, row_stride, batch_stride, dtype), batched):
      the TensorView fields of a 2-D or 3-D input (a copy when its last dimension is strided);
  ptr(a) -> int address, 0 for None;          nbytes(a) -> int;   shape(a) -> tuple;
  contiguous(a) -> a, or a contiguous copy;   int32_vector(a, like) -> int32, contiguous, 1-D;
  float32_vector(a, like) -> float32, contiguous, 1-D;
  empty(shape, key, like) -> new array; key: "u8", "i32", "f32", "fp8_e4m3", "fp8_e5m2", "e8m0"
      or an output dtype "bf16", "fp16", "fp32";
  exec_args(like) -> (backend, stream).
"""
import ctypes
import math

from . import _abi
from . import _shapes
from ._library import library
from ._packing import Packer

_tensor_view = Packer(_abi.TensorView)
_token_groups = Packer(_abi.TokenGroups)
_quantize_args = Packer(_abi.QuantizeArgs)
_dequantize_args = Packer(_abi.DequantizeArgs)
_pad_args = Packer(_abi.PadArgs)
_unpad_args = Packer(_abi.UnpadArgs)
_swizzle_args = Packer(_abi.SwizzleArgs)
_swiglu_args = Packer(_abi.SwigluArgs)
_swiglu_backward_args = Packer(_abi.SwigluBackwardArgs)

# Element dtype of each format's data and scales (the numpy adapter stores every key of one
# byte as uint8).
DATA_KEY = {"mxfp8": "fp8_e4m3", "mxfp8_e5m2": "fp8_e5m2", "mxfp4": "u8", "nvfp4": "u8"}
SCALE_KEY = {"mxfp8": "e8m0", "mxfp8_e5m2": "e8m0", "mxfp4": "e8m0", "nvfp4": "fp8_e4m3"}


def _enum(table, what, value):
    try:
        return table[value]
    except KeyError:
        from .errors import InvalidArgument
        raise InvalidArgument(f"{what} must be one of {sorted(table)} (got {value!r})") from None


def _invalid(message):
    from .errors import InvalidArgument
    return InvalidArgument(message)


def _numel(shape):
    return math.prod(shape) if shape is not None else 0


def quantize(A, x, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise,
             pad_colwise, tensor_amax, with_amax=False):
    """The 8 outputs of docs/layouts.md, None where this call writes nothing, and with with_amax
    the amax of each batch of x (float32 (B,), as tensor_amax(x)), else None."""
    lib = library()
    fmt = _enum(_abi.FORMAT, "format", format)
    rule = _enum(_abi.RULE, "scale_rule", scale_rule)
    layout = _enum(_abi.LAYOUT, "scale_layout", scale_layout)
    dirn = _enum(_abi.DIRECTION, "direction", direction)
    x, view, batched = A.input_view(x)
    backend, stream = A.exec_args(x)
    ends, G = _groups(A, group_ends, x)
    amax = A.float32_vector(tensor_amax, x) if tensor_amax is not None else None
    B, M, K = view[1], view[2], view[3]
    _check_batch_floats("tensor_amax", amax, B)
    shapes = _shapes.quantize_shapes(format, direction, scale_layout, batched, B, M, K, G,
                                     pad_rowwise, pad_colwise)
    keys = (DATA_KEY[format], SCALE_KEY[format], DATA_KEY[format], SCALE_KEY[format],
            "f32", "f32", "i32", "i32")
    # Sizes first: validates the arguments before anything is allocated.
    args = _quantize_args.fill(*view, fmt, rule, layout, dirn, A.ptr(ends), G, pad_rowwise,
                               pad_colwise, A.ptr(amax), *([0] * 8), backend, stream, 0)
    sizes = _abi.QuantizeSizes()
    lib.check(lib.quantize_sizes(args, sizes))
    _expect(shapes, sizes)
    outs = tuple(A.empty(s, k, x) if s is not None else None for s, k in zip(shapes, keys))
    amax_out = A.empty((B,), "f32", x) if with_amax else None
    args = _quantize_args.fill(*view, fmt, rule, layout, dirn, A.ptr(ends), G, pad_rowwise,
                               pad_colwise, A.ptr(amax), *(A.ptr(o) for o in outs), backend,
                               stream, A.ptr(amax_out))
    lib.check(lib.quantize(args))
    return outs + (amax_out,)


def _swiglu_fields(variant, layout, alpha, limit):
    return (_enum(_abi.SWIGLU_VARIANT, "variant", variant), _enum(_abi.SWIGLU_LAYOUT, "layout", layout),
            float(alpha), float(limit))


def swiglu_quantize(A, h, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise,
                    pad_colwise, tensor_amax, weights, variant, layout, alpha, limit, keep):
    """quantize's 8 outputs of a = swiglu(h) (M, F), and a itself in h's dtype (keep) or None."""
    return _swiglu(A, None, h, format, direction, scale_rule, scale_layout, group_ends,
                   pad_rowwise, pad_colwise, tensor_amax, weights, variant, layout, alpha, limit,
                   keep)


def swiglu_backward_quantize(A, grad, h, format, direction, scale_rule, scale_layout, group_ends,
                             pad_rowwise, pad_colwise, tensor_amax, weights, variant, layout,
                             alpha, limit, keep):
    """quantize's 8 outputs of dh (M, 2F), dh itself (keep) or None, and the weights' gradient
    (None without)."""
    return _swiglu(A, grad, h, format, direction, scale_rule, scale_layout, group_ends,
                   pad_rowwise, pad_colwise, tensor_amax, weights, variant, layout, alpha, limit,
                   keep)


def _swiglu(A, grad, h, format, direction, scale_rule, scale_layout, group_ends, pad_rowwise,
            pad_colwise, tensor_amax, weights, variant, layout, alpha, limit, keep):
    lib = library()
    fmt = _enum(_abi.FORMAT, "format", format)
    rule = _enum(_abi.RULE, "scale_rule", scale_rule)
    lay = _enum(_abi.LAYOUT, "scale_layout", scale_layout)
    dirn = _enum(_abi.DIRECTION, "direction", direction)
    sw = _swiglu_fields(variant, layout, alpha, limit)
    h, view, batched = A.input_view(h)
    if batched:
        raise _invalid("swiglu: h must be 2-D (M, 2F)")
    backend, stream = A.exec_args(h)
    ends, G = _groups(A, group_ends, h)
    amax = A.float32_vector(tensor_amax, h) if tensor_amax is not None else None
    w = A.float32_vector(weights, h) if weights is not None else None
    M, K2 = view[2], view[3]
    _check_batch_floats("tensor_amax", amax, 1)
    if w is not None and _len(w) != M:
        raise _invalid(f"swiglu: weights has {_len(w)} elements but h has {M} rows (one per row)")
    cols = K2 if grad is not None else K2 // 2
    shapes = _shapes.quantize_shapes(format, direction, scale_layout, False, 1, M, cols, G,
                                     pad_rowwise, pad_colwise)
    keys = (DATA_KEY[format], SCALE_KEY[format], DATA_KEY[format], SCALE_KEY[format],
            "f32", "f32", "i32", "i32")
    if grad is not None:
        grad, gview, gbatched = A.input_view(grad)
        packer, size_fn, run_fn = (_swiglu_backward_args, lib.swiglu_backward_quantize_sizes,
                                   lib.swiglu_backward_quantize)
    else:
        packer, size_fn, run_fn = _swiglu_args, lib.swiglu_quantize_sizes, lib.swiglu_quantize

    def fill(outs, computed, grad_weights):
        q = (*view, fmt, rule, lay, dirn, A.ptr(ends), G, pad_rowwise, pad_colwise, A.ptr(amax),
             *(A.ptr(o) for o in outs), backend, stream, 0)
        if grad is None:
            return packer.fill(*q, *sw, A.ptr(w), A.ptr(computed))
        return packer.fill(*q, *gview, *sw, A.ptr(w), A.ptr(computed), A.ptr(grad_weights))

    sizes = _abi.QuantizeSizes()
    lib.check(size_fn(fill((None,) * 8, None, None), sizes))
    _expect(shapes, sizes)
    outs = tuple(A.empty(s, k, h) if s is not None else None for s, k in zip(shapes, keys))
    computed = A.empty((M, cols), "same", h) if keep else None  # the cpu backend needs no buffer
    grad_weights = A.empty((M,), "f32", h) if (grad is not None and w is not None) else None
    lib.check(run_fn(fill(outs, computed, grad_weights)))
    return outs + (computed, grad_weights)


def _expect(shapes, sizes):
    """The shapes of _shapes.py must hold exactly what the library will write."""
    want = (sizes.row_data_bytes, sizes.row_scale_bytes, sizes.col_data_bytes,
            sizes.col_scale_bytes, sizes.tensor_scale_count, sizes.tensor_scale_count,
            sizes.padded_offset_count, sizes.padded_offset_count)
    got = tuple(_numel(s) for s in shapes)
    if got != want:
        raise AssertionError(f"mxq: python shapes {shapes} disagree with libmxq sizes {want}")


def _groups(A, group_ends, like):
    if group_ends is None:
        return None, 0
    ends = A.int32_vector(group_ends, like)
    return ends, _len(ends)


def _len(a):
    return a.shape[0]


def dequantize(A, data, scales, shape, format, direction, scale_rule, scale_layout, group_ends,
               pad_rowwise, pad_colwise, s_dec, out_dtype):
    """One direction of a quantize call back to floats: ([B,] rows', K), never transposed."""
    lib = library()
    fmt = _enum(_abi.FORMAT, "format", format)
    rule = _enum(_abi.RULE, "scale_rule", scale_rule)
    layout = _enum(_abi.LAYOUT, "scale_layout", scale_layout)
    if direction not in ("rowwise", "colwise"):
        raise _invalid(f"direction must be 'rowwise' or 'colwise' for dequantize (got {direction!r})")
    dirn = _abi.DIRECTION[direction]
    out_code = _enum({k: v for k, v in _abi.DTYPE.items() if k != "u8"}, "out_dtype", out_dtype)
    batched, B, M, K = _logical_shape(shape)
    data, scales = A.contiguous(data), A.contiguous(scales)
    ends, G = _groups(A, group_ends, data)
    sdec = A.float32_vector(s_dec, data) if s_dec is not None else None
    _check_batch_floats("s_dec", sdec, B)
    backend, stream = A.exec_args(data)
    qshapes = _shapes.quantize_shapes(format, direction, scale_layout, batched, B, M, K, G,
                                      pad_rowwise, pad_colwise)
    i = 0 if direction == "rowwise" else 2
    _check_bytes(A, "data", data, qshapes[i])
    _check_bytes(A, "scales", scales, qshapes[i + 1])
    out_shape = _shapes.dequantize_shape(direction, batched, B, M, K, G, pad_rowwise, pad_colwise)
    fields = [fmt, rule, layout, dirn, B, M, K, A.ptr(ends), G, pad_rowwise, pad_colwise,
              A.ptr(data), A.ptr(scales), A.ptr(sdec), 0, out_code, backend, stream]
    n = ctypes.c_int64()
    lib.check(lib.dequantize_size(_dequantize_args.fill(*fields), n))
    if n.value != _numel(out_shape):
        raise AssertionError(f"mxq: python shape {out_shape} disagrees with libmxq ({n.value} elements)")
    out = A.empty(out_shape, out_dtype, data)
    fields[14] = A.ptr(out)
    lib.check(lib.dequantize(_dequantize_args.fill(*fields)))
    return out


def _check_batch_floats(what, a, batch):
    """nvfp4's per-batch vectors: the library reads exactly one float per batch from them."""
    if a is not None and _len(a) != batch:
        raise _invalid(f"{what} has {_len(a)} elements but the input has {batch} batches (one "
                       f"float per batch)")


def _logical_shape(shape):
    shape = tuple(_int("shape", d, 0) for d in shape)
    if len(shape) == 2:
        return False, 1, shape[0], shape[1]
    if len(shape) == 3:
        return True, shape[0], shape[1], shape[2]
    raise _invalid(f"shape must be (M, K) or (B, M, K) (got {shape})")


def _check_bytes(A, what, a, shape):
    want = _numel(shape)
    if A.nbytes(a) != want:
        raise _invalid(f"{what} has {A.nbytes(a)} bytes but this quantize layout has {want} "
                       f"(shape {shape})")


def tensor_amax(A, x):
    """max |x| per batch, float32 of shape (B,) (B = 1 for a 2-D input)."""
    lib = library()
    x, view, _ = A.input_view(x)
    backend, stream = A.exec_args(x)
    out = A.empty((view[1],), "f32", x)
    lib.check(lib.tensor_amax(_tensor_view.fill(*view), A.ptr(out), backend, stream))
    return out


def pad(A, x, group_ends, alignment, with_amax=False):
    """(out, padded_starts, padded_ends, amax): each group copied to start at a multiple of
    alignment; amax is max |out| as float32 (1,) with with_amax, else empty (0,)."""
    lib = library()
    x, view, batched = A.input_view(x)
    if batched:
        raise _invalid(f"pad takes a 2-D tensor (got {view[1]} batches)")
    backend, stream = A.exec_args(x)
    ends, G = _groups(A, group_ends, x)
    rows = ctypes.c_int64()
    fields = [*view, A.ptr(ends), G, alignment, 0, 0, 0, backend, stream, 0]
    lib.check(lib.pad_rows(_pad_args.fill(*fields), rows))
    if rows.value != _shapes.padded_rows(view[2], G, alignment):
        raise AssertionError("mxq: python padded rows disagree with libmxq")
    out = A.empty((rows.value, view[3]), "same", x)
    starts, pends = A.empty((G,), "i32", x), A.empty((G,), "i32", x)
    amax = A.empty((1 if with_amax else 0,), "f32", x)
    fields[10:13] = A.ptr(out), A.ptr(starts), A.ptr(pends)
    fields[15] = A.ptr(amax) if with_amax else 0
    lib.check(lib.pad(_pad_args.fill(*fields)))
    return out, starts, pends, amax


def _int(what, value, low=-2**63, high=2**63 - 1):
    """An integer argument in [low, high] (ctypes would wrap larger ones silently)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise _invalid(f"{what} must be an integer (got {value!r})")
    value = value.__index__()
    if not low <= value <= high:
        raise _invalid(f"{what} ({value}) must be in [{low}, {high}]")
    return value


def _one_byte(A, what, a):
    if A.itemsize(a) != 1:
        raise _invalid(f"{what} must have a one-byte dtype (uint8 or int8; got itemsize "
                       f"{A.itemsize(a)})")


def unpad(A, x, group_ends, alignment, rows, with_amax=False):
    """(out, amax): the inverse of pad, (rows, width), rows past the last end 0; amax as in pad."""
    lib = library()
    rows = _int("rows", rows, 0)
    x, view, batched = A.input_view(x)
    if batched:
        raise _invalid(f"unpad takes a 2-D tensor (got {view[1]} batches)")
    backend, stream = A.exec_args(x)
    ends, G = _groups(A, group_ends, x)
    out = A.empty((rows, view[3]), "same", x)
    amax = A.empty((1 if with_amax else 0,), "f32", x)
    lib.check(lib.unpad(_unpad_args.fill(*view, A.ptr(ends), G, alignment, rows, A.ptr(out),
                                         backend, stream, A.ptr(amax) if with_amax else 0)))
    return out, amax


def _swizzle_fields(A, shape, group_axis, group_ends, like):
    axis = _enum(_abi.SCALE_GROUPS, "group_axis", group_axis)
    batched, B, R, C = _logical_shape(shape)
    ends, G = _groups(A, group_ends, like)
    return axis, batched, B, R, C, ends, G


def swizzle(A, scales, group_ends, group_axis):
    """Linear ([B,] R, C) scale bytes -> the blocked 128x4 layout, flat (per batch)."""
    lib = library()
    scales = A.contiguous(scales)
    _one_byte(A, "scales", scales)
    axis, batched, B, R, C, ends, G = _swizzle_fields(A, A.shape(scales), group_axis, group_ends,
                                                      scales)
    backend, stream = A.exec_args(scales)
    fields = [A.ptr(scales), B, R, C, axis, A.ptr(ends), G, 0, backend, stream]
    n = ctypes.c_int64()
    lib.check(lib.swizzle_size(_swizzle_args.fill(*fields), n))
    out_shape = _shapes.swizzle_shape(batched, B, R, C, group_axis, G)
    if n.value != _numel(out_shape):
        raise AssertionError(f"mxq: python shape {out_shape} disagrees with libmxq ({n.value} bytes)")
    out = A.empty(out_shape, "same", scales)
    fields[7] = A.ptr(out)
    lib.check(lib.swizzle(_swizzle_args.fill(*fields)))
    return out


def unswizzle(A, blocked, shape, group_ends, group_axis):
    """The inverse of swizzle: the blocked buffer back to linear `shape` = ([B,] R, C)."""
    lib = library()
    blocked = A.contiguous(blocked)
    _one_byte(A, "blocked scales", blocked)
    axis, batched, B, R, C, ends, G = _swizzle_fields(A, shape, group_axis, group_ends, blocked)
    _check_bytes(A, "blocked scales", blocked, _shapes.swizzle_shape(batched, B, R, C, group_axis, G))
    backend, stream = A.exec_args(blocked)
    out = A.empty(tuple(shape), "same", blocked)
    lib.check(lib.unswizzle(_swizzle_args.fill(0, B, R, C, axis, A.ptr(ends), G, A.ptr(blocked),
                                               backend, stream), A.ptr(out)))
    return out


def validate_group_ends(A, group_ends, rows):
    """Raises InvalidOffsets naming the first bad index. Synchronises the stream (cuda)."""
    lib = library()
    rows = _int("rows", rows)
    ends = A.int32_vector(group_ends, group_ends)
    backend, stream = A.exec_args(ends)
    groups = _token_groups.fill(A.ptr(ends), _len(ends))
    lib.check(lib.validate_group_ends(groups, rows, backend, stream))
