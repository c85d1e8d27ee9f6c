"""scripts/perf_tables.py: each cell of docs/performance.md's tables comes from its own bench row
(the nvfp4 rows with the amax output must not stand in for the plain ones)."""
import importlib.util
import os

from mxq_testing import REPO


def load_perf_tables():
    spec = importlib.util.spec_from_file_location("perf_tables", os.path.join(REPO, "scripts", "perf_tables.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quantize_row(direction, amax_given, amax_out, ratio, us):
    detail = ("amax=given" if amax_given else "amax=computed") + (" amax=out" if amax_out else "")
    return {"op": "quantize", "shape": [1, 32768, 7168], "format": "nvfp4", "direction": direction,
            "layout": "blocked", "rule": "rceil", "amax_given": amax_given, "amax_out": amax_out, "groups": 0,
            "pad_rowwise": 0, "pad_colwise": 0, "graph": False, "status": "ok", "detail": detail,
            "ratio": ratio, "median_us": us}


def pad_row(op, amax_out, us):
    return {"op": op, "shape": [1, 32768, 7168], "groups": 8, "amax_out": amax_out, "graph": False,
            "status": "ok", "median_us": us, "ratio": 0.9}


# The bench's order: computed, given, then given with the amax output (which a table keyed on the
# amax alone would keep).
ROWS = [quantize_row("rowwise", False, False, 0.55, 380.0), quantize_row("rowwise", True, False, 0.97, 210.0),
        quantize_row("rowwise", True, True, 0.95, 214.0), pad_row("pad", False, 300.0), pad_row("pad", True, 301.0)]


def table_lines(fn, capsys):
    fn(ROWS)
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 32768")]


def test_fp4_table_given_cell_is_the_plain_row(capsys):
    lines = table_lines(load_perf_tables().fp4_quantize, capsys)
    assert lines == ["| 32768 × 7168 | nvfp4 | computed | 0 | 0.550 | — | — |",
                     "| 32768 × 7168 | nvfp4 | given | 0 | 0.970 | — | — |"]


def test_delayed_amax_table_pairs_the_rows(capsys):
    lines = table_lines(load_perf_tables().delayed_amax, capsys)
    assert lines == ["| 32768 × 7168 | rowwise | 0.970 | 0.950 | +1.9% |"]


def test_amax_from_pad_charges_the_plain_given_row(capsys):
    lines = table_lines(load_perf_tables().amax_from_pad, capsys)
    # 0.97 × 210 / (210 + 1): the pad's extra microsecond charged to the plain given-amax time.
    assert lines == ["| 32768 × 7168 | pad | 300.0 | 301.0 | +1.0 µs | rowwise | 0.970 | 0.550 | 0.965 |"]


def test_swiglu_table_names_each_case_and_its_target(capsys):
    def row(op, fmt, direction, ratio):
        return {"op": op, "shape": [1, 16384, 1536], "format": fmt, "direction": direction, "groups": 8,
                "graph": False, "status": "ok", "median_us": 100.0, "ratio": ratio}
    load_perf_tables().swiglu([row("swiglu", "mxfp8", "rowwise", 0.91), row("swiglu_backward", "mxfp8", "both", 0.8),
                               pad_row("pad", False, 300.0)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 16384")]
    assert lines == ["| 16384 × 2·1536 | 8 | fwd mxfp8 rowwise | 100.0 | 0.910 | 0.9 | met |",
                     "| 16384 × 2·1536 | 8 | bwd mxfp8 both | 100.0 | 0.800 | 0.85 | missed by 0.050 |"]


def test_header_names_forced_kernels():
    data = {"device": "GPU", "runs": 50, "mxq_version": "0.1.0"}
    header = load_perf_tables().header
    assert header(data) == "Device: GPU; runs 50; mxq 0.1.0"
    data["forced_kernels"] = "grouped rowwise tiles"
    assert "Forced kernels, not the tuning's choice: grouped rowwise tiles" in header(data)
