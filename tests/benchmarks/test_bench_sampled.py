"""benchmarks/bench_sampled.py: the phases table with the ratios against the native baselines of the same run."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_sampled")


def _row(system, epoch_s, status="ok"):
    phases = dict(zip(("sample", "gather", "block_prepare", "forward", "backward", "optimizer"),
                      (0.1, 0.1, 0.2, 0.4, 0.15, 0.05)))
    return {"system": system, "model": "sage", "dataset": "rmat:like=reddit", "status": status,
            "error": None if status == "ok" else "boom",
            "hyperparameters": {"batching": "sampled", "fanouts": [25, 10], "batch_size": 1024},
            "epoch_time_median_s": epoch_s, "epoch_time_iqr_s": 0.01,
            **{f"{k}_median_s": v * epoch_s for k, v in phases.items()}, "kernel_median_s": 0.08 * epoch_s,
            "seeds_per_s": 1000 / epoch_s, "edges_per_s": 2e6 / epoch_s, "peak_memory_bytes": 300 * 2**20,
            "test_accuracy": 0.08, "dataset_nodes": 100, "dataset_edges": 1000,
            "extra": {"block_prepare_share": 0.2, "sampled_edges_per_epoch": 2_000_000}}


def test_render_sets_each_system_against_both_natives_of_the_run(bench):
    rows = [_row("isplib", 1.0), _row("pyg-native", 4.0), _row("dgl-native", 2.0), _row("mkl", 1.0, "oom")]
    meta = {"campaign": "sampled_small", "epochs": 5, "warmup": 2, "rounds": 1, "threads": 2, "cpu": "test cpu",
            "load_average_start": 3.0, "load_average_end": 4.0, "measured_at": ["abc1234"]}
    text = bench.render(rows, meta, "figures/sampled_phases.svg")
    isplib = next(line for line in text.splitlines() if line.startswith("| isplib"))
    assert [c.strip() for c in isplib.strip("|").split("|")] == [
        "isplib", "1.00 (0.01)", "0.10", "0.10", "0.20", "0.40", "0.15", "0.05", "0.080", "20.0%", "1000", "2.000",
        "300", "4.00x", "2.00x", "0.080"]
    assert "| mkl " in text and "oom: boom" in text
    assert "![phases of a sampled epoch](figures/sampled_phases.svg)" in text
    assert "2,000,000 sampled edges an epoch" in text and "isplib's per-block warm-up" in text


def test_sampled_and_full_graph_epochs_and_peaks_sit_side_by_side(bench):
    full = {**_row("isplib", 3.0), "hyperparameters": {}, "peak_memory_bytes": 900 * 2**20}
    lines = "\n".join(bench.beside_full([_row("isplib", 1.0), full, _row("mkl", 1.0)])).splitlines()  # mkl: one way
    assert lines[0] == "## sage sampled beside full-graph on `rmat:like=reddit`"
    assert [line for line in lines if line.startswith("| isplib")] == [
        "| isplib   |              1.00 |                 3.00 |                300 |                   900 |"]
    assert not any(line.startswith("| mkl") for line in lines) and bench.beside_full([_row("mkl", 1.0)]) == []


def test_the_kernels_share_bounds_what_isplibs_kernels_can_win(bench):
    (line, blank) = bench.kernel_bounds([_row("isplib", 1.0), _row("mkl", 1.0)])
    assert line.startswith("Where the epoch goes (sage, fanouts 25,10, batch 1024, `rmat:like=reddit`): isplib's own "
                           "kernels take 80 ms of its 1000 ms epoch (8%)") and "at most 1.09x, were they free" in line
    assert blank == "" and bench.kernel_bounds([_row("isplib", 1.0, "oom")]) == []


def test_every_system_is_set_against_isplib_over_processes(bench, tmp_path):
    """Issue 43: isplib ahead of every other system with an interval over processes (compare's bootstrap)."""
    import importlib.util
    import sys
    from pathlib import Path

    from gnnbench.results.store import ResultsStore

    path = Path(__file__).resolve().parents[1] / "fixtures" / "results_fixture.py"
    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", path)
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    rows = []
    for system, median in (("isplib", 0.010), ("mkl", 0.012), ("dgl-native", 0.020)):
        for k in range(5):
            row = fixture._run(len(rows), system, "cora", fixture._samples(median * (1 + 0.005 * (k - 2)), 0.02),
                               memory_mib=100, accuracy=0.8)
            row["hyperparameters"] = {**row["hyperparameters"], "batching": "sampled", "fanouts": [25, 10],
                                      "batch_size": 1024}
            rows.append(row)
    with ResultsStore(tmp_path / "sampled.sqlite") as db:
        db.insert_many(rows)
    common = sys.modules["_common"]
    text = bench.against(tmp_path / "sampled.sqlite", common.stored_rows(tmp_path / "sampled.sqlite"))
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[2:] if line.startswith("|")]
    assert [(c[0], c[4], c[7], c[8], c[9]) for c in cells] == [
        ("", "isplib", "5", "baseline", ""), ("+", "dgl-native", "5", "0.50x", "[0.49, 0.51]"),
        ("+", "mkl", "5", "0.83x", "[0.82, 0.85]")]
