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


def _cache(tmp_path, monkeypatch, threads=None):
    """FAKE as this machine's cached bounds on ``threads`` threads, in a fresh ``$GNNBENCH_CACHE``."""
    import json

    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path))
    path = tmp_path / "bounds" / f"{machine_key(threads)}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(FAKE.__dict__))


def test_a_run_reads_the_cached_bounds_and_never_measures_them(tmp_path, monkeypatch):
    from gnnbench.run.bounds import cached_bounds

    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path))
    assert cached_bounds(2) is None and not (tmp_path / "bounds").exists()  # Note [bounds in a run]
    _cache(tmp_path / "c", monkeypatch, threads=2)
    assert cached_bounds(2) == FAKE and cached_bounds(1) is None


def test_figures_of_fixed_work_under_a_fake_kernel_clock():
    """Three timed epochs of a fake kernel clock: each kernel's figures are its median epoch's work over its
    median seconds (Note [spmm figures])."""
    from gnnbench.run.bounds import run_figures
    from gnnbench.run.loop import Phases
    from gnnbench.runtime.kernel_clock import KernelClock, SpmmWork

    forward = SpmmWork.of_call(4_000_000, 131_072, 32)  # 545_301_508 bytes, 128M flops
    phases = Phases()
    for seconds in (0.012, 0.010, 0.011):
        clock = KernelClock()
        clock.add("spmm_sum", seconds, work=forward)
        clock.add("spmm_sum_backward", seconds / 2, work=SpmmWork.of_call(4_000_000, 131_072, 16, 8, 4))
        clock.add("spmm_sum_backward", seconds / 2, work=SpmmWork.of_call(4_000_000, 131_072, 16, 8, 4))
        clock.add("edge_softmax", 0.001)
        phases.add_kernels(clock)
    figures = run_figures(phases.spmm_work, phases.kernel_breakdown(), FAKE, threads=2)
    assert set(figures.kernels) == {"spmm_sum", "spmm_sum_backward"} and figures.note is None
    k = figures.kernels["spmm_sum"]
    assert (k.calls, k.edges, k.rows, k.flops, k.bytes) == (1, 4_000_000, 131_072, 128_000_000, 545_301_508)
    assert k.median_s == pytest.approx(0.011)
    assert k.GBps == pytest.approx(545_301_508 / 0.011 / 1e9) and k.GFLOPs == pytest.approx(128 / 11)
    assert k.of_stream == pytest.approx(k.GBps / 20.0) and k.of_gather == pytest.approx(k.GBps / 10.0)
    b = figures.kernels["spmm_sum_backward"]
    assert (b.calls, b.edges, b.flops) == (2, 8_000_000, 128_000_000) and b.median_s == pytest.approx(0.011)
    assert b.bytes == 2 * (8 * (4_000_000 + 131_072 + 1) + 4 * 16 * (4_000_000 + 131_072))
    assert figures.bounds == FAKE.__dict__
    assert figures.top()[0] == "spmm_sum_backward"  # as long as spmm_sum, and it moved more bytes
    bare = run_figures(phases.spmm_work, phases.kernel_breakdown(), None, threads=2)
    assert bare.kernels["spmm_sum"].GBps == k.GBps and bare.kernels["spmm_sum"].of_gather is None
    assert bare.bounds is None and bare.note.startswith("no bounds cached for this machine on 2 threads")
    assert run_figures([{}, {}], {}, FAKE) is None


def test_a_run_on_the_tiny_dataset_carries_its_spmm_figures(tmp_path, monkeypatch):
    from gnnbench.cli.run import summary
    from gnnbench.run.harness import RunConfig, train

    from .test_harness import TINY

    _cache(tmp_path, monkeypatch)
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=5, warmup=1))
    figures = row["extra"]["spmm_figures"]
    assert figures["bounds"] == FAKE.__dict__ and figures["note"] is None
    for name, k in figures["kernels"].items():
        assert k["median_s"] == row["extra"]["kernel_median_s_by_kernel"][name]
        assert k["GBps"] == pytest.approx(k["bytes"] / k["median_s"] / 1e9)
        assert k["GFLOPs"] == pytest.approx(k["flops"] / k["median_s"] / 1e9)
        assert k["of_gather"] == pytest.approx(k["GBps"] / 10.0) and k["of_stream"] == pytest.approx(k["GBps"] / 20.0)
    line = next(line for line in summary({**row, "verified": "passed"}).splitlines() if line.startswith("  spmm "))
    assert "GB/s (" in line and "% of gather bound), " in line and line.endswith(" GFLOP/s")


def test_the_summary_names_the_costliest_spmm_and_its_share_of_the_gather_bound():
    from gnnbench.cli.run import _spmm_lines
    from gnnbench.run.bounds import run_figures
    from gnnbench.runtime.kernel_clock import SpmmWork

    work = SpmmWork.of_call(4_000_000, 131_072, 32)
    seconds = {"spmm_sum": work.bytes / 14.1e9, "spmm_sum_backward": 0.0001}
    figures = run_figures([{"spmm_sum": work, "spmm_sum_backward": work}], seconds,
                          Bounds(40.0, 14.1 / 0.38, 2, 1, 1, "then"))
    from dataclasses import asdict

    assert _spmm_lines({"extra": {"spmm_figures": asdict(figures)}}) == [
        f"  spmm       spmm_sum {seconds['spmm_sum'] * 1e3:.2f} ms, 14.1 GB/s (38% of gather bound), 3.31 GFLOP/s"]
    bare = asdict(run_figures([{"spmm_sum": work}], seconds, None))
    assert _spmm_lines({"extra": {"spmm_figures": bare}})[0].endswith(
        "14.1 GB/s, 3.31 GFLOP/s (no bounds cached on this machine: `gnnbench bounds` measures them)")
    assert _spmm_lines({"extra": {}}) == [] and _spmm_lines({"extra": None}) == []


def test_an_unwritable_cache_is_one_line_before_measuring(tmp_path, monkeypatch):
    from gnnbench.errors import UserError

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GNNBENCH_CACHE", str(blocker))

    def never(threads=None):
        raise AssertionError("measured although the result could not be cached")

    with pytest.raises(UserError) as err:
        machine_bounds(2, measure=never)
    assert str(err.value).startswith(f"cannot write the bounds cache {blocker / 'bounds'}: ")
    assert str(err.value).endswith("; set GNNBENCH_CACHE to a writable folder (nothing was measured)")


def test_a_cache_lost_while_measuring_keeps_the_measurement_in_the_message(tmp_path, monkeypatch):
    import shutil

    from gnnbench.errors import UserError

    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path / "cache"))

    def measure_then_lose_the_folder(threads=None):
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)
        (tmp_path / "cache").write_text("")
        return FAKE

    with pytest.raises(UserError) as err:
        machine_bounds(2, measure=measure_then_lose_the_folder)
    assert str(err.value).startswith("measured STREAM triad 20.0 GB/s, random 256-byte gather 10.0 GB/s on 2 "
                                     f"threads, but could not save them in {tmp_path / 'cache' / 'bounds'} (")
