"""Helpers shared by the Python tests, independent of the package under test."""
import json
import os

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GOLDEN = os.path.join(REPO, "tests", "data", "golden")

_NUMPY_DTYPES = {"bfloat16": np.uint16, "float32": np.float32, "uint8": np.uint8,
                 "int32": np.int32, "int64": np.int64}


def golden_cases(op):
    with open(os.path.join(GOLDEN, "manifest.json")) as f:
        return [c for c in json.load(f)["cases"] if c["op"] == op]


def golden_tensor(entry):
    """A golden file as a numpy array (bfloat16 as uint16 bit patterns)."""
    a = np.fromfile(os.path.join(GOLDEN, entry["file"]), dtype=_NUMPY_DTYPES[entry["dtype"]])
    return a.reshape(entry["shape"])


def to_bf16_bits(x):
    """float32 -> bf16 bit patterns, round to nearest even (finite inputs)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def sqnr_db(ref, test):
    ref = np.asarray(ref, dtype=np.float64)
    err = ref - np.asarray(test, dtype=np.float64)
    return 10 * np.log10(np.sum(ref * ref) / max(np.sum(err * err), 1e-300))


def rng(seed):
    return np.random.default_rng(seed)
