"""The shapes the fake (meta) implementations use (mxq/_shapes.py) hold exactly the byte counts
libmxq reports, over a grid of formats, directions, layouts, batches, groups and paddings."""
import ctypes
import itertools
import math

import pytest

import mxq
from mxq import _abi, _shapes

# Size queries never dereference pointers; non-null stand-ins satisfy the "data is null" checks.
DUMMY = 0x1000


def _numel(shape):
    return 0 if shape is None else math.prod(shape)


def _lib_sizes(fmt, direction, layout, B, M, K, G, pr, pc):
    args = _abi.QuantizeArgs()
    args.input = _abi.TensorView(DUMMY, B, M, K, 0, 0, _abi.DTYPE["bf16"])
    args.format, args.rule = _abi.FORMAT[fmt], 0
    args.layout, args.direction = _abi.LAYOUT[layout], _abi.DIRECTION[direction]
    args.groups = _abi.TokenGroups(DUMMY if G else None, G)
    args.pad_rowwise, args.pad_colwise = pr, pc
    sizes = _abi.QuantizeSizes()
    mxq.library().check(mxq.library().quantize_sizes(args, sizes))
    return sizes


def _cases(fmt):
    for direction, layout, dims, G, pads in itertools.product(
            ["rowwise", "colwise", "both"], ["linear", "blocked"],
            [(1, 0, 64), (1, 1, 32), (1, 130, 96), (1, 256, 2), (4, 66, 40)], [0, 1, 5],
            [(0, 0), (32, 0), (0, 16), (128, 128)]):
        if (G and dims[0] > 1) or (any(pads) and not G):
            continue  # groups are 2-D only; padding needs groups
        yield direction, layout, dims, G, pads


@pytest.mark.parametrize("fmt", ["mxfp8", "mxfp8_e5m2", "mxfp4", "nvfp4"])
def test_quantize_shapes_match_library_sizes(fmt):
    checked = 0
    for direction, layout, (B, M, K), G, pads in _cases(fmt):
        try:
            s = _lib_sizes(fmt, direction, layout, B, M, K, G, *pads)
        except mxq.InvalidArgument as e:  # fp4 colwise needs an even number of data rows
            assert fmt in ("mxfp4", "nvfp4") and "must be even" in str(e)
            continue
        _check(fmt, direction, layout, B, M, K, G, pads, s)
        checked += 1
    assert checked >= 200


def _check(fmt, direction, layout, B, M, K, G, pads, s):
    shapes = _shapes.quantize_shapes(fmt, direction, layout, B > 1, B, M, K, G, *pads)
    assert [_numel(x) for x in shapes] == [
        s.row_data_bytes, s.row_scale_bytes, s.col_data_bytes, s.col_scale_bytes,
        s.tensor_scale_count, s.tensor_scale_count, s.padded_offset_count, s.padded_offset_count]
    if shapes[0] is not None:
        assert shapes[0][-2] == s.row_data_rows
    if shapes[2] is not None:
        assert shapes[2][-1] * 8 // _shapes.ELEM_BITS[fmt] == s.col_data_cols
    for direction1 in ("rowwise", "colwise"):
        if direction in (direction1, "both"):
            d = _abi.DequantizeArgs(_abi.FORMAT[fmt], 0, _abi.LAYOUT[layout],
                                    _abi.DIRECTION[direction1], B, M, K,
                                    _abi.TokenGroups(DUMMY if G else None, G), *pads)
            n = ctypes.c_int64()
            mxq.library().check(mxq.library().dequantize_size(d, n))
            assert _numel(_shapes.dequantize_shape(direction1, B > 1, B, M, K, G, *pads)) == n.value


@pytest.mark.parametrize("B,R,C,axis,G", [
    (1, 1, 1, "none", 0), (3, 129, 5, "none", 0), (1, 1000, 8, "m", 6), (1, 300, 9, "k", 5),
    (1, 0, 4, "m", 2)])
def test_swizzle_shape_matches_library_size(B, R, C, axis, G):
    args = _abi.SwizzleArgs(DUMMY, B, R, C, _abi.SCALE_GROUPS[axis],
                            _abi.TokenGroups(DUMMY if G else None, G))
    n = ctypes.c_int64()
    mxq.library().check(mxq.library().swizzle_size(args, n))
    assert _numel(_shapes.swizzle_shape(B > 1, B, R, C, axis, G)) == n.value


@pytest.mark.parametrize("M,G,A", [(0, 1, 32), (1000, 6, 32), (777, 4, 128), (5, 3, 1)])
def test_padded_rows_match_library(M, G, A):
    args = _abi.PadArgs(_abi.TensorView(DUMMY, 1, M, 8, 0, 0, _abi.DTYPE["u8"]),
                        _abi.TokenGroups(DUMMY, G), A)
    n = ctypes.c_int64()
    mxq.library().check(mxq.library().pad_rows(args, n))
    assert _shapes.padded_rows(M, G, A) == n.value
