"""The package on the CPU backend reproduces the torchao golden vectors (tests/data/golden) byte
for byte: quantize (rowwise, linear scales), swizzle (plain, groups along M and K) and pad."""
import numpy as np
import pytest

import mxq
from mxq_testing import golden_cases, golden_tensor


@pytest.mark.parametrize("case", golden_cases("quantize"), ids=lambda c: c["name"])
def test_quantize(case):
    x = golden_tensor(case["input"])
    q = mxq.quantize(x, format=case["format"], direction=case["direction"],
                     scale_rule=case["scale_rule"], scale_layout=case["scale_layout"])
    np.testing.assert_array_equal(q.row_data, golden_tensor(case["data"]))
    np.testing.assert_array_equal(q.row_scales, golden_tensor(case["scales"]))
    assert q.col_data is None and q.col_scales is None and q.s_enc is None


@pytest.mark.parametrize("case", golden_cases("swizzle"), ids=lambda c: c["name"])
def test_swizzle(case):
    s = golden_tensor(case["input"])
    out = mxq.swizzle(s)
    np.testing.assert_array_equal(out, golden_tensor(case["output"]).reshape(-1))
    np.testing.assert_array_equal(mxq.unswizzle(out, s.shape), s)


@pytest.mark.parametrize("case", golden_cases("swizzle_groups_m") + golden_cases("swizzle_groups_k"),
                         ids=lambda c: c["name"])
def test_swizzle_groups(case):
    axis = "m" if case["op"] == "swizzle_groups_m" else "k"
    s, ends = golden_tensor(case["input"]), golden_tensor(case["ends"])
    out = mxq.swizzle(s, group_ends=ends, group_axis=axis)
    np.testing.assert_array_equal(out, golden_tensor(case["output"]).reshape(-1))
    np.testing.assert_array_equal(mxq.unswizzle(out, s.shape, group_ends=ends, group_axis=axis), s)


@pytest.mark.parametrize("case", golden_cases("pad"), ids=lambda c: c["name"])
def test_pad(case):
    x, ends = golden_tensor(case["input"]), golden_tensor(case["ends"])
    out, starts, pends = mxq.pad(x, ends, alignment=case["alignment"])
    np.testing.assert_array_equal(out, golden_tensor(case["output"]))
    np.testing.assert_array_equal(starts, golden_tensor(case["padded_starts"]))
    np.testing.assert_array_equal(pends, golden_tensor(case["padded_ends"]))
    np.testing.assert_array_equal(mxq.unpad(out, ends, x.shape[0], alignment=case["alignment"]), x)


def test_golden_cases_are_present():
    assert len(golden_cases("quantize")) == 36
    assert {c["format"] for c in golden_cases("quantize")} == {"mxfp8", "mxfp8_e5m2", "mxfp4"}
