"""benchmarks/studies/probe_noise.py: alternating samples, a table of their spread, one line for bad flags."""
from __future__ import annotations

import itertools
import json

import pytest


@pytest.fixture(scope="module")
def probe(load_benchmark):
    return load_benchmark("probe_noise")


def test_samples_alternate_all_threads_and_one(probe):
    ticks = itertools.count()
    samples = probe.sample(3, rows=64, gathers=640, width=4, clock=lambda: 0.0, wall=lambda: next(ticks))
    assert list(samples) == [f"{probe.numba.get_num_threads()} threads", "1 thread"]
    assert [len(v) for v in samples.values()] == [2, 2]


def test_the_table_states_the_spread_of_identical_work(probe):
    text = probe.render({"2 threads": [0.080, 0.100, 0.150], "1 thread": [0.180, 0.180, 0.190]},
                        {"seconds": 60, "rows": 200_000, "gathers": 4_000_000, "width": 64}, (0.1, 0.2))
    assert "| 2 threads | 3       | 80       | 100         | 150      | 1.88x" in text
    assert "load average 0.1 at start and 0.2 at end" in text


def test_writes_samples_with_provenance(probe, tmp_path, capsys):
    assert probe.main(["--seconds", "0.01", "--rows", "64", "--gathers", "640", "--width", "4",
                       "--out", str(tmp_path / "noise")]) == 0
    payload = json.loads((tmp_path / "noise.json").read_text())
    assert payload["git_commit"] and set(payload["samples_s"]) >= {"1 thread"}
    assert (tmp_path / "noise.md").read_text().startswith("# Machine noise")


def test_a_bad_flag_is_one_line_and_exit_status_2(probe, capsys):
    assert probe.main(["--width", "0"]) == 2
    assert capsys.readouterr().err == "probe_noise: --width must be > 0 (got 0)\n"
