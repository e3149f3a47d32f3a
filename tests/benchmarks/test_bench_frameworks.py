"""benchmarks/bench_frameworks.py renders both frameworks side by side (no TensorFlow import, no runs)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_frameworks")


def _row(framework, ms, mib, status="ok", system="reference"):
    return {"status": status, "error": None if status == "ok" else "boom", "system": system, "model": "gcn",
            "dataset": "sbm", "framework": framework, "epoch_time_median_s": ms / 1e3,
            "epoch_time_iqr_s": ms / 1e3 * 0.2, "peak_memory_bytes": mib * 2**20, "test_accuracy": 0.8}


def test_render_puts_both_frameworks_on_one_line_with_the_ratio(bench):
    meta = {"versions": {"torch": "2.13", "tensorflow": "2.21"}, "epochs": 10, "warmup": 2, "threads": 1,
            "seed": 0, "cpu": "test cpu", "load_average_start": 1.5, "load_average_end": 2.5}
    rows = [_row("torch", 10.0, 20.0), _row("tensorflow", 15.0, 30.0),
            _row("torch", 5.0, 1.0, system="mkl"), _row("tensorflow", 0.0, 0.0, status="crashed", system="mkl")]
    text = bench.render(rows, meta)
    table = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| sbm")]
    assert table == [["sbm", "gcn", "reference", "10.0 (! 20%)", "15.0 (! 20%)", "1.50", "20.0", "30.0", "0.800",
                      "0.800"],
                     ["sbm", "gcn", "mkl", "5.0 (! 20%)", "crashed", "-", "1.0", "-", "0.800", "-"]]
    assert "- sbm gcn mkl tensorflow: crashed: boom" in text
    assert "Load average at start 1.5, at end 2.5" in text and "measured under load" in text


def test_models_run_only_on_systems_implementing_their_operators(bench):

    class Info:
        operators = ("gat_aggregate",)

    assert bench.runs_model(Info, "gat") and not bench.runs_model(Info, "gcn")
