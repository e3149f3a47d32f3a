"""benchmarks/bench_spmm.py: its rows carry provenance and its tables read statistics from Measurement."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_spmm")


def _result(ms, noise=""):
    return {"median_ms": ms, "iqr_ms": ms / 10, "noise": noise, "GBps": 1.0, "min_ms": ms, "samples_ms": [ms]}


def test_provenance_names_commit_machine_versions_allocator_and_threads(bench):
    report = bench.run_provenance("tcmalloc", rounds=3)
    assert {"timestamp", "git_commit", "machine", "cpu", "allocator", "threads", "versions", "uptime_start",
            "rounds"} <= set(report)
    assert set(report["threads"]) == {"numba", "torch"} and "numba" in report["versions"]


def test_markdown_ranks_systems_against_tuned_isplib_and_flags_noise(bench):
    report = bench.run_provenance("tcmalloc", rounds=3)
    report.update(uptime_end="later", bandwidth={"triad_GBps": 10.0, "triad_numpy_1thread_GBps": 5.0,
                                                 "triad_array_elements": 10**7, "gather256_GBps": 4.0,
                                                 "gather_table_MiB": 256.0,
                                                 "load_latency_ns": {1: 7.0, 32: 180.4}})
    results = {"isplib (tuned)": _result(2.0), "isplib (default variant)": _result(3.0),
               "numba plain CSR loop": _result(4.0), bench._GATHERS: _result(1.5),
               bench._IN_ORDER: _result(6.0),
               "torch.sparse.mm": _result(8.0, "(! 30%)")}
    report["cases"] = [{"graph": "uniform", "edges": 1000, "width": 32, "results": results, "notes": [],
                        "tuning": {"chosen": "row", "wall_time_s": 1.5}}]
    text = bench.markdown(report)
    assert "absolute times were measured under that load" in text and report["git_commit"] in text
    assert "| torch.sparse.mm | 8.0 (! 30%) | 0.8 | 1.0 | 4.00x |" in text
    assert "**4.00x** faster than the fastest peer (torch.sparse.mm)" in text
    assert "2.00x faster than the plain numba loop" in text
    assert "Its gathers alone take 1.5 ms, 75% of the SpMM; 1.5x the fastest peer would be 5.3 ms." in text
    assert ("Reading the same rows in x's order takes 6.0 ms, so only rows reused from cache could reach that "
            "(Note [gather bounds])." in text)
    assert "at random over a table of 1 MiB 7 ns, 32 MiB 180 ns (Note [gather bounds])" in text
    assert "| the same gathers reading x's rows in sequence (not an SpMM) | 6.0 |" in text  # a bound, not a peer


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
