"""The ctypes mirror (mxq/_abi.py) against include/mxq/mxq.h itself: a C probe compiled from the
header reports sizeof and offsetof of every struct and field; the #define constants are parsed
from the header. mxq.h offers no runtime query of its struct sizes, hence the probe."""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

from mxq import _abi
from mxq_testing import REPO

HEADER = os.path.join(REPO, "include", "mxq", "mxq.h")


def _c_field(name):
    return "in" if name == "in_" else name


def _probe_source():
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <mxq/mxq.h>", "int main(void) {"]
    for cname, cls in _abi.STRUCTS.items():
        lines.append(f'  printf("{cname} sizeof %zu\\n", sizeof(struct {cname}));')
        for field, _ in cls._fields_:
            f = _c_field(field)
            lines.append(f'  printf("{cname} {field} %zu\\n", offsetof(struct {cname}, {f}));')
    lines += ["  return 0;", "}"]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to probe mxq.h")
    d = tmp_path_factory.mktemp("abi")
    src, exe = d / "probe.c", d / "probe"
    src.write_text(_probe_source())
    subprocess.run([cc, "-std=c99", "-I", os.path.join(REPO, "include"), str(src), "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {(s, f): int(v) for s, f, v in (line.split() for line in out.splitlines())}


@pytest.mark.parametrize("cname", sorted(_abi.STRUCTS))
def test_struct_matches_header(c_layout, cname):
    cls = _abi.STRUCTS[cname]
    assert ctypes.sizeof(cls) == c_layout[(cname, "sizeof")]
    for field, _ in cls._fields_:
        assert getattr(cls, field).offset == c_layout[(cname, field)], field


def test_every_struct_of_the_header_is_mirrored():
    text = open(HEADER).read()
    declared = set(re.findall(r"^struct (mxq_\w+) \{", text, re.M))
    assert declared == set(_abi.STRUCTS)


def test_field_names_and_order_follow_the_header():
    text = open(HEADER).read()
    for cname, cls in _abi.STRUCTS.items():
        body = re.search(r"struct %s \{(.*?)\n\};" % cname, text, re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        names = re.findall(r"(\w+);", body)
        assert names == [_c_field(f) for f, _ in cls._fields_], cname


def test_constants_match_the_header():
    defines = dict((k, int(v)) for k, v in
                   re.findall(r"^#define (MXQ_\w+) (-?\d+)", open(HEADER).read(), re.M))
    tables = {"MXQ_DTYPE_": _abi.DTYPE, "MXQ_FORMAT_": _abi.FORMAT, "MXQ_RULE_": _abi.RULE,
              "MXQ_LAYOUT_": _abi.LAYOUT, "MXQ_DIRECTION_": _abi.DIRECTION}
    for prefix, table in tables.items():
        from_header = {k[len(prefix):].lower(): v for k, v in defines.items() if k.startswith(prefix)}
        assert from_header == table, prefix
    groups = {"none": "NONE", "m": "ALONG_M", "k": "ALONG_K"}
    for name, value in _abi.SCALE_GROUPS.items():
        assert defines["MXQ_SCALE_GROUPS_" + groups[name]] == value
    assert (defines["MXQ_BACKEND_AUTO"], defines["MXQ_BACKEND_CPU"], defines["MXQ_BACKEND_CUDA"]) == (
        _abi.BACKEND_AUTO, _abi.BACKEND_CPU, _abi.BACKEND_CUDA)
    assert defines["MXQ_ABI_VERSION"] == _abi.ABI_VERSION
    assert (defines["MXQ_OK"], defines["MXQ_ERR_INVALID_ARGUMENT"], defines["MXQ_ERR_UNSUPPORTED"],
            defines["MXQ_ERR_CUDA"], defines["MXQ_ERR_INVALID_OFFSETS"]) == (
        _abi.OK, _abi.ERR_INVALID_ARGUMENT, _abi.ERR_UNSUPPORTED, _abi.ERR_CUDA,
        _abi.ERR_INVALID_OFFSETS)
