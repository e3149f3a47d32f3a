"""benchmarks/bench_overhead.py: each library's kernel system against its native model, from stored rows."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_overhead")


def _row(system, model, epoch_s, mib, status="ok"):
    return {"system": system, "model": model, "status": status, "error": None if status == "ok" else "boom",
            "epoch_times": [epoch_s] * 3, "epoch_time_median_s": epoch_s, "forward_median_s": epoch_s / 2,
            "backward_median_s": epoch_s / 3, "optimizer_median_s": 0.001, "prepare_time_s": 0.1,
            "peak_memory_bytes": mib * 2**20, "test_accuracy": 0.5, "first_loss": 1.0, "dataset_nodes": 10,
            "dataset_edges": 40}


def test_render_puts_native_over_kernel_ratios_per_library(bench):
    rows = [_row("pyg", "gcn", 0.1, 10), _row("pyg-native", "gcn", 0.2, 30), _row("dgl", "gcn", 0.4, 40),
            _row("dgl-native", "gcn", 0.2, 20), _row("reference", "gcn", 0.3, 5), _row("mkl", "gcn", 0, 0, "oom")]
    meta = {"dataset": "karate", "versions": {"torch": "2", "torch_geometric": "2.8", "dgl": "2.1"}, "epochs": 4,
            "warmup": 1, "threads": 2, "seed": 0, "cpu": "test cpu", "load_average_start": 1.0,
            "load_average_end": 2.0}
    text = bench.render(rows, meta)
    gcn = next(line for line in text.splitlines() if line.startswith("| gcn"))
    cells = [c.strip() for c in gcn.strip("|").split("|")]
    assert cells == ["gcn", "100.0", "200.0", "2.00", "10.0", "30.0", "3.00", "400.0", "200.0", "0.50", "40.0",
                     "20.0", "0.50", "300.0", "oom"]
    assert "- gcn mkl: oom: boom" in text and "measured under load" in text
