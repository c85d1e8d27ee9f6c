"""Exceptions raised for the library's status codes, each carrying mxq_last_error()'s message."""
from . import _abi


class Error(Exception):
    """Any failure reported by libmxq. `code` is the MXQ_ERR_* status, str(e) the message."""

    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidArgument(Error, ValueError):
    """MXQ_ERR_INVALID_ARGUMENT: a shape, dtype, pointer or parameter the op does not accept."""

    code = _abi.ERR_INVALID_ARGUMENT


class Unsupported(Error, NotImplementedError):
    """MXQ_ERR_UNSUPPORTED: valid, but not implemented by this build or backend."""

    code = _abi.ERR_UNSUPPORTED


class CudaError(Error, RuntimeError):
    """MXQ_ERR_CUDA: a CUDA runtime call failed."""

    code = _abi.ERR_CUDA


class InvalidOffsets(Error, ValueError):
    """MXQ_ERR_INVALID_OFFSETS: validate_group_ends found non-monotone or out-of-range ends."""

    code = _abi.ERR_INVALID_OFFSETS


_BY_CODE = {cls.code: cls for cls in (InvalidArgument, Unsupported, CudaError, InvalidOffsets)}


def raise_for_status(status, last_error):
    """Raises the exception of a non-zero status; `last_error` returns the library's message."""
    message = last_error().decode("utf-8", "replace")
    cls = _BY_CODE.get(status)
    if cls is None:
        raise Error(f"mxq: unknown status {status}: {message}", status)
    raise cls(message)
