#!/usr/bin/env python3
"""Side-by-side table of `mxq_bench --json` files: one row per case, one column per file.

usage: python3 scripts/bench_compare.py LABEL=bench.json [LABEL=bench.json ...]
Each cell is the ratio to the same-run copy and the median µs. scripts/bench_ab.sh writes the
files of an interleaved A/B run (base1, new1, base2, new2, ...) and prints this table.
"""
import json
import sys


def case_key(r):
    shape = r["shape"][1:] if r["shape"][0] == 1 else r["shape"]
    direction = r.get("direction", "-")  # pad, unpad and amax rows have no format or direction
    kind = "fused" if r["pad_rowwise"] and direction == "rowwise" else direction
    detail = r["detail"] + ("" if r.get("layout", "-") in ("blocked", "-") else " " + r["layout"])
    return ("x".join(str(x) for x in shape), r["op"], r.get("format", r["dtype"]), kind, r["groups"], detail)


def main(args):
    if not args or any("=" not in a for a in args):
        sys.exit(__doc__)
    labels, cells = [], {}
    for arg in args:
        label, path = arg.split("=", 1)
        labels.append(label)
        with open(path) as f:
            for r in json.load(f)["results"]:
                if r["status"] == "ok":
                    cells.setdefault(case_key(r), {})[label] = f"{r['ratio']:.3f} {r['median_us']:8.1f}us"
    print(f"{'shape':14} {'op':10} {'format':10} {'kind':8} {'G':>3} {'detail':26} " +
          " ".join(f"{label:>16}" for label in labels))
    for key in sorted(cells):
        shape, op, fmt, kind, groups, detail = key
        print(f"{shape:14} {op:10} {fmt:10} {kind:8} {groups:3d} {detail[:26]:26} " +
              " ".join(f"{cells[key].get(label, '-'):>16}" for label in labels))


if __name__ == "__main__":
    main(sys.argv[1:])
