"""Fills a ctypes struct of mxq.h in one C call instead of one Python attribute set per field.

A Packer flattens a ctypes.Structure into a struct.Struct format with the exact offsets ctypes
computed (explicit pad bytes, standard sizes), and keeps one instance of the struct per thread.
`fill(*values)` writes every field, in the flattened header order, into that instance and returns
it, ready to pass to a function whose argtype is POINTER(struct). Writing every field on every call
means no value can leak from one call into the next.
"""
import ctypes
import struct
import threading

_CODES = {ctypes.c_int32: "i", ctypes.c_int64: "q", ctypes.c_void_p: "Q", ctypes.c_float: "f"}

assert ctypes.sizeof(ctypes.c_void_p) == 8, "mxq supports 64-bit platforms only"


def _leaves(cls, base):
    for name, ctype in cls._fields_:
        offset = base + getattr(cls, name).offset
        if issubclass(ctype, ctypes.Structure):
            yield from _leaves(ctype, offset)
        else:
            yield name, offset, ctype


class Packer:
    def __init__(self, cls):
        self.cls = cls
        fmt, pos, names = ["="], 0, []
        for name, offset, ctype in _leaves(cls, 0):
            fmt.append("x" * (offset - pos) + _CODES[ctype])
            pos = offset + ctypes.sizeof(ctype)
            names.append(name)
        fmt.append("x" * (ctypes.sizeof(cls) - pos))
        self.field_names = tuple(names)
        self._codes = tuple(_CODES[ctype] for _, _, ctype in _leaves(cls, 0))
        self._struct = struct.Struct("".join(fmt))
        assert self._struct.size == ctypes.sizeof(cls)
        self._pack_into = self._struct.pack_into
        self._local = threading.local()

    def fill(self, *values):
        """The calling thread's instance of the struct with all fields set to `values`."""
        try:
            inst = self._local.inst
        except AttributeError:
            inst = self._local.inst = self.cls()
        try:
            self._pack_into(inst, 0, *values)
        except struct.error:
            raise self._bad_field(values) from None
        return inst

    def _bad_field(self, values):
        """The InvalidArgument naming the first value its C field cannot hold."""
        from .errors import InvalidArgument
        for name, code, value in zip(self.field_names, self._codes, values):
            try:
                struct.pack("=" + code, value)
            except struct.error:
                kind = {"i": "int32", "q": "int64", "Q": "pointer", "f": "float"}[code]
                what = "a number" if code == "f" else "an integer"
                return InvalidArgument(f"{name} ({value!r}) is not {what} that fits the C "
                                       f"field ({kind})")
        return InvalidArgument("an argument does not fit its C field")
