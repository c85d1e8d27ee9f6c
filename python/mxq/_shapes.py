"""Output shapes of every op, from docs/layouts.md.

Used by the fake (meta) implementations of the torch custom ops, which must work on symbolic sizes
(torch.compile with dynamic shapes) and so cannot ask the C library. Eager calls ask the library
(mxq_quantize_sizes and friends) and check that these shapes hold exactly its byte counts, and
tests/python/test_shapes.py compares the two over a grid of arguments: the library stays the one
source of truth, this module only names the dimensions.

Conventions of the package: a 2-D input (M, K) gives outputs without a batch dimension, a 3-D
input (B, M, K) gives outputs with one. Linear scales are matrices; blocked scales are flat byte
vectors (per batch), since the 128x4 tiled order is not a row-major matrix.
"""

BLOCK = {"mxfp8": 32, "mxfp8_e5m2": 32, "mxfp4": 32, "nvfp4": 16}
ELEM_BITS = {"mxfp8": 8, "mxfp8_e5m2": 8, "mxfp4": 4, "nvfp4": 4}


def _cdiv(a, b):
    return (a + b - 1) // b


def _round_up(a, b):
    return _cdiv(a, b) * b


def padded_rows(M, G, A):
    """Rows of pad's output and of padded quantize data: round_up(M + G*A, A)."""
    return _round_up(M + G * A, A)


def _batched(batched, B, *dims):
    return (B, *dims) if batched else tuple(dims)


def quantize_shapes(fmt, direction, layout, batched, B, M, K, G, pad_rowwise, pad_colwise):
    """Shapes of (row_data, row_scales, col_data, col_scales, s_enc, s_dec, padded_starts,
    padded_ends); None for an output this call does not produce. Data shapes are in bytes
    (= elements for fp8, pairs of codes for fp4)."""
    block, bits = BLOCK[fmt], ELEM_BITS[fmt]
    blocked = layout == "blocked"
    row_data = row_scales = col_data = col_scales = None
    if direction in ("rowwise", "both"):
        Mr = padded_rows(M, G, pad_rowwise) if pad_rowwise else M
        sc = _cdiv(K, block)
        row_data = _batched(batched, B, Mr, K * bits // 8)
        if not blocked:
            row_scales = _batched(batched, B, Mr, sc)
        elif G:  # groups along M: each group starts on its own 128-row tile
            row_scales = ((Mr + 128 * G) * _round_up(sc, 4),)
        else:
            row_scales = _batched(batched, B, _round_up(Mr, 128) * _round_up(sc, 4))
    if direction in ("colwise", "both"):
        Mc = padded_rows(M, G, pad_colwise) if pad_colwise else M
        sc = _cdiv(Mc, block)
        col_data = _batched(batched, B, K, Mc * bits // 8)
        if G:  # groups along K: each group's scale columns stand apart
            col_scales = (K, sc + G) if not blocked else (_round_up(K, 128) * (sc + 4 * G),)
        elif not blocked:
            col_scales = _batched(batched, B, K, sc)
        else:
            col_scales = _batched(batched, B, _round_up(K, 128) * _round_up(sc, 4))
    tensor_scale = (B,) if fmt == "nvfp4" else None
    offsets = (G,) if (pad_rowwise or pad_colwise) else None
    return (row_data, row_scales, col_data, col_scales, tensor_scale, tensor_scale, offsets, offsets)


def dequantize_shape(direction, batched, B, M, K, G, pad_rowwise, pad_colwise):
    """(B, rows', K): rows' = the padded rows of that direction, else M."""
    pad = pad_rowwise if direction == "rowwise" else pad_colwise
    rows = padded_rows(M, G, pad) if pad else M
    return _batched(batched, B, rows, K)


def swizzle_shape(batched, B, R, C, group_axis, G):
    """Bytes of the blocked scale buffer: flat, per batch when batched."""
    if group_axis == "m":
        return ((R + 128 * G) * _round_up(C, 4),)
    if group_axis == "k":
        return (_round_up(R, 128) * (C + 4 * G),)
    return _batched(batched, B, _round_up(R, 128) * _round_up(C, 4))
