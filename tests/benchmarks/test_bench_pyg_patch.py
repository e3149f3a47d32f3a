"""benchmarks/bench_pyg_patch.py: the campaign's three modes are pyg-native's options; the table compares them."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_pyg_patch")


def _row(model, options, epoch):
    return {"model": model, "status": "ok", "epoch_times": [epoch] * 4, "epoch_time_median_s": epoch,
            "hyperparameters": {"system_options": options}}


def test_campaign_runs_each_mode_as_pyg_native_options(load_benchmark):
    common = load_benchmark("_common")
    campaign = common.campaign("bench_pyg_patch", datasets=["karate"], epochs=3)
    assert [dict(m.configs[0].system_options) for m in campaign.matrices] == list(
        load_benchmark("bench_pyg_patch").MODES.values())
    assert {c.system for m in campaign.matrices for c in m.configs} == {"pyg-native"}


def test_mode_of_reads_the_recorded_options(bench):
    assert bench.mode_of(_row("gcn", {}, 1.0)) == "edge_index"  # pyg-native's defaults
    assert bench.mode_of(_row("gcn", {"adjacency": "sparse", "patch": "none"}, 1.0)) == "sparse"
    assert bench.mode_of(_row("gcn", {"adjacency": "sparse", "patch": "isplib"}, 1.0)) == "sparse + patch_pyg"


def test_render_compares_the_patch_with_both_other_modes(bench):
    rows = [_row("gcn", {"adjacency": "edge_index"}, 0.9), _row("gcn", {"adjacency": "sparse"}, 0.6),
            _row("gcn", {"adjacency": "sparse", "patch": "isplib"}, 0.3),
            {"model": "gin", "status": "timeout", "error": "ran past 1800 s",
             "hyperparameters": {"system_options": {"adjacency": "sparse"}}}]
    meta = {"dataset": "karate", "epochs": 3, "warmup": 1, "threads": 2, "allocators": ["tcmalloc"],
            "load_average_start": 2.0, "load_average_end": 3.5}
    text = bench.render(rows, meta)
    gcn = next(line for line in text.splitlines() if line.startswith("| gcn"))
    assert [c.strip() for c in gcn.strip("|").split("|")] == ["gcn", "900", "600", "300", "2.00x", "3.00x"]
    assert "measured under load" in text and "- gin sparse: timeout: ran past 1800 s" in text
