"""The package as users install it: `pip wheel` makes a platform wheel that carries libmxq under
its SONAME, and the installed package, run from elsewhere with no MXQ_LIBRARY, loads that copy and
knows its version. Built without the torch operators (MXQ_TORCH_OPS=0) to stay quick; the GPU
script installs them and runs every test against that install."""
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

import mxq
from mxq import _library
from mxq_testing import REPO


def _has(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"],
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not (_has("pip") and _has("setuptools") and _has("wheel")),
                    reason="needs pip, setuptools and wheel")
def test_wheel_carries_libmxq_and_installs(tmp_path):
    # A copy of python/, so that the build's files (build/, *.egg-info) stay out of the tree.
    src = tmp_path / "python"
    shutil.copytree(os.path.join(REPO, "python"), src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "*.so", "*.so.*"))
    env = {k: v for k, v in os.environ.items() if k != "MXQ_LIBRARY"}
    env.update(MXQ_LIBMXQ=os.path.abspath(mxq.library().path), MXQ_TORCH_OPS="0", PIP_NO_INDEX="1")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["wheel", "--no-build-isolation", "--no-deps", "-w", str(tmp_path / "dist"),
                          str(src)], env=env, check=True)
    (wheel,) = (tmp_path / "dist").iterdir()
    assert wheel.name.startswith(f"mxq-{mxq.__version__}-") and "none-any" not in wheel.name
    with zipfile.ZipFile(wheel) as z:
        assert {f"mxq/{_library.SONAME}", "mxq/VERSION", "mxq/__init__.py"} <= set(z.namelist())

    site = tmp_path / "site"
    subprocess.run(pip + ["install", "--no-deps", "--target", str(site), str(wheel)], env=env,
                   check=True)
    env["PYTHONPATH"] = str(site)
    script = ("import numpy as np, mxq\n"
              "print(mxq.library().path)\n"
              "print(mxq.__version__, mxq.version())\n"
              "print(mxq.quantize(np.ones((32, 64), np.float32)).row_data.shape)\n")
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout.splitlines()
    assert out == [str(site / "mxq" / _library.SONAME), f"{mxq.__version__} {mxq.__version__}",
                   "(32, 64)"]
