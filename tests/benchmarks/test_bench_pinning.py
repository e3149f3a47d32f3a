"""benchmarks/studies/bench_pinning.py: the arms, their spreads, the speedup and the rendered table."""
from __future__ import annotations

import os

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_pinning")


def _row(cpus, centre, spread, rng, status="ok"):
    epochs = centre * (1 + spread * rng.standard_normal(20))
    hyper = {"cpus": cpus} if cpus else {}
    return {"system": "aa_one", "status": status, "hyperparameters": hyper, "epoch_times": list(epochs)}


def _store(rounds=6, seed=0):
    """Unpinned processes at two levels 25 % apart and noisy within; pinned ones steady and faster."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(rounds):
        rows.append(_row(None, 0.0140 if r % 2 else 0.0175, 0.15, rng))
        rows.append(_row("1", 0.0107, 0.02, rng))
    return rows + [_row("1", 0.5, 0.0, rng, status="failed")]  # a failed run is left out


def test_each_arm_is_summarised_over_its_processes(bench):
    summary = bench.summarise("quiet", _store())
    unpinned, pinned = summary["arms"]["unpinned"], summary["arms"]["pinned to CPU 1"]
    assert list(summary["arms"]) == ["unpinned", "pinned to CPU 1"]
    assert unpinned["processes"] == pinned["processes"] == 6
    assert unpinned["between_spread"] > 0.1 > pinned["between_spread"]
    assert unpinned["noisy_processes"] == 6 and pinned["noisy_processes"] == 0
    sp = summary["speedup"]
    assert sp["pinned"] == "pinned to CPU 1" and sp["ratio"] == pytest.approx(1.48, rel=0.05)
    assert 1 < sp["low"] < sp["ratio"] < sp["high"]


def test_render_gives_a_line_per_arm_and_the_speedup(bench):
    summaries = [{**bench.summarise("quiet", _store()), "load": (0.1, 0.2)},
                 {**bench.summarise("loaded", []), "load": None}]
    meta = {"dataset": "rmat:nodes=8", "epochs": 22, "warmup": 2, "threads": 1, "measured_at": ["abc1234"]}
    text = bench.render(summaries, meta)
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]
    assert cells[1][:3] == ["quiet", "unpinned", "6"] and cells[1][6] == "6 of 6"
    assert cells[2][:3] == ["quiet", "pinned to CPU 1", "6"] and cells[2][6] == "0 of 6"
    assert cells[3][:2] == ["loaded", "not measured"]
    assert "quiet: pinned to CPU 1 is 1.4" in text and "x unpinned's speed (95% CI " in text
    assert "Measured at commit abc1234" in text


def test_the_campaign_interleaves_unpinned_and_pinned_runs(bench, capsys):
    assert bench.main(["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("bench_pinning: would run 20 of 20 runs")


def test_the_load_generator_stays_off_the_pinned_cpus(load_benchmark, monkeypatch):
    common = load_benchmark("_common")
    pinned = {}
    monkeypatch.setattr(common.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(common.os, "sched_setaffinity", lambda pid, cpus: pinned.setdefault(pid, set(cpus)))
    proc = common.load_generator(avoid="1-2")
    try:
        assert pinned[proc.pid] == {0}
    finally:
        proc.kill()
        proc.wait()
    assert os.sched_getaffinity(0)  # this process was left alone
