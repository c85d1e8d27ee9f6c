"""ctypes mirror of include/mxq/mxq.h: constants and structs, field for field, in header order.

mxq.h promises plain C structs of fixed-width integers and pointers with natural alignment, so a
ctypes.Structure with the same fields in the same order has the same layout. tests/python/
test_abi.py compiles a C probe of the header and compares every size and offset.
"""
import ctypes

c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
# Every pointer field is c_void_p: all object pointers have one size and alignment in C, and a
# c_void_p field takes a plain integer address without a ctypes.cast on each call.
c_void_p = ctypes.c_void_p

# The C ABI these structs mirror (MXQ_ABI_VERSION); the library must report the same.
ABI_VERSION = 3

# Status codes (mxq::Code).
OK = 0
ERR_INVALID_ARGUMENT = 1
ERR_UNSUPPORTED = 2
ERR_CUDA = 3
ERR_INVALID_OFFSETS = 4

# Enumerations (include/mxq/types.hpp); the Python-facing names map onto these values.
DTYPE = {"bf16": 0, "fp16": 1, "fp32": 2, "u8": 3}
FORMAT = {"mxfp8": 0, "mxfp8_e5m2": 1, "mxfp4": 2, "nvfp4": 3}
RULE = {"rceil": 0, "floor": 1}
LAYOUT = {"linear": 0, "blocked": 1}
DIRECTION = {"rowwise": 1, "colwise": 2, "both": 3}
BACKEND_AUTO, BACKEND_CPU, BACKEND_CUDA = 0, 1, 2
SCALE_GROUPS = {"none": 0, "m": 1, "k": 2}


class TensorView(ctypes.Structure):
    _fields_ = [
        ("data", c_void_p),
        ("batch", c_int64),
        ("rows", c_int64),
        ("cols", c_int64),
        ("row_stride", c_int64),
        ("batch_stride", c_int64),
        ("dtype", c_int32),
    ]


class TokenGroups(ctypes.Structure):
    _fields_ = [
        ("ends", c_void_p),
        ("count", c_int64),
    ]


class QuantizeArgs(ctypes.Structure):
    _fields_ = [
        ("input", TensorView),
        ("format", c_int32),
        ("rule", c_int32),
        ("layout", c_int32),
        ("direction", c_int32),
        ("groups", TokenGroups),
        ("pad_rowwise", c_int32),
        ("pad_colwise", c_int32),
        ("tensor_amax", c_void_p),
        ("row_data", c_void_p),
        ("row_scales", c_void_p),
        ("col_data", c_void_p),
        ("col_scales", c_void_p),
        ("s_enc", c_void_p),
        ("s_dec", c_void_p),
        ("padded_starts", c_void_p),
        ("padded_ends", c_void_p),
        ("backend", c_int32),
        ("stream", c_void_p),
        ("amax", c_void_p),
    ]


class QuantizeSizes(ctypes.Structure):
    _fields_ = [
        ("row_data_rows", c_int64),
        ("col_data_cols", c_int64),
        ("row_data_bytes", c_int64),
        ("row_scale_bytes", c_int64),
        ("col_data_bytes", c_int64),
        ("col_scale_bytes", c_int64),
        ("tensor_scale_count", c_int64),
        ("padded_offset_count", c_int64),
    ]


class DequantizeArgs(ctypes.Structure):
    _fields_ = [
        ("format", c_int32),
        ("rule", c_int32),
        ("layout", c_int32),
        ("direction", c_int32),
        ("batch", c_int64),
        ("rows", c_int64),
        ("cols", c_int64),
        ("groups", TokenGroups),
        ("pad_rowwise", c_int32),
        ("pad_colwise", c_int32),
        ("data", c_void_p),
        ("scales", c_void_p),
        ("s_dec", c_void_p),
        ("out", c_void_p),
        ("out_dtype", c_int32),
        ("backend", c_int32),
        ("stream", c_void_p),
    ]


class PadArgs(ctypes.Structure):
    _fields_ = [
        ("input", TensorView),
        ("groups", TokenGroups),
        ("alignment", c_int32),
        ("out", c_void_p),
        ("padded_starts", c_void_p),
        ("padded_ends", c_void_p),
        ("backend", c_int32),
        ("stream", c_void_p),
        ("amax", c_void_p),
    ]


class UnpadArgs(ctypes.Structure):
    _fields_ = [
        ("input", TensorView),
        ("groups", TokenGroups),
        ("alignment", c_int32),
        ("rows", c_int64),
        ("out", c_void_p),
        ("backend", c_int32),
        ("stream", c_void_p),
        ("amax", c_void_p),
    ]


class SwizzleArgs(ctypes.Structure):
    _fields_ = [
        ("in_", c_void_p),  # `in` in C; a Python keyword
        ("batch", c_int64),
        ("rows", c_int64),
        ("cols", c_int64),
        ("group_axis", c_int32),
        ("groups", TokenGroups),
        ("out", c_void_p),
        ("backend", c_int32),
        ("stream", c_void_p),
    ]


# Every struct of mxq.h with its C name (used by the ABI test).
SWIGLU_VARIANT = {"silu": 0, "clamped": 1}
SWIGLU_LAYOUT = {"concatenated": 0, "interleaved": 1}


class SwigluParams(ctypes.Structure):
    _fields_ = [
        ("variant", c_int32),
        ("layout", c_int32),
        ("alpha", ctypes.c_float),
        ("limit", ctypes.c_float),
    ]


class SwigluArgs(ctypes.Structure):
    _fields_ = [
        ("quantize", QuantizeArgs),
        ("swiglu", SwigluParams),
        ("weights", c_void_p),
        ("activation", c_void_p),
    ]


class SwigluBackwardArgs(ctypes.Structure):
    _fields_ = [
        ("quantize", QuantizeArgs),
        ("grad", TensorView),
        ("swiglu", SwigluParams),
        ("weights", c_void_p),
        ("grad_input", c_void_p),
        ("grad_weights", c_void_p),
    ]


STRUCTS = {
    "mxq_tensor_view": TensorView,
    "mxq_token_groups": TokenGroups,
    "mxq_quantize_args": QuantizeArgs,
    "mxq_quantize_sizes": QuantizeSizes,
    "mxq_dequantize_args": DequantizeArgs,
    "mxq_pad_args": PadArgs,
    "mxq_unpad_args": UnpadArgs,
    "mxq_swizzle_args": SwizzleArgs,
    "mxq_swiglu_params": SwigluParams,
    "mxq_swiglu_args": SwigluArgs,
    "mxq_swiglu_backward_args": SwigluBackwardArgs,
}
