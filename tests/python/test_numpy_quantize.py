"""quantize / dequantize through the package on the CPU backend with numpy arrays: round-trip
SQNR, an independent decode of MX codes, and layout identities of docs/layouts.md (colwise =
rowwise of the transpose, both = two calls, blocked = swizzled linear, fused pad = pad then
quantize, 3-D = one call per expert), every output byte written, strided inputs."""
import itertools

import numpy as np
import pytest

import mxq
from mxq import _numpy
from mxq_testing import from_bf16_bits, rng, sqnr_db, to_bf16_bits

FORMATS = ["mxfp8", "mxfp8_e5m2", "mxfp4", "nvfp4"]
MX_FORMATS = FORMATS[:3]
MIN_SQNR_DB = {"mxfp8": 29.0, "mxfp8_e5m2": 24.0, "mxfp4": 17.0, "nvfp4": 19.0}


def _normal(shape, seed=0):
    return rng(seed).standard_normal(shape).astype(np.float32)


def _dequantize(q, direction, shape, **kw):
    i = 0 if direction == "rowwise" else 2
    return mxq.dequantize(q[i], q[i + 1], shape, direction=direction, s_dec=q.s_dec, **kw)


@pytest.mark.parametrize("fmt,direction,layout,rule", list(itertools.product(
    FORMATS, ["rowwise", "colwise"], ["linear", "blocked"], ["rceil", "floor"])))
def test_round_trip_sqnr(fmt, direction, layout, rule):
    x = _normal((128, 256))
    kw = dict(format=fmt, scale_layout=layout, scale_rule=rule)
    q = mxq.quantize(x, direction=direction, **kw)
    y = _dequantize(q, direction, x.shape, **kw)
    assert y.shape == x.shape and y.dtype == np.float32
    assert sqnr_db(x, y) > MIN_SQNR_DB[fmt]


# ---- an independent decoder of MX codes (OCP MX spec), to check dequantize exactly ----

def _decode_minifloat(codes, exp_bits, man_bits, bias, has_inf):
    c = codes.astype(np.int64)
    sign = np.where(c >> (exp_bits + man_bits) & 1, -1.0, 1.0)
    e = (c >> man_bits) & ((1 << exp_bits) - 1)
    m = c & ((1 << man_bits) - 1)
    normal = (1 + m / 2.0 ** man_bits) * 2.0 ** (e - bias)
    sub = m / 2.0 ** man_bits * 2.0 ** (1 - bias)
    v = sign * np.where(e == 0, sub, normal)
    top = e == (1 << exp_bits) - 1
    if has_inf:  # e5m2: IEEE-like
        v = np.where(top & (m == 0), sign * np.inf, np.where(top, np.nan, v))
    elif exp_bits == 4:  # e4m3fn: only S.1111.111 is NaN
        v = np.where(top & (m == 7), np.nan, v)
    return v


def _decode_mx(fmt, data, scales):
    if fmt == "mxfp4":
        codes = np.stack([data & 0xF, data >> 4], axis=-1).reshape(data.shape[0], -1)
        values = _decode_minifloat(codes, 2, 1, 1, False)
    elif fmt == "mxfp8":
        values = _decode_minifloat(data, 4, 3, 7, False)
    else:
        values = _decode_minifloat(data, 5, 2, 15, True)
    scale = np.where(scales == 255, np.nan, 2.0 ** (scales.astype(np.float64) - 127))
    return values * np.repeat(scale, 32, axis=1)[:, :values.shape[1]]


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_dequantize_matches_independent_decode(fmt):
    x = _normal((64, 96), seed=1) * np.float32(3.0)
    q = mxq.quantize(x, format=fmt, scale_layout="linear")
    expect = _decode_mx(fmt, q.row_data, q.row_scales).astype(np.float32)
    got = mxq.dequantize(q.row_data, q.row_scales, x.shape, format=fmt, scale_layout="linear")
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize("fmt", FORMATS)
def test_colwise_is_rowwise_of_the_transpose(fmt):
    x = _normal((96, 64), seed=2)
    col = mxq.quantize(x, format=fmt, direction="colwise", scale_layout="linear")
    row = mxq.quantize(np.ascontiguousarray(x.T), format=fmt, scale_layout="linear")
    np.testing.assert_array_equal(col.col_data, row.row_data)
    np.testing.assert_array_equal(col.col_scales, row.row_scales)


@pytest.mark.parametrize("fmt,layout,grouped", list(itertools.product(
    FORMATS, ["linear", "blocked"], [False, True])))
def test_both_equals_two_calls(fmt, layout, grouped):
    x = _normal((200, 64), seed=3)
    kw = dict(format=fmt, scale_layout=layout)
    if grouped:
        kw.update(group_ends=np.array([50, 50, 130, 200], np.int32), pad_rowwise=32, pad_colwise=32)
    both = mxq.quantize(x, direction="both", **kw)
    row = mxq.quantize(x, direction="rowwise", **kw)
    col = mxq.quantize(x, direction="colwise", **kw)
    for got, want in [(both.row_data, row.row_data), (both.row_scales, row.row_scales),
                      (both.col_data, col.col_data), (both.col_scales, col.col_scales)]:
        np.testing.assert_array_equal(got, want)
    if fmt == "nvfp4":
        np.testing.assert_array_equal(both.s_enc, row.s_enc)
        np.testing.assert_array_equal(both.s_dec, col.s_dec)


@pytest.mark.parametrize("fmt", FORMATS)
def test_blocked_scales_are_swizzled_linear_scales(fmt):
    x = _normal((3, 150, 96), seed=4)
    lin = mxq.quantize(x, format=fmt, scale_layout="linear")
    blk = mxq.quantize(x, format=fmt, scale_layout="blocked")
    np.testing.assert_array_equal(blk.row_data, lin.row_data)
    np.testing.assert_array_equal(blk.row_scales, mxq.swizzle(lin.row_scales))


@pytest.mark.parametrize("pad", [0, 32])
def test_grouped_blocked_row_scales_are_swizzled_along_m(pad):
    x = _normal((300, 64), seed=5)
    ends = np.array([0, 100, 101, 260], np.int32)  # an empty group; rows past the last end
    lin = mxq.quantize(x, scale_layout="linear", group_ends=ends, pad_rowwise=pad)
    blk = mxq.quantize(x, scale_layout="blocked", group_ends=ends, pad_rowwise=pad)
    data_ends = lin.padded_ends if pad else ends
    np.testing.assert_array_equal(blk.row_scales, mxq.swizzle(lin.row_scales, data_ends, "m"))


@pytest.mark.parametrize("fmt,layout,direction", list(itertools.product(
    FORMATS, ["linear", "blocked"], ["rowwise", "colwise"])))
def test_fused_pad_equals_pad_then_quantize(fmt, layout, direction):
    x = _normal((230, 64), seed=6)
    ends = np.array([17, 17, 120, 230], np.int32)
    pad_kw = {"pad_rowwise" if direction == "rowwise" else "pad_colwise": 32}
    fused = mxq.quantize(x, format=fmt, direction=direction, scale_layout=layout, group_ends=ends,
                         **pad_kw)
    padded, starts, pends = mxq.pad(x, ends, alignment=32)
    np.testing.assert_array_equal(fused.padded_starts, starts)
    np.testing.assert_array_equal(fused.padded_ends, pends)
    two_step = mxq.quantize(padded, format=fmt, direction=direction, scale_layout=layout,
                            group_ends=pends)
    i = 0 if direction == "rowwise" else 2
    np.testing.assert_array_equal(fused[i], two_step[i])
    np.testing.assert_array_equal(fused[i + 1], two_step[i + 1])
    y = _dequantize(fused, direction, x.shape, format=fmt, scale_layout=layout, group_ends=ends,
                    **pad_kw)
    np.testing.assert_array_equal(y, _dequantize(two_step, direction, padded.shape, format=fmt,
                                                 scale_layout=layout, group_ends=pends))


@pytest.mark.parametrize("fmt,layout,direction", list(itertools.product(
    FORMATS, ["linear", "blocked"], ["rowwise", "colwise", "both"])))
def test_3d_is_one_call_per_expert(fmt, layout, direction):
    w = _normal((3, 64, 96), seed=7)
    w[1] *= 100  # experts with different ranges: separate nvfp4 tensor scales
    q = mxq.quantize(w, format=fmt, direction=direction, scale_layout=layout)
    for e in range(3):
        qe = mxq.quantize(w[e], format=fmt, direction=direction, scale_layout=layout)
        for got, want in zip(q, qe):
            if want is None:
                assert got is None
            elif fmt == "nvfp4" and got.ndim == 1 and got.dtype == np.float32:
                np.testing.assert_array_equal(got[e:e + 1], want)
            else:
                np.testing.assert_array_equal(got[e], want)


def test_bf16_and_fp16_inputs_quantize_their_values():
    # bf16 values of moderate range are exact in fp16 as well: three dtypes, the same values.
    x32 = from_bf16_bits(to_bf16_bits(_normal((64, 64), seed=8)))
    assert np.array_equal(x32.astype(np.float16).astype(np.float32), x32)
    for fmt in FORMATS:
        from_fp32 = mxq.quantize(x32, format=fmt, direction="both")
        for x in (to_bf16_bits(x32), x32.astype(np.float16)):
            for a, b in zip(mxq.quantize(x, format=fmt, direction="both"), from_fp32):
                if b is not None:
                    np.testing.assert_array_equal(a, b)


def test_dequantize_out_dtypes():
    x = _normal((64, 64), seed=9)
    q = mxq.quantize(x)
    y32 = mxq.dequantize(q.row_data, q.row_scales, x.shape)
    y16 = mxq.dequantize(q.row_data, q.row_scales, x.shape, out_dtype=np.float16)
    ybf = mxq.dequantize(q.row_data, q.row_scales, x.shape, out_dtype="bfloat16")
    assert y16.dtype == np.float16 and ybf.dtype == np.uint16
    np.testing.assert_array_equal(y16, y32.astype(np.float16))  # mxfp8 values fit fp16 here
    np.testing.assert_array_equal(ybf, to_bf16_bits(y32))       # and bf16 exactly


@pytest.mark.parametrize("make", [
    lambda a: a[:, :96],                       # row stride > cols
    lambda a: a[::2, :96],                     # every other row
    lambda a: a[:, 1:97],                      # unaligned start
    lambda a: a[:, :192:2],                    # strided last dimension: copied
    lambda a: np.stack([a[:64, :96], a[64:, :96]])[:, ::2],  # 3-D, strided rows and batches
])
def test_strided_inputs_quantize_like_contiguous_copies(make):
    view = make(_normal((128, 200), seed=10))
    q = mxq.quantize(view, direction="both", scale_layout="linear")
    c = mxq.quantize(np.ascontiguousarray(view), direction="both", scale_layout="linear")
    for a, b in zip(q, c):
        if b is not None:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fmt,layout", list(itertools.product(FORMATS, ["linear", "blocked"])))
def test_every_output_byte_is_written(fmt, layout, monkeypatch):
    x = _normal((150, 64), seed=11)
    kw = dict(format=fmt, direction="both", scale_layout=layout,
              group_ends=np.array([10, 10, 90, 140], np.int32), pad_rowwise=16, pad_colwise=16)
    runs = []
    for poison in (0x00, 0xFF, 0x5A):
        def poisoned(shape, key, like, _orig=_numpy.NumpyAdapter.empty, _p=poison):
            a = _orig(shape, key, like)
            a.view(np.uint8)[...] = _p
            return a
        monkeypatch.setattr(_numpy.NumpyAdapter, "empty", staticmethod(poisoned))
        runs.append(mxq.quantize(x, **kw))
    for outs in zip(*runs):
        if outs[0] is None:
            continue
        for other in outs[1:]:
            np.testing.assert_array_equal(outs[0].view(np.uint8), other.view(np.uint8))
