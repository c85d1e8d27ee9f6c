"""Runs the tests against the package in python/ (no install needed) and the library that
$MXQ_LIBRARY names (ctest sets it to the freshly built libmxq.so), else build/src/libmxq.so."""
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
