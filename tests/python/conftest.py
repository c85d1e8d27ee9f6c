"""Runs the tests against the package in python/ (no install needed) and the library that
$MXQ_LIBRARY names (ctest sets it to the freshly built libmxq.so), else the package's own or
build/src/libmxq.so. With MXQ_TEST_INSTALLED=1 they run against the installed package instead
(scripts/gpu.sh: the package pip installed, its libmxq and native torch operators inside)."""
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if os.environ.get("MXQ_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(REPO, "python"))
