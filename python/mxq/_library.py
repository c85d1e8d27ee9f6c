"""Finds and loads libmxq.so, and resolves each C function once with its argtypes and restype."""
import ctypes
import os
import threading

from . import _abi
from .errors import raise_for_status

_P = ctypes.POINTER
_i32, _i64, _vp = ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p

# name -> (restype, argtypes), as declared in include/mxq/mxq.h.
_PROTOTYPES = {
    "mxq_quantize": (_i32, [_P(_abi.QuantizeArgs)]),
    "mxq_quantize_sizes": (_i32, [_P(_abi.QuantizeArgs), _P(_abi.QuantizeSizes)]),
    "mxq_dequantize": (_i32, [_P(_abi.DequantizeArgs)]),
    "mxq_dequantize_size": (_i32, [_P(_abi.DequantizeArgs), _P(_i64)]),
    "mxq_tensor_amax": (_i32, [_P(_abi.TensorView), _vp, _i32, _vp]),
    "mxq_pad": (_i32, [_P(_abi.PadArgs)]),
    "mxq_pad_rows": (_i32, [_P(_abi.PadArgs), _P(_i64)]),
    "mxq_unpad": (_i32, [_P(_abi.UnpadArgs)]),
    "mxq_swizzle": (_i32, [_P(_abi.SwizzleArgs)]),
    "mxq_swizzle_size": (_i32, [_P(_abi.SwizzleArgs), _P(_i64)]),
    "mxq_unswizzle": (_i32, [_P(_abi.SwizzleArgs), _vp]),
    "mxq_swiglu_quantize": (_i32, [_P(_abi.SwigluArgs)]),
    "mxq_swiglu_quantize_sizes": (_i32, [_P(_abi.SwigluArgs), _P(_abi.QuantizeSizes)]),
    "mxq_swiglu_backward_quantize": (_i32, [_P(_abi.SwigluBackwardArgs)]),
    "mxq_swiglu_backward_quantize_sizes": (_i32, [_P(_abi.SwigluBackwardArgs), _P(_abi.QuantizeSizes)]),
    "mxq_validate_group_ends": (_i32, [_P(_abi.TokenGroups), _i64, _i32, _vp]),
    "mxq_version_string": (ctypes.c_char_p, []),
    "mxq_abi_version": (_i32, []),
    "mxq_cuda_available": (_i32, []),
    "mxq_last_error": (ctypes.c_char_p, []),
}

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_PACKAGE_DIR, "VERSION"), encoding="utf-8") as _f:
    VERSION = _f.read().strip()
# The name the library is installed and linked under (CMake's SOVERSION: major.minor).
SONAME = "libmxq.so." + ".".join(VERSION.split(".")[:2])
_REPO_LIBRARY = os.path.join(_PACKAGE_DIR, "..", "..", "build", "src", "libmxq.so")


def library_candidates():
    """Where the library is looked for, in order: $MXQ_LIBRARY (when set, only there), the copy
    installed beside the package (libmxq.so.MAJOR.MINOR, the one the native torch operators link),
    this repository's CMake build (build/src/libmxq.so), then the system loader (by SONAME)."""
    env = os.environ.get("MXQ_LIBRARY")
    if env:
        return [env]  # an explicit choice: do not fall back silently to another build
    found = [p for p in (os.path.join(_PACKAGE_DIR, SONAME), os.path.normpath(_REPO_LIBRARY))
             if os.path.exists(p)]
    return found + [SONAME]


class AbiMismatch(OSError):
    """A libmxq was found but speaks another C ABI than this package: refused, never skipped."""


class Library:
    """The loaded library: one attribute per C function (ctypes function objects, resolved once)."""

    def __init__(self, path):
        self.path = path
        self.cdll = ctypes.CDLL(path)
        abi = getattr(self.cdll, "mxq_abi_version", None)
        found = abi() if abi is not None else "1 or older (no mxq_abi_version)"
        if found != _abi.ABI_VERSION:
            raise AbiMismatch(f"{path} has C ABI version {found} but this mxq package {VERSION} needs "
                          f"version {_abi.ABI_VERSION}: install the package and library together "
                          f"(pip install --no-build-isolation ./python) or point MXQ_LIBRARY at a "
                          f"libmxq of the same version")
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(self.cdll, name)
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name[len("mxq_"):], fn)

    def check(self, status):
        """Raises the mxq.Error subclass of a non-zero status with the library's message."""
        if status:
            raise_for_status(status, self.last_error)


_lock = threading.Lock()
_library = None


def library():
    """The process-wide Library, loaded on first use."""
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                errors = []
                for path in library_candidates():
                    try:
                        _library = Library(path)
                        break
                    except AbiMismatch:
                        raise
                    except OSError as e:
                        errors.append(f"{path}: {e}")
                else:
                    raise OSError("mxq: cannot load libmxq (install the package with pip install "
                                  "--no-build-isolation ./python, or build with CMake into build/, "
                                  "or set MXQ_LIBRARY): " + "; ".join(errors))
    return _library
