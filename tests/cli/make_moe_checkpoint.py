#!/usr/bin/env python3
"""Writes a synthetic MoE-like bf16 checkpoint directory (config.json + one safetensors shard) for
timing `mxq quantize`. Values are normal with a few outliers, so every format sees realistic blocks.

    PYENV_VERSION=system python3 tests/cli/make_moe_checkpoint.py /tmp/moe1g --gib 1
"""
import argparse
import json
import os
import struct

import numpy as np


def tensors(total_bytes, hidden, inter):
    """Names and shapes of expert projections (gate, up, down), plus attention, until total_bytes."""
    out, used, layer = [], 0, 0
    while used < total_bytes:
        p = f"model.layers.{layer}"
        for name, shape in [(f"{p}.self_attn.q_proj.weight", (hidden, hidden)),
                            (f"{p}.self_attn.o_proj.weight", (hidden, hidden))]:
            out.append((name, shape))
            used += 2 * shape[0] * shape[1]
        for e in range(8):
            for proj, shape in [("gate_proj", (inter, hidden)), ("up_proj", (inter, hidden)),
                                ("down_proj", (hidden, inter))]:
                if used >= total_bytes:
                    return out
                out.append((f"{p}.mlp.experts.{e}.{proj}.weight", shape))
                used += 2 * shape[0] * shape[1]
        out.append((f"{p}.post_attention_layernorm.weight", (hidden,)))
        layer += 1
    return out


def bf16_bytes(rng, shape):
    x = rng.standard_normal(shape, dtype=np.float32) * 0.02
    x.flat[:: 997] *= 40.0  # outliers
    u = x.view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()  # RNE to bf16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--inter", type=int, default=1408)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    specs = tensors(int(a.gib * (1 << 30)), a.hidden, a.inter)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in specs:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    rng = np.random.default_rng(0)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, shape in specs:
            f.write(bf16_bytes(rng, shape))
    config = {"model_type": "mixtral", "hidden_size": a.hidden, "intermediate_size": a.inter}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"{a.out}: {len(specs)} tensors, {offset / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
