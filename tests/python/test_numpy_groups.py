"""pad / unpad, swizzle / unswizzle, tensor_amax and validate_group_ends through the package with
numpy arrays, checked against plain numpy computations."""
import numpy as np
import pytest

import mxq
from mxq_testing import rng


def _reference_pad(x, ends, A):
    """docs/layouts.md: group g starts at sum of A*ceil(n_h/A); everything else 0."""
    M = x.shape[0]
    rows = -(-(M + len(ends) * A) // A) * A
    out = np.zeros((rows,) + x.shape[1:], x.dtype)
    starts, pends, prev, at = [], [], 0, 0
    for e in ends:
        e = min(max(int(e), prev), M)
        n = e - prev
        out[at:at + n] = x[prev:e]
        starts.append(at)
        at += -(-n // A) * A
        pends.append(at)
        prev = e
    return out, np.array(starts, np.int32), np.array(pends, np.int32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint16, np.uint8])
@pytest.mark.parametrize("A", [1, 16, 128])
def test_pad_matches_reference_and_unpad_inverts_it(dtype, A):
    g = rng(A)
    x = (g.standard_normal((301, 24)) * 100).astype(dtype)
    ends = np.sort(g.integers(0, 280, size=7)).astype(np.int32)  # empty groups, rows past the end
    out, starts, pends = mxq.pad(x, ends, alignment=A)
    ref, rstarts, rpends = _reference_pad(x, ends, A)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(starts, rstarts)
    np.testing.assert_array_equal(pends, rpends)
    back = mxq.unpad(out, ends, x.shape[0], alignment=A)
    expect = x.copy()
    expect[ends[-1]:] = 0  # rows past the last end come back as 0
    np.testing.assert_array_equal(back, expect)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_pad_and_unpad_report_the_amax_of_their_output(dtype):
    g = rng(7)
    x = (g.standard_normal((301, 24)) * 100).astype(dtype)
    ends = np.array([0, 40, 40, 200, 250], np.int32)  # rows 250.. are not copied
    x[260, 3] = 1e4  # the largest |x| of the tensor, but past the last end
    x[17, 5] = -3e3
    out, _, _, amax = mxq.pad(x, ends, alignment=32, with_amax=True)
    assert amax.dtype == np.float32 and amax.shape == (1,)
    assert amax[0] == np.abs(out).max() == np.float32(np.abs(x[:250]).max()) == np.float32(dtype(3e3))
    back, back_amax = mxq.unpad(out, ends, x.shape[0], alignment=32, with_amax=True)
    assert back_amax[0] == amax[0]
    with pytest.raises(mxq.InvalidArgument, match="with amax"):
        mxq.pad(x.view(np.uint8), ends, alignment=32, with_amax=True)


def test_pad_accepts_python_lists_of_ends():
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    out, starts, pends = mxq.pad(x, [3, 10], alignment=8)
    np.testing.assert_array_equal(starts, [0, 8])
    np.testing.assert_array_equal(pends, [8, 16])
    np.testing.assert_array_equal(out[8:15], x[3:10])


@pytest.mark.parametrize("shape", [(1, 1), (130, 7), (2, 129, 5)])
def test_swizzle_round_trip(shape):
    s = rng(1).integers(0, 256, size=shape).astype(np.uint8)
    b = mxq.swizzle(s)
    np.testing.assert_array_equal(mxq.unswizzle(b, shape), s)


def test_swizzle_places_bytes_by_the_128x4_tile_rule():
    # Independent restatement of the cuBLAS block-scaling layout: within a 128x4 tile, scale
    # (r, c) is at (r % 32) * 16 + (r // 32) * 4 + c; tiles are row-major over the padded matrix.
    R, C = 200, 6
    s = rng(2).integers(1, 256, size=(R, C)).astype(np.uint8)
    b = mxq.swizzle(s)
    tiles_c = -(-C // 4)
    for r in range(R):
        for c in range(C):
            tile = (r // 128) * tiles_c + c // 4
            rr, cc = r % 128, c % 4
            assert b[tile * 512 + (rr % 32) * 16 + (rr // 32) * 4 + cc] == s[r, c]
    assert np.count_nonzero(b) == R * C  # padding bytes are 0


@pytest.mark.parametrize("axis", ["m", "k"])
def test_grouped_swizzle_round_trip(axis):
    s = rng(3).integers(0, 256, size=(260, 40)).astype(np.uint8)
    extent = s.shape[0] if axis == "m" else s.shape[1]
    ends = np.array([0, extent // 3, extent // 3, extent - 5], np.int32)
    b = mxq.swizzle(s, ends, axis)
    back = mxq.unswizzle(b, s.shape, ends, axis)
    expect = s.copy()
    if axis == "m":
        expect[ends[-1]:] = 0
    else:
        expect[:, ends[-1]:] = 0
    np.testing.assert_array_equal(back, expect)


def test_tensor_amax_per_batch():
    x = rng(4).standard_normal((3, 50, 70)).astype(np.float32)
    x[1, 7, 9] = -1e30
    np.testing.assert_array_equal(mxq.tensor_amax(x), np.abs(x).max(axis=(1, 2)))
    np.testing.assert_array_equal(mxq.tensor_amax(x[0]), [np.abs(x[0]).max()])
    x[2, 0, 0] = np.nan
    assert np.isnan(mxq.tensor_amax(x)[2])


def test_nvfp4_tensor_amax_override():
    x = rng(5).standard_normal((64, 64)).astype(np.float32)
    auto = mxq.quantize(x, format="nvfp4")
    same = mxq.quantize(x, format="nvfp4", tensor_amax=mxq.tensor_amax(x))
    for a, b in zip(auto, same):
        if a is not None:
            np.testing.assert_array_equal(a, b)
    doubled = mxq.quantize(x, format="nvfp4", tensor_amax=2 * mxq.tensor_amax(x))
    np.testing.assert_allclose(doubled.s_enc, auto.s_enc / 2, rtol=1e-6)
    np.testing.assert_allclose(auto.s_enc * auto.s_dec, 1.0, rtol=1e-6)


def test_quantize_reports_the_amax_of_its_input():
    x = rng(6).standard_normal((2, 64, 64)).astype(np.float32)
    x[1, 3, 4] = np.float32(np.nan)
    for fmt, given in (("mxfp8", None), ("nvfp4", None), ("nvfp4", np.float32([3.0, 4.0]))):
        q = mxq.quantize(x, format=fmt, direction="both", tensor_amax=given, with_amax=True)
        np.testing.assert_array_equal(q.amax.view(np.uint32), mxq.tensor_amax(x).view(np.uint32))
        plain = mxq.quantize(x, format=fmt, direction="both", tensor_amax=given)
        assert plain.amax is None
        for a, b in zip(plain[:8], q[:8]):
            if a is not None:
                np.testing.assert_array_equal(a, b)


def test_validate_group_ends():
    mxq.validate_group_ends(np.array([0, 5, 5, 10], np.int32), 10)
    with pytest.raises(mxq.InvalidOffsets, match=r"ends\[2\] \(6\)"):
        mxq.validate_group_ends(np.array([3, 7, 6], np.int32), 10)
    with pytest.raises(mxq.InvalidOffsets, match=r"ends\[1\] \(11\)"):
        mxq.validate_group_ends([3, 11], 10)
