#!/usr/bin/env python3
"""Writes the corpus of crafted bad safetensors files next to this script (committed; rerun only
to change the corpus). Each must make `mxq inspect` fail with exit code 3 and a clear message, and
each seeds the fuzz target (fuzz/run.sh)."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def image(header, data=b"", length=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def t(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


CASES = {
    "empty_file": b"",
    "short_length": b"\x10\x00\x00",
    "header_longer_than_file": image({"a": t("U8", [4], 0, 4)}, b"\0" * 4, length=1 << 20),
    "header_length_huge": image({}, length=(1 << 64) - 1),
    "invalid_json": image(b'{"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]', b"\0" * 4),
    "not_an_object": image([1, 2, 3]),
    "invalid_utf8_name": image(b'{"\xff\xfe": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}',
                               b"\0"),
    "duplicate_name": image(b'{"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},'
                            b' "a": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}}',
                            b"\0" * 4),
    "unknown_dtype": image({"a": t("F7", [4], 0, 4)}, b"\0" * 4),
    "shape_mismatch": image({"a": t("F32", [2, 3], 0, 16)}, b"\0" * 16),
    "negative_dim": image({"a": t("U8", [-4], 0, 4)}, b"\0" * 4),
    "shape_overflow": image({"a": t("F32", [1 << 62, 1 << 62], 0, 16)}, b"\0" * 16),
    "offset_past_end": image({"a": t("U8", [8], 0, 8)}, b"\0" * 4),
    "offsets_reversed": image({"a": t("U8", [0], 4, 0)}, b"\0" * 4),
    "offsets_overlap": image({"a": t("U8", [4], 0, 4), "b": t("U8", [4], 2, 6)}, b"\0" * 8),
    "offsets_gap": image({"a": t("U8", [2], 0, 2), "b": t("U8", [2], 4, 6)}, b"\0" * 6),
    "trailing_bytes": image({"a": t("U8", [2], 0, 2)}, b"\0" * 6),
    "offsets_not_pair": image({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0]}}, b"\0" * 2),
    "offsets_float": image({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2.0]}}, b"\0" * 2),
    "missing_shape": image({"a": {"dtype": "U8", "data_offsets": [0, 2]}}, b"\0" * 2),
    "unknown_field": image({"a": dict(t("U8", [2], 0, 2), extra=1)}, b"\0" * 2),
    "metadata_not_strings": image({"__metadata__": {"k": 1}, "a": t("U8", [2], 0, 2)}, b"\0" * 2),
    "deep_nesting": image(b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}"),
    "empty_name": image({"": t("U8", [2], 0, 2)}, b"\0" * 2),
    "too_many_dims": image({"a": t("U8", [1] * 65, 0, 1)}, b"\0"),
}

for name, blob in CASES.items():
    with open(os.path.join(HERE, name + ".safetensors"), "wb") as f:
        f.write(blob)
