"""Per-call host cost of the package: microseconds per call with tiny tensors, so that the time is
the Python + ctypes + validation overhead rather than the work.

    python3 -m mxq.overhead                 # numpy arrays, CPU backend
    python3 -m mxq.overhead --torch cuda    # torch tensors on the GPU (launch cost, no sync)

Also reports the bare C call (mxq_quantize with a prepared struct) as the floor the package adds
to.
"""
import argparse
import time


def _per_call_us(fn, iters):
    fn()  # warm up (first-use imports, library load, op registration)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter() - t0) / iters * 1e6)
    return best


def measure(iters=2000, torch_device=None):
    """{name: µs per call} for the ops on a (32, 32) input."""
    import numpy as np

    import mxq
    from mxq import _abi

    if torch_device is None:
        x = np.ones((32, 32), np.float32)
        ends = np.array([16, 32], np.int32)
        scales = np.ones((32, 4), np.uint8)
    else:
        import torch
        x = torch.ones((32, 32), dtype=torch.bfloat16, device=torch_device)
        ends = torch.tensor([16, 32], dtype=torch.int32, device=torch_device)
        scales = torch.ones((32, 4), dtype=torch.uint8, device=torch_device)
    q = mxq.quantize(x, scale_layout="linear")
    results = {
        "quantize mxfp8 rowwise": lambda: mxq.quantize(x),
        "quantize mxfp8 both": lambda: mxq.quantize(x, direction="both"),
        "quantize mxfp8 both, groups, padded": lambda: mxq.quantize(
            x, direction="both", group_ends=ends, pad_rowwise=32, pad_colwise=32),
        "dequantize": lambda: mxq.dequantize(q.row_data, q.row_scales, (32, 32),
                                             scale_layout="linear"),
        "pad": lambda: mxq.pad(x, ends),
        "swizzle": lambda: mxq.swizzle(scales),
    }
    if torch_device is not None:
        # The custom op itself, as torch.compile's graphs call it (mxq.quantize runs eager calls
        # on plain tensors without torch's dispatcher).
        results["quantize mxfp8 rowwise, torch.ops.mxq"] = lambda: torch.ops.mxq.quantize(
            x, "mxfp8", "rowwise", "rceil", "blocked", None, 0, 0, None)
    out = {}
    for name, fn in results.items():
        try:
            out[name] = _per_call_us(fn, iters)
        except mxq.Unsupported as e:  # an op this backend does not implement yet
            out[name] = f"unsupported ({e})"
    if torch_device is None:
        lib = mxq.library()
        row_data, row_scales = np.empty((32, 32), np.uint8), np.empty(128 * 4, np.uint8)
        args = _abi.QuantizeArgs()
        args.input = _abi.TensorView(x.ctypes.data, 1, 32, 32, 0, 0, _abi.DTYPE["fp32"])
        args.layout, args.direction = _abi.LAYOUT["blocked"], _abi.DIRECTION["rowwise"]
        args.row_data, args.row_scales = row_data.ctypes.data, row_scales.ctypes.data
        args.backend = _abi.BACKEND_CPU
        out["bare C mxq_quantize (floor)"] = _per_call_us(lambda: lib.quantize(args), iters)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--torch", metavar="DEVICE", help="torch tensors on DEVICE (cpu, cuda)")
    p.add_argument("--iters", type=int, default=2000)
    a = p.parse_args()
    where = f"torch {a.torch}" if a.torch else "numpy, CPU backend"
    print(f"mxq per-call host cost ({where}, (32, 32) input, best of 5 x {a.iters} calls)")
    for name, us in measure(a.iters, a.torch).items():
        print(f"  {name:40s} {us:8.2f} us/call" if isinstance(us, float) else f"  {name:40s} {us}")


if __name__ == "__main__":
    main()
