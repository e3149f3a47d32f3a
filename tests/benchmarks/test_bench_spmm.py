"""benchmarks/studies/bench_spmm.py: its rows carry provenance and its tables read statistics from Measurement."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_spmm")


def _result(samples_ms):
    """One process's result as run_case writes it (median and IQR are recomputed when pooled)."""
    return {"median_ms": sorted(samples_ms)[len(samples_ms) // 2], "iqr_ms": 0.0, "noise": "", "GBps": 1.0,
            "min_ms": min(samples_ms), "samples_ms": samples_ms}


def _process(bench, scale=1.0, torch_ms=(7.9, 8.0, 8.1), chosen="row"):
    """One process's report: every system's samples times ``scale``."""
    def r(*ms):
        return _result([m * scale for m in ms])

    results = {"isplib (tuned)": r(1.9, 2.0, 2.1), "isplib (default variant)": r(2.9, 3.0, 3.1),
               "numba plain CSR loop": r(3.9, 4.0, 4.1), bench._GATHERS: r(1.4, 1.5, 1.6),
               bench._IN_ORDER: r(5.9, 6.0, 6.1), "torch.sparse.mm": r(*torch_ms)}
    return {"cases": [{"graph": "uniform", "edges": 1000, "width": 32, "results": results, "notes": ["a note"],
                       "tuning": {"chosen": chosen, "wall_time_s": 1.5}}]}


def _report(bench, processes):
    report = bench.run_provenance("tcmalloc", rounds=3)
    report.update(uptime_end="later", bandwidth={"triad_GBps": 10.0, "triad_numpy_1thread_GBps": 5.0,
                                                 "triad_array_elements": 10**7, "gather256_GBps": 4.0,
                                                 "gather_table_MiB": 256.0,
                                                 "load_latency_ns": {1: 7.0, 32: 180.4}})
    report.update(bench.pool(processes))
    return report


def test_provenance_names_commit_machine_versions_allocator_and_threads(bench):
    report = bench.run_provenance("tcmalloc", rounds=3)
    assert {"timestamp", "git_commit", "machine", "cpu", "allocator", "threads", "versions", "uptime_start",
            "rounds"} <= set(report)
    assert set(report["threads"]) == {"numba", "torch"} and "numba" in report["versions"]


def test_one_process_ranks_systems_against_tuned_isplib_and_claims_no_interval(bench):
    text = bench.markdown(_report(bench, [_process(bench, torch_ms=(5.0, 8.0, 11.0))]))
    assert "absolute times were measured under that load" in text
    assert ("One process of 3 interleaved rounds: 1 process: no significance claimed, so no intervals "
            "(Note [a process per round]).") in text
    assert ("| torch.sparse.mm | 8.0 | 3.0 | 1.0 | 4.00x | 1 | 1 process: no significance claimed; unstable: "
            "epoch spread 37% within the process |") in text
    assert "**4.00x** faster than the fastest peer (torch.sparse.mm)" in text
    assert "2.00x faster than the plain numba loop" in text
    assert "Its gathers alone take 1.5 ms, 75% of the SpMM; 1.5x the fastest peer would be 5.3 ms." in text
    assert ("Reading the same rows in x's order takes 6.0 ms, so only rows reused from cache could reach that "
            "(Note [gather bounds])." in text)
    assert "at random over a table of 1 MiB 7 ns, 32 MiB 180 ns (Note [gather bounds])" in text
    assert "| the same gathers reading x's rows in sequence (not an SpMM) | 6.0 |" in text  # a bound, not a peer
    assert text.count("- a note") == 1


def test_five_processes_pool_medians_of_medians_with_an_interval_over_processes(bench):
    """Note [a process per round]: the figure is the median of the process medians; the interval is two-level."""
    scales = (1.0, 1.02, 0.98, 1.01, 0.99)
    processes = [_process(bench, s, chosen="row" if i else "tiled") for i, s in enumerate(scales)]
    report = _report(bench, processes)
    torch_row = report["cases"][0]["results"]["torch.sparse.mm"]
    assert torch_row["processes"] == 5 and torch_row["median_ms"] == pytest.approx(8.0)
    assert torch_row["process_medians_ms"] == pytest.approx([8.0 * s for s in scales])
    ratio, low, high = torch_row["vs_isplib"]
    assert ratio == pytest.approx(4.0) and low < ratio < high and high - low < 0.5  # every process agrees on about 4x
    text = bench.markdown(report)
    assert "5 processes, one after another, each timing every system over 3 interleaved rounds" in text
    assert f"| torch.sparse.mm | 8.0 | 0.1 | 1.0 | 4.00x [{low:.2f}, {high:.2f}] | 5 |  |" in text
    assert "| vs isplib (tuned) [95% interval] | processes | stability |" in text
    assert "variant `row` in 4 of 5 processes" in text
    assert f"**4.00x [{low:.2f}, {high:.2f}]** faster than the fastest peer (torch.sparse.mm)" in text


def test_processes_below_one_are_one_line_before_anything_runs(bench, capsys):
    assert bench.main(["--processes", "0"]) == 2
    assert capsys.readouterr().err == ("bench_spmm: argument --processes: must be a whole number of at least 1 "
                                       "(got '0')\n")


def test_the_bounds_come_from_the_one_module_that_measures_them(bench, monkeypatch):
    from gnnbench.run.bounds import Bounds

    sizes = []

    def measure(triad_elements, gather_rows, repeats):
        sizes.append((triad_elements, gather_rows, repeats))
        return Bounds(12.0, 3.0, 2, triad_elements, gather_rows, "now")

    monkeypatch.setattr(bench, "measure_bounds", measure)
    monkeypatch.setattr(bench, "_numpy_triad_seconds", lambda n: 24 * n / 6e9)  # 6 GB/s
    monkeypatch.setattr(bench, "load_latency_ns", lambda mib, steps: float(mib))
    bw = bench.measure_bandwidth(quick=True)
    assert sizes == [(10_000_000, 1 << 20, 5)]
    assert bw == {"triad_GBps": 12.0, "triad_numpy_1thread_GBps": pytest.approx(6.0), "triad_array_elements": 10**7,
                  "gather256_GBps": 3.0, "gather_table_MiB": 256.0, "load_latency_ns": {1: 1.0, 4: 4.0, 32: 32.0}}


def test_a_failed_process_ends_the_series_and_keeps_the_finished_ones(bench, monkeypatch):
    """No finished measurement is thrown away: the processes before the failure are pooled, and the table says so."""
    import json
    import subprocess
    from types import SimpleNamespace

    calls, real_run = [], subprocess.run

    def fake_run(command, **kwargs):
        if "--one-process" not in command:  # uptime and git keep running for real
            return real_run(command, **kwargs)
        calls.append(command)
        if len(calls) == 2:
            return SimpleNamespace(returncode=1)
        Path(command[-1]).write_text(json.dumps(_process(bench)))
        return SimpleNamespace(returncode=0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    reports, failure = bench.run_processes(["--quick"], 3)
    assert len(calls) == 2 and calls[0][-3:-1] == ["--quick", "--one-process"]
    assert failure == "process 2 of 3 failed (exit status 1)" and len(reports) == 1
    report = _report(bench, reports)
    report["failure"] = f"{failure}: the tables pool the 1 that finished"
    assert ("One process of 3 interleaved rounds: 1 process: no significance claimed, so no intervals "
            "(Note [a process per round]). Process 2 of 3 failed (exit status 1): the tables pool the 1 that "
            "finished.") in bench.markdown(report)


def _with_share(process, share):
    """``process`` with the other-CPU share its timed rounds saw (as run_case records the machine state)."""
    for case in process["cases"]:
        case["machine_state"] = {"other_cpu_share": share, "load_before": [0.1, 0.1, 0.1]}
    return process


def test_a_process_beside_a_busy_one_marks_its_case_and_keeps_it_out_of_the_headline(bench):
    processes = [_with_share(_process(bench), share) for share in (0.01, 0.02, 0.35, 0.0, 0.03)]
    text = bench.markdown(_report(bench, processes))
    assert ("Other processes' share of the CPUs while each process timed its rounds: 1%, 2%, 35%, 0%, 3%; 1 of 5 "
            "above 10%, so every figure of this case is marked busy and none is a headline.") in text
    assert "busy machine: other processes took up to 35% of the CPUs" in text
    assert "faster than the plain numba loop (measured beside a busy process: not a headline)." in text


def test_quiet_processes_state_their_shares_and_keep_the_headline(bench):
    processes = [_with_share(_process(bench), share) for share in (0.01, 0.02, 0.0, 0.0, 0.03)]
    text = bench.markdown(_report(bench, processes))
    assert ("Other processes' share of the CPUs while each process timed its rounds: 1%, 2%, 0%, 0%, 3%; none "
            "above 10%.") in text
    assert "busy machine" not in text and "not a headline" not in text


def test_the_headline_is_isplib_against_dgl_in_the_quiet_cases_only(bench):
    def with_dgl(process):
        process["cases"][0]["results"][bench.HEADLINE_PEER] = _result([3.9, 4.0, 4.1])
        return process

    quiet = [_with_share(with_dgl(_process(bench)), share) for share in (0.01, 0.02, 0.0, 0.0, 0.03)]
    text = bench.headline(_report(bench, quiet))
    assert text.startswith("isplib against DGL's copy_u_sum on uniform: F=32 2.00x [")
    busy = [_with_share(with_dgl(_process(bench)), share) for share in (0.01, 0.02, 0.35, 0.0, 0.03)]
    assert bench.headline(_report(bench, busy)) is None
    assert bench.headline(_report(bench, [_process(bench)])) is None  # DGL not measured
