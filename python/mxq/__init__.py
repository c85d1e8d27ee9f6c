"""mxq: microscaling (MXFP8 / MXFP4 / NVFP4) quantization for numpy arrays and torch tensors.

numpy arrays run on libmxq's CPU reference backend through its C ABI (include/mxq/mxq.h), loaded
with ctypes. torch tensors run through mxq's native torch operators torch.ops.mxq.<name>, built
against the local torch when the package is installed: CPU tensors on the CPU backend, CUDA
tensors on the cuda backend on the current stream (no host synchronisation), torch.compile and
CUDA graph friendly. See python/README.md for the dtypes and shapes, docs/layouts.md for the byte
layouts.
"""
import sys
from collections import namedtuple

from . import _core
from ._library import VERSION as __version__
from ._library import library, library_candidates
from .errors import CudaError, Error, InvalidArgument, InvalidOffsets, Unsupported

__all__ = [
    "quantize", "dequantize", "tensor_amax", "pad", "unpad", "swizzle", "unswizzle",
    "validate_group_ends", "swiglu_quantize", "swiglu_backward_quantize", "QuantizeResult", "version", "cuda_available", "register_torch_ops",
    "library", "library_candidates", "__version__",
    "Error", "InvalidArgument", "Unsupported", "CudaError", "InvalidOffsets",
]

QuantizeResult = namedtuple(
    "QuantizeResult",
    "row_data row_scales col_data col_scales s_enc s_dec padded_starts padded_ends amax",
    defaults=(None,))
QuantizeResult.__doc__ = """Outputs of quantize; None where the call writes nothing.

row_data / col_data: codes ([B,] Mr, K) resp. ([B,] K, Mc) (fp4: last dimension halved, two codes
per byte). row_scales / col_scales: linear: ([B,] Mr, ceil(K/block)) resp. ([B,] K, ceil(Mc/block))
(+G columns with token groups); blocked: flat ([B,] bytes). s_enc, s_dec: nvfp4 only, float32 (B,).
padded_starts, padded_ends: int32 (G,), only when a direction pads. amax: float32 (B,) with
with_amax: the amax of each batch of the input, as tensor_amax gives it (delayed scaling: the next
nvfp4 call's tensor_amax)."""


# The backends, imported on first use (cached in globals so that torch.compile traces a plain
# global read rather than an import statement).
_torch_module = None
_numpy_module = None


def _torch_mod():
    global _torch_module
    if _torch_module is None:
        from . import _torch as t
        _torch_module = t
    return _torch_module


def _np_mod():
    global _numpy_module
    if _numpy_module is None:
        from . import _numpy as n
        _numpy_module = n
    return _numpy_module


def _is_numpy(x):
    """True for numpy arrays; for anything but a numpy array or a torch tensor, InvalidArgument."""
    module = type(x).__module__
    if module == "numpy":
        return True
    if module.startswith("torch"):  # torch's tensors and subclasses (what torch.compile traces)
        return False
    torch = sys.modules.get("torch")  # a tensor subclass defined elsewhere
    if torch is not None and isinstance(x, torch.Tensor):
        return False
    raise InvalidArgument(f"expected a numpy array or a torch tensor (got {type(x).__name__})")


def register_torch_ops():
    """Loads torch.ops.mxq.* and their fake functions (done on first use with a torch tensor; call
    it to get the ops before that, e.g. for torch.library.opcheck)."""
    _torch_mod()


def quantize(x, format="mxfp8", direction="rowwise", scale_rule="rceil", scale_layout="blocked",
             group_ends=None, pad_rowwise=0, pad_colwise=0, tensor_amax=None, with_amax=False):
    """Quantizes a 2-D (M, K) or 3-D (B, M, K) bf16/fp16/fp32 tensor (numpy: float32, float16, or
    uint16 bf16 bit patterns).

    format: "mxfp8" (e4m3), "mxfp8_e5m2", "mxfp4", "nvfp4". direction: "rowwise" (1 x block along
    K), "colwise" (block x 1 along M, data transposed) or "both" (one read). scale_rule: "rceil" or
    "floor" (MX formats). scale_layout: "linear" or "blocked" (128x4). group_ends: int32 (G,)
    cumulative token-group ends (2-D only), in the tensor's memory; rowwise scales are then
    grouped along M, colwise along K. pad_rowwise / pad_colwise: 0 or a power-of-two alignment A:
    that direction's groups start at multiples of A (fused pad). tensor_amax: nvfp4 only, an
    optional float32 (B,) amax replacing the computed one. with_amax: also the amax of each batch
    of x (QuantizeResult.amax; an nvfp4 call with tensor_amax finds it while it quantizes).
    Returns a QuantizeResult; grouped outputs are sized for the upper bound (host-known shapes).
    """
    if _is_numpy(x):
        outs = _core.quantize(_np_mod().ADAPTER, x, format, direction, scale_rule, scale_layout,
                              group_ends, pad_rowwise, pad_colwise, tensor_amax, with_amax)
    else:
        outs = _torch_mod().quantize(x, format, direction, scale_rule, scale_layout, group_ends,
                                     pad_rowwise, pad_colwise, tensor_amax, with_amax)
    return QuantizeResult(*outs)


def dequantize(data, scales, shape, format="mxfp8", direction="rowwise", scale_rule="rceil",
               scale_layout="blocked", group_ends=None, pad_rowwise=0, pad_colwise=0, s_dec=None,
               out_dtype=None):
    """The inverse of one direction of a quantize call made with the same arguments: `data` and
    `scales` are that direction's outputs, `shape` the logical input shape (M, K) or (B, M, K),
    s_dec the nvfp4 decode scales. Returns ([B,] rows', K), row-major even for colwise
    (rows' = padded rows when that direction padded, else M). out_dtype: float32 (default),
    float16 or bfloat16 (numpy: "bfloat16" gives uint16 bit patterns)."""
    if _is_numpy(data):
        key = _np_mod().out_key("fp32" if out_dtype is None else out_dtype)
        return _core.dequantize(_np_mod().ADAPTER, data, scales, shape, format, direction,
                                scale_rule, scale_layout, group_ends, pad_rowwise, pad_colwise,
                                s_dec, key)
    t = _torch_mod()
    return t.dequantize(data, scales, shape, format, direction, scale_rule, scale_layout,
                        group_ends, pad_rowwise, pad_colwise, s_dec,
                        t.torch.float32 if out_dtype is None else out_dtype)


def swiglu_quantize(h, format="mxfp8", direction="rowwise", scale_rule="rceil",
                    scale_layout="blocked", group_ends=None, pad_rowwise=0, pad_colwise=0,
                    tensor_amax=None, weights=None, variant="silu", layout="concatenated",
                    alpha=1.702, limit=7.0, keep_activation=False):
    """SwiGLU of h (M, 2F), quantized: a = swiglu(gate, up) [* weights] (M, F), in h's dtype,
    quantized exactly as quantize(a, ...) with the same arguments would (docs/spec.md section 8).
    variant: "silu" (silu(gate) * up) or "clamped" (gpt-oss: (clamp(up, -limit, limit) + 1) *
    g * sigmoid(alpha * g), g = min(gate, limit)). layout: "concatenated" ([gate | up]) or
    "interleaved" (gate in even, up in odd columns). weights: optional float32 (M,), one per row
    (the router probability). keep_activation: also return a itself (one more write of M x F).
    Returns (QuantizeResult, a or None)."""
    args = (format, direction, scale_rule, scale_layout, group_ends, pad_rowwise, pad_colwise,
            tensor_amax, weights, variant, layout, alpha, limit, keep_activation)
    if _is_numpy(h):
        outs = _core.swiglu_quantize(_np_mod().ADAPTER, h, *args)
    else:
        outs = _torch_mod().swiglu_quantize(h, *args)
    return QuantizeResult(*outs[:8]), outs[8]


def swiglu_backward_quantize(grad, h, format="mxfp8", direction="rowwise", scale_rule="rceil",
                             scale_layout="blocked", group_ends=None, pad_rowwise=0, pad_colwise=0,
                             tensor_amax=None, weights=None, variant="silu",
                             layout="concatenated", alpha=1.702, limit=7.0, keep_grad_input=False):
    """The backward of swiglu_quantize: from dA = grad (M, F) and h, dh (M, 2F) in h's layout and
    dtype, quantized as quantize(dh, ...) would; with weights also their gradient, float32 (M,):
    sum over f of dA * swiglu(gate, up). keep_grad_input: also return dh itself. Returns
    (QuantizeResult, dh or None, grad_weights or None)."""
    args = (format, direction, scale_rule, scale_layout, group_ends, pad_rowwise, pad_colwise,
            tensor_amax, weights, variant, layout, alpha, limit, keep_grad_input)
    if _is_numpy(h):
        outs = _core.swiglu_backward_quantize(_np_mod().ADAPTER, grad, h, *args)
    else:
        outs = _torch_mod().swiglu_backward_quantize(grad, h, *args)
    return QuantizeResult(*outs[:8]), outs[8], outs[9]


def tensor_amax(x):
    """max |x| over each batch in float32, shape (B,) (B = 1 for 2-D); NaN wins."""
    if _is_numpy(x):
        return _core.tensor_amax(_np_mod().ADAPTER, x)
    return _torch_mod().tensor_amax(x)


def pad(x, group_ends, alignment=32, with_amax=False):
    """Pads each token group of a 2-D (M, width) tensor to a multiple of `alignment` rows.
    Returns (out (round_up(M + G*A, A), width), padded_starts, padded_ends), int32 offsets, and
    with `with_amax` also max |out| as float32 of shape (1,), found while copying (a float input):
    the tensor_amax of an nvfp4 quantize of `out`, without a second read of it."""
    if _is_numpy(x):
        outs = _core.pad(_np_mod().ADAPTER, x, group_ends, alignment, with_amax)
    else:
        outs = _torch_mod().pad(x, group_ends, alignment, with_amax)
    return outs if with_amax else outs[:3]


def unpad(x, group_ends, rows, alignment=32, with_amax=False):
    """The inverse of pad: `rows` = M of the unpadded tensor; rows past the last end are 0.
    With `with_amax`, returns (out, amax) as pad does."""
    if _is_numpy(x):
        out, amax = _core.unpad(_np_mod().ADAPTER, x, group_ends, alignment, rows, with_amax)
    else:
        out, amax = _torch_mod().unpad(x, group_ends, alignment, rows, with_amax)
    return (out, amax) if with_amax else out


def swizzle(scales, group_ends=None, group_axis="none"):
    """Linear scale bytes ([B,] R, C) -> the blocked 128x4 layout, flat ([B,] bytes).
    group_axis: "none", "m" (groups of rows: ends in rows) or "k" (groups of columns: ends in
    scale columns); groups need a 2-D input."""
    if _is_numpy(scales):
        return _core.swizzle(_np_mod().ADAPTER, scales, group_ends, group_axis)
    return _torch_mod().swizzle(scales, group_ends, group_axis)


def unswizzle(blocked, shape, group_ends=None, group_axis="none"):
    """The inverse of swizzle: blocked bytes back to linear `shape` = ([B,] R, C)."""
    if _is_numpy(blocked):
        return _core.unswizzle(_np_mod().ADAPTER, blocked, shape, group_ends, group_axis)
    return _torch_mod().unswizzle(blocked, shape, group_ends, group_axis)


def validate_group_ends(group_ends, rows):
    """Raises InvalidOffsets (naming the first bad index) unless the ends are monotone and within
    [0, rows]. The only op that synchronises (it reads device offsets on the host)."""
    if not (isinstance(group_ends, (list, tuple)) or _is_numpy(group_ends)):
        group_ends = group_ends.detach().cpu().numpy()  # a torch tensor: read on the host
    return _core.validate_group_ends(_np_mod().ADAPTER, group_ends, rows)


def version():
    """libmxq's version string."""
    return library().version_string().decode()


def cuda_available():
    """True when libmxq was built with CUDA and a device is present."""
    return bool(library().cuda_available())


# Expert parallelism (mxq.expert_parallel: dispatch / combine over torch.distributed), imported on
# first use since it needs torch; not in __all__, so that `from mxq import *` works without torch.
_EXPERT_PARALLEL = ("dispatch", "combine", "DispatchResult", "DispatchHandle")


def __getattr__(name):
    if name in _EXPERT_PARALLEL:
        from . import expert_parallel
        return getattr(expert_parallel, name)
    raise AttributeError(f"module 'mxq' has no attribute {name!r}")
