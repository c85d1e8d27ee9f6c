#!/usr/bin/env python3
"""Executed instructions per element of one kernel, from ncu's SASS source counters: in total, in
each called (non-inlined) function and by opcode outside and inside those functions.

usage: python3 scripts/ncu_instructions.py SOURCE.csv[.xz] ELEMENTS [--top N] [--kernel TEXT]
SOURCE.csv: `ncu -i REPORT --page source --csv --print-source sass > SOURCE.csv` (profile with
--set full, or at least the SourceCounters section), of which the first kernel is read, or with
--kernel the first whose name contains TEXT.
ELEMENTS: what one element is, counted over the whole grid (e.g. M * F for a SwiGLU forward).
Counts are per thread (warp instructions * 32 / ELEMENTS); predicated-off instructions count, as
they take issue slots.
"""
import collections
import csv
import lzma
import re
import signal
import sys


def read_instructions(path, pick=""):
    """The name of the first kernel whose name contains pick, and its (address, sass text, warp
    instructions executed) in address order (a report of several kernels lists them one after the
    other)."""
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    names = [i for i, r in enumerate(rows) if len(r) > 1 and r[0] == "Kernel Name"]
    start = next((i for i in names if pick in rows[i][1]), None) if names or pick else 0
    if start is None:
        sys.exit(f"ncu_instructions.py: no kernel in {path} has '{pick}' in its name")
    kernel = rows[start][1] if names else "?"
    header = next(i for i in range(start, len(rows)) if "Address" in rows[i] and "Instructions Executed" in rows[i])
    cols = rows[header]
    address, source, executed = (cols.index(c) for c in ("Address", "Source", "Instructions Executed"))
    out = []
    for r in rows[header + 1:]:
        if r and r[0] == "Kernel Name":
            break
        if len(r) > executed and r[address].startswith("0x"):
            out.append((int(r[address], 16), r[source].strip(), int(r[executed] or 0)))
    return kernel, sorted(out)


def opcode(sass):
    """The opcode without modifiers or predicate: '@!P3 FMUL.FTZ R1, ...' -> 'FMUL'."""
    words = sass.split()
    word = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return word.split(".")[0]


def callee_ranges(instructions):
    """Index ranges [first, last] of each CALL target up to its first RET."""
    index = {a: i for i, (a, _, _) in enumerate(instructions)}
    ranges = {}
    for _, sass, _ in instructions:
        m = re.search(r"\bCALL\S*\s+(0x[0-9a-fA-F]+)", sass)
        if not m or int(m.group(1), 16) not in index:
            continue
        first = index[int(m.group(1), 16)]
        last = first
        while last + 1 < len(instructions) and opcode(instructions[last][1]) != "RET":
            last += 1
        ranges[instructions[first][0]] = (first, last)
    return ranges


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 15
    pick = argv[argv.index("--kernel") + 1] if "--kernel" in argv else ""
    kernel, instructions = read_instructions(argv[0], pick)
    print(kernel)
    per_element = 32.0 / float(argv[1])
    ranges = callee_ranges(instructions)
    inside = {i for first, last in ranges.values() for i in range(first, last + 1)}
    total = sum(c for _, _, c in instructions)
    print(f"instructions per element: {total * per_element:.2f}")
    for address, (first, last) in sorted(ranges.items()):
        count = sum(c for _, _, c in instructions[first:last + 1])
        print(f"  called function at {address:#x} ({last - first + 1} instructions): {count * per_element:.2f}")
    for label, keep in (("outside called functions", lambda i: i not in inside),
                        ("inside called functions", lambda i: i in inside)):
        ops = collections.Counter()
        for i, (_, sass, count) in enumerate(instructions):
            if keep(i):
                ops[opcode(sass)] += count
        print(f"{label}: {sum(ops.values()) * per_element:.2f}")
        for op, count in ops.most_common(top):
            print(f"  {op:12s} {count * per_element:6.2f}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    main(sys.argv[1:])
