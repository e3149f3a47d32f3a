"""benchmarks/studies/bench_process_start.py: each way's overhead and spreads from fixed rows, and its table."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_process_start")


def _row(way, centre, wall, parent_share, parent=None, one_start=None, rng=None, status="ok"):
    epochs = list(centre * (1 + 0.01 * rng.standard_normal(20)))
    extra = {"bench": {"way": way, "round": 0, "wall_s": wall, "parent_share_s": parent_share,
                       "one_parent_start_s": one_start}}
    if parent:
        extra["warm_parent"] = parent
    return {"system": "aa_one", "status": status, "epoch_times": epochs, "extra": extra}


def _rows():
    rng = np.random.default_rng(0)
    rows = []
    for i in range(4):
        rows.append(_row("fresh", 0.012 * (1 + 0.1 * (i % 2)), 5.5, 0.0, rng=rng))
        rows.append(_row("fork, one parent", 0.012, 0.5, None, parent="p", one_start=2.0, rng=rng))
        rows.append(_row("fork, parent per round", 0.012 * (1 + 0.1 * (i // 2)), 0.5, 1.0, parent=f"r{i // 2}",
                         rng=rng))
    return rows + [_row("fresh", 0.5, 9.0, 0.0, rng=rng, status="failed")]  # a failed run is left out


def test_each_way_is_summarised_with_its_overhead_and_parents(bench):
    fresh, one, per_round, spare = bench.summarise(_rows())
    assert [s["way"] for s in (fresh, one, per_round, spare)] == list(bench.WAYS)
    assert spare == {"way": "fork, spare parent per round", "processes": 0}  # not in these rows
    assert fresh["processes"] == one["processes"] == per_round["processes"] == 4
    assert (fresh["parents"], one["parents"], per_round["parents"]) == (4, 1, 2)
    timed = fresh["timed_s"]
    assert fresh["overhead_s"] == pytest.approx(5.5 - timed, rel=0.02)
    assert one["overhead_s"] == pytest.approx(0.5 - timed + 2.0 / 4, rel=0.02)  # the one start over its processes
    assert per_round["overhead_s"] == pytest.approx(0.5 - timed + 1.0, rel=0.02)
    assert one["between_spread"] < 0.02 < per_round["between_spread"]


def test_the_table_names_each_way_and_a_way_not_measured_shows_as_such(bench):
    rows = [r for r in _rows() if r["extra"]["bench"]["way"] != "fork, one parent"]
    meta = {"rounds": 2, "condition": "quiet", "dataset": "rmat:x", "epochs": 22, "warmup": 2, "threads": 1,
            "cpus": "1", "measured": "quiet: measured."}
    text = bench.render(bench.summarise(rows), meta)
    assert "`python benchmarks/studies/bench_process_start.py --rounds 2 --condition quiet`: GCN on `rmat:x`" in text
    lines = [line for line in text.splitlines() if line.startswith("| fork, one parent")]
    assert lines and lines[0].split("|")[2].strip() == "0" and "-" in lines[0].split("|")[3]


def test_a_conditions_table_goes_to_the_studies_and_its_rows_stay_in_their_store(bench):
    from types import SimpleNamespace

    quiet, toy = SimpleNamespace(condition="quiet", toy=False), SimpleNamespace(condition="quiet", toy=True)
    assert bench.default_out(quiet) == str(bench.ROOT / "results" / "studies" / "process_start_quiet")
    assert bench.store_of(quiet) == bench.ROOT / "results" / "process_start_quiet.sqlite"
    assert bench.default_out(toy) == str(bench.ROOT / "results" / "tmp" / "process_start_toy")  # beside its store
