"""The package's declared version (python/pyproject.toml) is the library's (CMake's project
version, reported by mxq_version_string): the two files state it separately, so this test keeps
them from drifting apart."""
import os
import re

import mxq
from mxq_testing import REPO


def test_pyproject_version_is_the_library_version():
    with open(os.path.join(REPO, "python", "pyproject.toml"), encoding="utf-8") as f:
        declared = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M).group(1)
    assert mxq.version() == declared
