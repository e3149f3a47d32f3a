"""Tests of gnnbench.run.bounds: SpMM figures against machine bounds, measured once per machine."""
from __future__ import annotations

import pytest

from gnnbench.run.bounds import Bounds, machine_bounds, machine_key, measure_bounds, spmm_bytes, spmm_figures

FAKE = Bounds(triad_GBps=20.0, gather256_GBps=10.0, threads=2, triad_elements=1, gather_rows=1,
              measured_at="2026-01-01T00:00:00+00:00")


def test_spmm_figures_follow_the_formula():
    # E = 4M edges, N = 131072 nodes, F = 32, 4-byte indices and values, 10 ms
    moved = 4 * (4_000_000 + 131_072 + 1) + 4 * 32 * (4_000_000 + 131_072)
    assert spmm_bytes(4_000_000, 131_072, 32) == moved
    got = spmm_figures(4_000_000, 131_072, 32, 0.010, FAKE)
    assert got["GFLOPs"] == pytest.approx(4_000_000 * 32 / 0.010 / 1e9)  # 12.8, E*F/t as DGL reports
    assert got["GBps"] == pytest.approx(moved / 0.010 / 1e9)
    assert got["of_stream"] == pytest.approx(got["GBps"] / 20.0) and got["of_gather"] == pytest.approx(got["GBps"] / 10.0)
    assert spmm_figures(10, 5, 2, 1.0)["of_gather"] is None


def test_bounds_are_cached_per_machine_and_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path))
    calls = []

    def fake(threads=None):
        calls.append(threads)
        return FAKE

    assert machine_bounds(2, measure=fake) == FAKE
    assert machine_bounds(2, measure=fake) == FAKE and calls == [2]  # the second came from the cache
    assert (tmp_path / "bounds" / f"{machine_key(2)}.json").is_file()
    machine_bounds(1, measure=fake)
    assert calls == [2, 1] and machine_key(1) != machine_key(2)
    machine_bounds(2, measure=fake, refresh=True)
    assert calls == [2, 1, 2]
    (tmp_path / "bounds" / f"{machine_key(2)}.json").write_text("{broken")
    machine_bounds(2, measure=fake)
    assert calls == [2, 1, 2, 2]


def test_measured_bounds_are_positive():
    b = measure_bounds(triad_elements=200_000, gather_rows=1 << 14, threads=1, repeats=2)
    assert b.triad_GBps > 0 and b.gather256_GBps > 0 and b.threads == 1


def test_cli_shows_the_cached_bounds(tmp_path, monkeypatch, capsys):
    import json

    from gnnbench.cli import main as cli

    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path))
    path = tmp_path / "bounds" / f"{machine_key(2)}.json"
    path.parent.mkdir()
    path.write_text(json.dumps(FAKE.__dict__))
    assert cli(["bounds", "--threads", "2"]) == 0
    assert capsys.readouterr().out == ("STREAM triad 20.0 GB/s, random 256-byte gather 10.0 GB/s on 2 threads "
                                       "(measured 2026-01-01T00:00:00+00:00; Note [spmm figures] in "
                                       "gnnbench/run/bounds.py)\n")
    assert cli(["bounds", "--threads", "0"]) == 2
