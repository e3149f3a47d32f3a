"""benchmarks/bench_aa.py and benchmarks/aa_systems: glue up to date, the campaign's systems, false positives and
power counted from fixed processes, exact table."""
from __future__ import annotations

from pathlib import Path

import pytest

AA_SYSTEMS = Path(__file__).resolve().parents[2] / "benchmarks" / "aa_systems"


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_aa")


def test_aa_systems_glue_is_up_to_date():
    from gnnbench.dsl.gen import regenerate, spec_paths

    writer = regenerate(spec_paths(AA_SYSTEMS), check=True)
    assert not writer.drift, "".join(writer.drift) + "\nrun `gnnbench gen benchmarks/aa_systems/NAME/NAME.gnn`"


def test_campaign_runs_the_three_systems_in_ten_processes(load_benchmark):
    campaign = load_benchmark("_common").campaign("aa")
    configs = [c for m in campaign.matrices for c in m.configs]
    assert {c.system for c in configs} == {"aa_one", "aa_two", "aa_slow"}
    assert sorted({c.seed for c in configs}) == list(range(10))


def _process(system: str, seed: int, median: float) -> dict:
    times = [median * (1 + 0.01 * ((k * 7) % 11 - 5) / 5) for k in range(20)]
    return {"system": system, "seed": seed, "status": "ok", "model": "gcn", "dataset": "sbm", "framework": "torch",
            "system_hash": f"h-{system}", "timestamp": f"2026-01-01T00:{seed:02d}:00+00:00", "epoch_times": times,
            "epochs": 25, "warmup": 5, "threads": 1}


def test_identical_twins_are_never_marked_and_the_slow_one_always(bench):
    rows = [_process(s, k, m * (1 + 0.002 * k)) for k in range(6)
            for s, m in (("aa_one", 0.050), ("aa_two", 0.050), ("aa_slow", 0.056))]
    result = bench.evaluate(rows, draws=4)
    assert {k: result[k] for k in ("old_pairs", "draws", "false_positives", "aa_unclaimed", "power")} == {
        "old_pairs": 36, "draws": 4, "false_positives": 0, "aa_unclaimed": 0, "power": 4}
    text = bench.render(result, {"epochs": 25, "warmup": 5, "threads": 1, "load": (1.0, 2.0), "commits": ["abc1234"]})
    assert "aa_slow does extra gathers inside its kernel, measured +12.0% per epoch" in text
    assert ("| aa_slow vs aa_one, 5 processes each | pooled processes, two-level bootstrap                |        4 "
            "|               - |            0 of 4 (0%) |      4 of 4 (100%) |") in text
