"""One version everywhere: the repository's VERSION file is CMake's project version (reported by
the library), the package's mxq.__version__ and the version setup.py gives the distribution."""
import os
import re

import mxq
from mxq import _abi
from mxq_testing import REPO


def _version_file():
    with open(os.path.join(REPO, "VERSION"), encoding="utf-8") as f:
        return f.read().strip()


def test_package_library_and_version_file_agree():
    assert re.fullmatch(r"\d+\.\d+\.\d+", _version_file())
    assert mxq.__version__ == _version_file() == mxq.version()


def test_the_library_speaks_the_package_abi():
    assert mxq.library().abi_version() == _abi.ABI_VERSION


def test_cmake_and_setup_read_the_version_file():
    with open(os.path.join(REPO, "CMakeLists.txt"), encoding="utf-8") as f:
        assert 'file(STRINGS "${CMAKE_CURRENT_SOURCE_DIR}/VERSION"' in f.read()
    with open(os.path.join(REPO, "python", "pyproject.toml"), encoding="utf-8") as f:
        assert 'dynamic = ["version"]' in f.read()
