#!/usr/bin/env python3
"""Markdown tables for docs/performance.md from an `mxq_bench --json` file: MXFP8 quantize, token
groups, FP4 quantize, nvfp4 with the amax output and with the amax from pad / unpad, dequantize,
SwiGLU + quantize (one table per GPU).

usage: python3 scripts/perf_tables.py bench.json
Ratios are op GB/s over the same-run copy GB/s; "met" compares them with the targets listed in
docs/performance.md ("Targets and where they stand").
"""
import json
import sys
from collections import defaultdict


def shape_name(s):
    return " × ".join(str(x) for x in (s if s[0] != 1 else s[1:]))


def big(s):
    return s[0] * s[1] * s[2] >= 64 * 1024 * 1024


def verdict(ratio, target):
    if target is None:
        return ""
    return "met" if ratio >= target else f"missed by {target - ratio:.3f}"


def mxfp8_quantize(rows):
    targets = {"rowwise": 0.92, "colwise": 0.90, "both": 0.88}
    print("| shape | dir | µs (rceil) | ratio rceil | ratio floor | target | |")
    print("|---|---|---|---|---|---|---|")
    by = defaultdict(dict)
    for r in rows:
        if (r["op"] == "quantize" and r["format"] == "mxfp8" and r["groups"] == 0 and r["layout"] == "blocked"
                and not r["graph"] and r["status"] == "ok"):
            by[(tuple(r["shape"]), r["direction"])][r["rule"]] = r
    for (shape, d), rules in by.items():
        rc, fl = rules.get("rceil"), rules.get("floor")
        if rc is None:
            continue
        target = 0.90 if shape[0] > 1 else targets[d]
        if not big(shape):
            target = 0.80 if shape == (1, 8192, 2048) else None
        worst = min(x["ratio"] for x in rules.values())
        floor = f"{fl['ratio']:.3f}" if fl else "—"
        print(f"| {shape_name(shape)} | {d} | {rc['median_us']:.1f} | {rc['ratio']:.3f} | {floor} | "
              f"{target if target else '—'} | {verdict(worst, target)} |")


def token_groups(rows):
    print("| tokens × dim | G | pad | unpad | rowwise | fused pad + rowwise (µs × plain) | colwise K-groups | both |")
    print("|---|---|---|---|---|---|---|---|")
    plain = {}
    cells = defaultdict(dict)
    for r in rows:
        if r["graph"] or r["status"] != "ok":
            continue
        shape = tuple(r["shape"])
        if r["op"] == "quantize" and r["format"] == "mxfp8" and r["groups"] == 0 and r["direction"] == "rowwise" \
                and r["rule"] == "rceil" and r["layout"] == "blocked":
            plain[shape] = r
        if r["groups"] == 0 or r.get("amax_out"):
            continue
        key = (shape, r["groups"])
        if r["op"] in ("pad", "unpad"):
            cells[key][r["op"]] = r
        elif r["op"] == "quantize" and r["format"] == "mxfp8":
            name = {"rowwise": "fused" if r["pad_rowwise"] else "rowwise", "colwise": "colwise", "both": "both"}
            cells[key][name[r["direction"]]] = r
    for (shape, g), c in sorted(cells.items()):
        if "rowwise" not in c:  # pad / unpad rows of the FP4 cases' shapes (the amax table below)
            continue

        def ratio(k):
            return f"{c[k]['ratio']:.3f}" if k in c else "—"
        fused = "—"
        if "fused" in c and shape in plain:
            fused = f"{c['fused']['ratio']:.3f} ({c['fused']['median_us'] / plain[shape]['median_us']:.2f} ×)"
        print(f"| {shape_name(shape)} | {g} | {ratio('pad')} | {ratio('unpad')} | {ratio('rowwise')} | {fused} | "
              f"{ratio('colwise')} | {ratio('both')} |")


def fp4_quantize(rows):
    print("| shape | format | amax | G | rowwise | colwise | both |")
    print("|---|---|---|---|---|---|---|")
    cells = defaultdict(dict)
    for r in rows:
        if r["op"] != "quantize" or r["format"] not in ("mxfp4", "nvfp4") or r["graph"] or r["status"] != "ok":
            continue
        if (r["format"] == "mxfp4" and r["rule"] != "rceil") or r.get("amax_out"):
            continue  # the amax output's rows (delayed scaling) are delayed_amax's
        amax = "—" if r["format"] == "mxfp4" else "given" if r["amax_given"] else "computed"
        cells[(tuple(r["shape"]), r["format"], amax, r["groups"])][r["direction"]] = r["ratio"]
    for (shape, f, amax, g), c in cells.items():
        vals = [f"{c[d]:.3f}" if d in c else "—" for d in ("rowwise", "colwise", "both")]
        print(f"| {shape_name(shape)} | {f} | {amax} | {g} | " + " | ".join(vals) + " |")


def delayed_amax(rows):
    """nvfp4 with the amax given and the input's amax reported (QuantizeOutputs::amax) against the
    amax given alone: the ratio of each and the time the output adds."""
    print("| shape | dir | given | given + amax out | extra time |")
    print("|---|---|---|---|---|")
    cells = defaultdict(dict)
    for r in rows:
        if (r["op"] == "quantize" and r["format"] == "nvfp4" and r.get("amax_given") and r["groups"] == 0
                and not r["graph"] and r["status"] == "ok"):
            cells[(tuple(r["shape"]), r["direction"])][bool(r.get("amax_out"))] = r
    for (shape, d), c in cells.items():
        if False not in c or True not in c:
            continue
        extra = c[True]["median_us"] / c[False]["median_us"] - 1
        print(f"| {shape_name(shape)} | {d} | {c[False]['ratio']:.3f} | {c[True]['ratio']:.3f} | {extra:+.1%} |")


def amax_from_pad(rows):
    """nvfp4 with the amax found by pad / unpad as they copy: the copy's extra time, and the nvfp4
    ratio with that time charged to it (the given-amax time plus pad's extra, same-run copy)."""
    print("| shape | op | µs | µs with amax | extra | nvfp4 dir | given | computed | given + extra |")
    print("|---|---|---|---|---|---|---|---|---|")
    copies, nv = defaultdict(dict), defaultdict(dict)
    for r in rows:
        if r["graph"] or r["status"] != "ok":
            continue
        shape = tuple(r["shape"])
        if r["op"] in ("pad", "unpad") and "amax_out" in r and r["groups"] == 8:
            copies[(shape, r["op"])][r["amax_out"]] = r
        elif r["op"] == "quantize" and r["format"] == "nvfp4" and r["groups"] == 0 and not r.get("amax_out"):
            nv[shape][(r["direction"], r["amax_given"])] = r
    for (shape, op), c in sorted(copies.items()):
        if False not in c or True not in c:
            continue
        extra = c[True]["median_us"] - c[False]["median_us"]
        for d in ("rowwise", "colwise", "both"):
            given, computed = nv[shape].get((d, True)), nv[shape].get((d, False))
            if not given:
                continue
            charged = given["ratio"] * given["median_us"] / (given["median_us"] + max(extra, 0.0))
            print(f"| {shape_name(shape)} | {op} | {c[False]['median_us']:.1f} | {c[True]['median_us']:.1f} | "
                  f"{extra:+.1f} µs | {d} | {given['ratio']:.3f} | "
                  f"{computed['ratio'] if computed else float('nan'):.3f} | {charged:.3f} |")


def dequant(rows):
    print("| shape | format | dir | out | G | µs | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if r["op"] == "dequantize" and not r["graph"] and r["status"] == "ok":
            pad = r["pad_colwise"] if r["direction"] == "colwise" else r["pad_rowwise"]
            multiple = r.get("group_multiple", 1)
            groups = (f"{r['groups']}" + (f", A = {pad}" if pad else "") +
                      (f", sizes × {multiple}" if multiple > 1 else "")) if r["groups"] else "—"
            print(f"| {shape_name(r['shape'])} | {r['format']} | {r['direction']} | {r['dtype']} | {groups} | "
                  f"{r['median_us']:.1f} | {r['ratio']:.3f} |")


# The fused SwiGLU's targets, by (op, format, direction).
SWIGLU_TARGETS = {("swiglu", "mxfp8", "rowwise"): 0.90, ("swiglu", "mxfp8", "both"): 0.85,
                  ("swiglu", "nvfp4", "rowwise"): 0.85, ("swiglu_backward", "mxfp8", "both"): 0.85}


def swiglu(rows):
    print("| M × 2·F | G | case | µs | ratio | target | |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if r["op"] not in ("swiglu", "swiglu_backward") or r["graph"] or r["status"] != "ok":
            continue
        _, m, f = r["shape"]
        name = ("fwd" if r["op"] == "swiglu" else "bwd") + f" {r['format']} {r['direction']}"
        target = SWIGLU_TARGETS.get((r["op"], r["format"], r["direction"]))
        print(f"| {m} × 2·{f} | {r['groups']} | {name} | {r['median_us']:.1f} | {r['ratio']:.3f} | "
              f"{target if target else '—'} | {verdict(r['ratio'], target)} |")


def header(data):
    """The run's device and settings; a run with forced kernels says so (its cells are not the tuning's)."""
    line = f"Device: {data['device']}; runs {data['runs']}; mxq {data['mxq_version']}"
    if "forced_kernels" in data:
        line += f"\n\n**Forced kernels, not the tuning's choice: {data['forced_kernels']}**"
    return line


def main():
    data = json.load(open(sys.argv[1]))
    rows = data["results"]
    print(header(data) + "\n")
    for title, fn in (("MXFP8 quantize", mxfp8_quantize), ("Token groups", token_groups), ("FP4 quantize", fp4_quantize),
                      ("nvfp4 with the amax output", delayed_amax),
                      ("nvfp4 with the amax from pad / unpad", amax_from_pad), ("Dequantize", dequant),
                      ("SwiGLU + quantize", swiglu)):
        print(f"#### {title}\n")
        fn(rows)
        print()


if __name__ == "__main__":
    main()
