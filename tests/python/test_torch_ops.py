"""torch tensors through mxq (the native mxq::* operators): byte for byte what the numpy path
computes on the CPU backend, on CPU tensors and on CUDA tensors (cuda backend, current stream, no
host synchronisation); eager output shapes equal the fake functions'. Skipped without torch; the
CUDA cases without a GPU; ops the cuda backend does not implement yet skip on mxq.Unsupported."""
import itertools
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mxq  # noqa: E402
from torch_testing import (CUDA, DEVICES, assert_same_bytes, bf16_pair,  # noqa: E402
                           skip_unsupported)

FORMATS = ["mxfp8", "mxfp8_e5m2", "mxfp4", "nvfp4"]
DATA_DTYPE = {"mxfp8": torch.float8_e4m3fn, "mxfp8_e5m2": torch.float8_e5m2,
              "mxfp4": torch.uint8, "nvfp4": torch.uint8}
SCALE_DTYPE = {"mxfp8": torch.float8_e8m0fnu, "mxfp8_e5m2": torch.float8_e8m0fnu,
               "mxfp4": torch.float8_e8m0fnu, "nvfp4": torch.float8_e4m3fn}
ENDS = [40, 40, 150, 190]  # an empty group, sizes that are not multiples of 32, rows past the end


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt,direction,layout,grouped", list(itertools.product(
    FORMATS, ["rowwise", "colwise", "both"], ["linear", "blocked"], [False, True])))
def test_quantize_matches_cpu_backend(device, fmt, direction, layout, grouped):
    bits, x = bf16_pair((200, 128), seed=1)
    kw = dict(format=fmt, direction=direction, scale_layout=layout)
    tkw = dict(kw)
    if grouped:
        kw.update(group_ends=np.array(ENDS, np.int32), pad_rowwise=32, pad_colwise=32)
        tkw.update(group_ends=torch.tensor(ENDS, dtype=torch.int32, device=device),
                   pad_rowwise=32, pad_colwise=32)
    want = mxq.quantize(bits, **kw)
    with skip_unsupported():
        got = mxq.quantize(x.to(device), **tkw)
    for name, g, w in zip(mxq.QuantizeResult._fields, got, want):
        assert_same_bytes(g, w)
        if g is not None:
            assert g.device.type == device and g.is_contiguous(), name
    for data, scales in [(got.row_data, got.row_scales), (got.col_data, got.col_scales)]:
        if data is not None:
            assert data.dtype == DATA_DTYPE[fmt] and scales.dtype == SCALE_DTYPE[fmt]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_3d_weights_match_cpu_backend(device, fmt):
    bits, w = bf16_pair((4, 64, 96), seed=2)
    want = mxq.quantize(bits, format=fmt, direction="both")
    with skip_unsupported():
        got = mxq.quantize(w.to(device), format=fmt, direction="both")
    for g, wnt in zip(got, want):
        assert_same_bytes(g, wnt)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt,direction", list(itertools.product(FORMATS, ["rowwise", "colwise"])))
def test_dequantize_matches_cpu_backend(device, fmt, direction):
    bits, x = bf16_pair((160, 64), seed=3)
    kw = dict(format=fmt, direction=direction, scale_layout="blocked", pad_rowwise=32,
              pad_colwise=32)
    q = mxq.quantize(bits, group_ends=np.array(ENDS[:3], np.int32), **kw)
    i = 0 if direction == "rowwise" else 2
    want = mxq.dequantize(q[i], q[i + 1], (160, 64), s_dec=q.s_dec, out_dtype="bfloat16",
                          group_ends=np.array(ENDS[:3], np.int32), **kw)
    dev = lambda a: None if a is None else torch.from_numpy(a).to(device)  # noqa: E731
    data = dev(q[i]).view(DATA_DTYPE[fmt])
    scales = dev(q[i + 1]).view(SCALE_DTYPE[fmt])
    with skip_unsupported():
        got = mxq.dequantize(data, scales, (160, 64), s_dec=dev(q.s_dec),
                             out_dtype=torch.bfloat16,
                             group_ends=torch.tensor(ENDS[:3], dtype=torch.int32, device=device),
                             **kw)
    assert got.dtype == torch.bfloat16
    assert_same_bytes(got, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float8_e4m3fn])
def test_pad_unpad_match_cpu_backend(device, dtype):
    _, x = bf16_pair((190, 48), seed=4, scale=10.0)
    x = x.to(dtype)
    ends_t = torch.tensor(ENDS, dtype=torch.int32, device=device)
    want = mxq.pad(x.view(torch.uint8).numpy(), np.array(ENDS, np.int32), alignment=32)
    with skip_unsupported():
        out, starts, pends = mxq.pad(x.to(device), ends_t, alignment=32)
    assert out.dtype == dtype
    assert_same_bytes(out, want[0])
    assert_same_bytes(starts, want[1])
    assert_same_bytes(pends, want[2])
    with skip_unsupported():
        back = mxq.unpad(out, ends_t, 190, alignment=32)
    assert_same_bytes(back, mxq.unpad(want[0], np.array(ENDS, np.int32), 190, alignment=32))
    if dtype != torch.float8_e4m3fn:  # the amax of float payloads, as the cpu backend finds it
        want_amax = mxq.pad(x, torch.tensor(ENDS, dtype=torch.int32), alignment=32, with_amax=True)[3]
        with skip_unsupported():
            amax = mxq.pad(x.to(device), ends_t, alignment=32, with_amax=True)[3]
            back_amax = mxq.unpad(out, ends_t, 190, alignment=32, with_amax=True)[1]
        assert_same_bytes(amax, want_amax)
        assert_same_bytes(back_amax, want_amax)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis", ["none", "m", "k"])
def test_swizzle_matches_cpu_backend(device, axis):
    s = np.random.default_rng(5).integers(0, 256, size=(300, 12)).astype(np.uint8)
    ends = None if axis == "none" else np.array([100, 100, 290] if axis == "m" else [3, 9, 12],
                                                np.int32)
    want = mxq.swizzle(s, ends, axis)
    ends_t = None if ends is None else torch.from_numpy(ends).to(device)
    st = torch.from_numpy(s).to(device).view(torch.float8_e8m0fnu)
    with skip_unsupported():
        got = mxq.swizzle(st, ends_t, axis)
    assert got.dtype == torch.float8_e8m0fnu
    assert_same_bytes(got, want)
    with skip_unsupported():
        back = mxq.unswizzle(got, s.shape, ends_t, axis)
    assert_same_bytes(back, mxq.unswizzle(want, s.shape, ends, axis))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("given", [False, True])
def test_quantize_amax_output_matches_cpu_backend(device, given):
    bits, x = bf16_pair((3, 130, 64), seed=7)
    amax = [2.0, 3.0, 4.0] if given else None
    with skip_unsupported():
        q = mxq.quantize(x.to(device), format="nvfp4", direction="both", with_amax=True,
                         tensor_amax=torch.tensor(amax, device=device) if given else None)
    want = mxq.quantize(bits, format="nvfp4", direction="both", with_amax=True,
                        tensor_amax=np.float32(amax) if given else None)
    assert q.amax.dtype == torch.float32 and q.amax.shape == (3,)
    for got, ref in zip(q, want):
        if ref is not None:
            assert_same_bytes(got, ref)


@pytest.mark.parametrize("device", DEVICES)
def test_tensor_amax_matches_cpu_backend(device):
    bits, x = bf16_pair((3, 50, 64), seed=6)
    with skip_unsupported():
        got = mxq.tensor_amax(x.to(device))
    assert got.dtype == torch.float32 and got.shape == (3,)
    assert_same_bytes(got, mxq.tensor_amax(bits))


@pytest.mark.parametrize("device", DEVICES)
def test_strided_tensors(device):
    bits, x = bf16_pair((128, 256), seed=7)
    x = x.to(device)
    for view in (x[:, :96], x[::2, 32:128], x.t()[:64, :64]):
        with skip_unsupported():
            got = mxq.quantize(view, direction="both", scale_layout="linear")
        want = mxq.quantize(view.contiguous(), direction="both", scale_layout="linear")
        for g, w in zip(got, want):
            assert_same_bytes(g, w)


def _tensors(result):
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("device", DEVICES)
def test_dispatch_mode_sees_the_ops_with_the_same_bytes(device):
    """Every torch call is a torch.ops.mxq.* operator call: a dispatch mode sees it, and the bytes
    are those of the call without the mode."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))

    _, x = bf16_pair((200, 128), seed=10)
    x = x.to(device)
    ends = torch.tensor(ENDS, dtype=torch.int32, device=device)
    q = mxq.quantize(x, scale_layout="linear")
    padded = mxq.pad(x, ends, 32)[0]
    calls = {
        "quantize": lambda: mxq.quantize(x, format="nvfp4", direction="both", group_ends=ends,
                                         pad_rowwise=32, pad_colwise=32),
        "dequantize": lambda: mxq.dequantize(q.row_data, q.row_scales, x.shape,
                                             scale_layout="linear"),
        "tensor_amax": lambda: mxq.tensor_amax(x),
        "pad": lambda: mxq.pad(x, ends, 32, with_amax=True),
        "unpad": lambda: mxq.unpad(padded, ends, 200, with_amax=True),
        "swizzle": lambda: mxq.swizzle(q.row_scales),
        "unswizzle": lambda: mxq.unswizzle(mxq.swizzle(q.row_scales), q.row_scales.shape),
    }
    for name, call in calls.items():
        with skip_unsupported():
            direct = _tensors(call())
        with Record() as mode:
            via_op = _tensors(call())
        assert f"mxq.{name}.default" in mode.names, (name, mode.names)
        assert len(direct) == len(via_op), name
        for d, v in zip(direct, via_op):
            assert_same_bytes(d, v)


@pytest.mark.parametrize("device", DEVICES)
def test_errors_carry_the_library_message(device):
    x = torch.ones(64, 33, dtype=torch.bfloat16, device=device)
    with pytest.raises(mxq.InvalidArgument, match="must be even") as e:
        mxq.quantize(x, format="mxfp4")
    with pytest.raises(mxq.InvalidArgument) as ref:  # the C ABI path: the library's own message
        mxq.quantize(np.ones((64, 33), np.float32), format="mxfp4")
    assert str(e.value) == str(ref.value)
    with pytest.raises(mxq.InvalidArgument, match="format must be one of"):
        mxq.quantize(x, format="mxfp9")
    with pytest.raises(mxq.InvalidArgument, match="tensor_amax has 1 elements but the input has 4"):
        mxq.quantize(x[:, :32].expand(4, 64, 32), format="nvfp4",
                     tensor_amax=torch.ones(1, device=device))
    q = mxq.quantize(x[:, :32].expand(4, 64, 32), format="nvfp4")
    with pytest.raises(mxq.InvalidArgument, match="s_dec has 1 elements but the input has 4"):
        mxq.dequantize(q.row_data, q.row_scales, (4, 64, 32), format="nvfp4", s_dec=q.s_dec[:1])
    with pytest.raises(mxq.InvalidArgument, match="must be 1-D"):
        mxq.quantize(x[:, :32], group_ends=torch.tensor([[64]], dtype=torch.int32, device=device))
    if device == "cuda":
        with pytest.raises(mxq.InvalidArgument, match="is on cpu but the input is on cuda"):
            mxq.quantize(x[:, :32], group_ends=torch.tensor([64], dtype=torch.int32))


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_cuda_calls_do_not_synchronize():
    _, x = bf16_pair((256, 128), seed=8)
    x = x.cuda()
    ends = torch.tensor(ENDS, dtype=torch.int32, device="cuda")
    mxq.quantize(x)  # first use: op registration, library load
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        mxq.quantize(x, direction="both")
        mxq.dequantize(*mxq.quantize(x)[:2], x.shape, out_dtype=torch.bfloat16)
        with skip_unsupported():
            mxq.quantize(x, direction="both", group_ends=ends, pad_rowwise=32, pad_colwise=32)
    finally:
        torch.cuda.set_sync_debug_mode("default")


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_cuda_runs_on_the_current_stream():
    _, x = bf16_pair((1024, 1024), seed=9)
    x = x.cuda()
    want = mxq.quantize(x, direction="both")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = mxq.quantize(x, direction="both")
        got_bytes = [g.view(torch.uint8).clone() for g in got if g is not None]
    torch.cuda.current_stream().wait_stream(side)
    for g, w in zip(got_bytes, [w for w in want if w is not None]):
        assert torch.equal(g, w.view(torch.uint8))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_eager_shapes_equal_the_fake_functions(device, fmt):
    """The operators size their outputs in C++ (csrc/output_shapes.hpp), the fake functions in
    Python (_shapes.py): the two agree over a grid of directions, layouts, batches, groups and
    paddings, dtypes and strides included."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    for direction, layout, (B, M, K), G, (pr, pc) in itertools.product(
            ["rowwise", "colwise", "both"], ["linear", "blocked"],
            [(1, 0, 64), (1, 1, 32), (1, 130, 96), (3, 66, 64)], [0, 1, 5],
            [(0, 0), (32, 0), (0, 16), (128, 128)]):
        if (G and B > 1) or ((pr or pc) and not G):
            continue  # groups are 2-D only; padding needs groups
        x = torch.zeros((B, M, K) if B > 1 else (M, K), dtype=torch.bfloat16, device=device)
        ends = torch.tensor([M * (i + 1) // max(G, 1) for i in range(G)], dtype=torch.int32,
                            device=device) if G else None
        args = (fmt, direction, "rceil", layout, ends, pr, pc, None, True)
        try:
            real = torch.ops.mxq.quantize(x, *args)
        except ValueError:
            continue  # a shape the format refuses (fp4 needs even rows and columns)
        with mode:
            fake = torch.ops.mxq.quantize(mode.from_tensor(x), *args[:4],
                                          None if ends is None else mode.from_tensor(ends),
                                          *args[5:])
        for r, f in zip(real, fake):
            assert (r.shape, r.dtype, r.stride()) == (f.shape, f.dtype, f.stride()), args


def test_a_missing_native_build_names_the_install_command(tmp_path):
    """With torch installed but mxq._torch_ops not built, the first torch call says how to build
    it (numpy calls are unaffected)."""
    import subprocess
    import sys

    script = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'mxq._torch_ops': raise ImportError('blocked by the test')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import numpy as np, torch, mxq\n"
        "mxq.quantize(np.ones((32, 32), np.float32))\n"
        "try:\n"
        "    mxq.quantize(torch.ones(32, 32))\n"
        "except ImportError as e:\n"
        "    print(e)\n")
    package_root = os.path.dirname(os.path.dirname(mxq.__file__))
    env = dict(os.environ, PYTHONPATH=package_root)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env=env).stdout
    assert "pip install --no-build-isolation ./python" in out, out
