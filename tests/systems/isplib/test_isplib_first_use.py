"""Tuning on first use: what a run misses is tuned once within a budget, keyed by kernel path, and cached."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gnnbench.runtime.graph import Graph
from gnnbench.run.harness import RunConfig, train
from gnnbench.run.tuning import TUNE_BUDGET_MAX_S, TUNE_BUDGET_MIN_S, tune_budget_s
from gnnbench.systems.isplib import kernels as K
from gnnbench.systems.isplib import tuning, tuning_cache
from gnnbench.systems.isplib.first_use import pending_tasks, tune_pending
from gnnbench.systems.isplib.prepared import prepare
from gnnbench.systems.isplib.variant import default_variant
from tests.systems.isplib.fake_clock import FakeClock, faster_than_default

TINY = "sbm:nodes=300,classes=3,features=16,degree=6,seed=2"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path))
    monkeypatch.setenv("GNNBENCH_TUNE_BUDGET_S", "0.6")  # a tiny budget keeps the test fast
    return tmp_path


def _graph(n=60, e=500, seed=3) -> Graph:
    rng = np.random.default_rng(seed)
    return Graph.from_edges(rng.integers(0, n, e), rng.integers(0, n, e), n, np.int64)


def _prepared(g: Graph, transposed: bool):
    view = g.view(transposed=transposed)
    return view.with_prepared(prepare(view))


def test_kernel_calls_record_their_path_as_pending(cache_dir):
    g = _graph()
    fwd, bwd = _prepared(g, False), _prepared(g, True)
    x = np.ones((g.num_nodes, 2, 3), dtype=np.float32)
    out = np.empty_like(x)
    x1 = np.ones((g.num_nodes, 1, 3), dtype=np.float32)
    out1 = np.empty_like(x1)
    w1 = np.ones((g.num_edges, 1), dtype=np.float32)
    K.spmm_sum(fwd, x, None, out, reduce="mean")
    K.spmm_sum(fwd, x1, w1, out1, reduce="sum")
    K.spmm_sum(fwd, x, np.ones((g.num_edges, 2), dtype=np.float32), out, reduce="sum")  # per-head: not tuned
    K.spmm_sum_backward(bwd, x1, g.gcn_norm().reshape(-1, 1), out1, reduce="sum")  # GCN's weights
    K.spmm_sum_backward(bwd, x1, w1, out1, reduce="sum")
    assert fwd.prepared.pending == {("unweighted", "mean", 6, "float32"), ("weighted", "sum", 3, "float32")}
    assert bwd.prepared.pending == {("gcn", "sum", 3, "float32"), ("weighted", "sum", 3, "float32")}
    assert [t.key for t in pending_tasks([fwd, bwd])] == [
        ("forward", "unweighted", "mean", 6, "float32"), ("forward", "weighted", "sum", 3, "float32"),
        ("transposed", "gcn", "sum", 3, "float32"), ("transposed", "weighted", "sum", 3, "float32")]


def test_tune_pending_installs_caches_and_clears(cache_dir):
    g = _graph()
    fwd, bwd = _prepared(g, False), _prepared(g, True)
    x = np.random.default_rng(0).standard_normal((g.num_nodes, 1, 5)).astype(np.float32)
    out = np.empty_like(x)
    K.spmm_sum(fwd, x, None, out, reduce="sum")
    K.spmm_sum_backward(bwd, x, None, out, reduce="mean")
    lines: list[str] = []
    result = tune_pending([fwd, bwd], budget_s=60.0, progress=lambda line: lines.append(line),
                          starting=lambda: lines.append("starting"))
    assert lines.pop(0) == "starting"  # once, before the first path (Note [tune on first use])
    assert set(result.choices) == {("forward", "unweighted", "sum", 5, "float32"),
                                   ("transposed", "unweighted", "mean", 5, "float32")}
    assert len(lines) == 2 and lines[0].startswith("isplib: tuning 1/2 forward:unweighted:sum:5:float32")
    assert not fwd.prepared.pending and not bwd.prepared.pending and fwd.prepared.tuned
    assert tune_pending([fwd, bwd], budget_s=2.0, starting=lambda: lines.append("starting")) is None  # nothing left
    assert "starting" not in lines
    entries = json.loads((cache_dir / tuning_cache.CACHE_NAME).read_text())["machines"][tuning_cache.cpu_fingerprint()]
    assert set(entries[g.signature()]) == {tuning_cache.entry_key(*k, result.threads) for k in result.choices}
    # a fresh prepare finds them: a later run tunes nothing
    again = prepare(g.view(transposed=True))
    assert again.variant(5, np.dtype(np.float32), "unweighted", "mean") == bwd.prepared.variant(
        5, np.dtype(np.float32), "unweighted", "mean")
    assert not again.pending


def test_spent_budget_skips_paths_and_keeps_them_pending(cache_dir, monkeypatch):
    g = _graph()
    fwd = _prepared(g, False)
    x = np.ones((g.num_nodes, 1, 4), dtype=np.float32)
    K.spmm_sum(fwd, x, None, np.empty_like(x), reduce="sum")
    result = tune_pending([fwd], budget_s=tuning._MIN_SHARE_S / 2)
    assert result.skipped == (("forward", "unweighted", "sum", 4, "float32"),) and not result.choices
    assert fwd.prepared.pending and not (cache_dir / tuning_cache.CACHE_NAME).exists()
    assert "the budget was spent" in str(result)


def test_large_graphs_are_timed_on_sampled_rows(cache_dir, monkeypatch):
    g = _graph(n=2000, e=40000)
    indptr = np.asarray(g.view().indptr)
    segments = tuning._sample_segments(indptr, 4000)
    assert len(segments) == tuning._SAMPLE_RUNS
    assert all(a < b for a, b in segments) and all(b <= c for (_, b), (c, _) in zip(segments, segments[1:]))
    nnz = sum(int(indptr[b] - indptr[a]) for a, b in segments)
    assert 4000 <= nnz < 4000 + 16 * 40  # about the target, up to a row per run
    assert tuning._sample_segments(indptr, 10**6) is None  # small graphs are timed whole
    monkeypatch.setattr(tuning, "_MIN_SAMPLE_NNZ", 2000)
    # a slow machine, measured on a fake clock (1 us a nonzero, compiling free), so CI's speed cannot matter:
    # 5 s then buys about 30k of the 40k nonzeros
    FakeClock(faster_than_default).install(monkeypatch)
    task = tuning.TuneTask(g.view(transposed=True), "weighted", "mean", 8, "float32")
    chosen, times, default_ms, sample_nnz = tuning._tune_one(task, 1, np.random.default_rng(0), True, 5.0)
    assert sample_nnz < g.num_edges and default_variant().label in times and chosen.label in times


def test_budget_is_five_percent_of_a_200_epoch_run(monkeypatch):
    monkeypatch.delenv("GNNBENCH_TUNE_BUDGET_S", raising=False)
    assert tune_budget_s(0.5, 6) == pytest.approx(5.0)  # 5 % of 200 x 0.5 s
    assert tune_budget_s(0.5, 1000) == pytest.approx(25.0)
    assert tune_budget_s(1e-4, 10) == TUNE_BUDGET_MIN_S and tune_budget_s(100.0, 10) == TUNE_BUDGET_MAX_S
    monkeypatch.setenv("GNNBENCH_TUNE_BUDGET_S", "0.25")
    assert tune_budget_s(0.5, 6) == 0.25


def test_run_tunes_on_first_use_then_reuses_the_cache(cache_dir, monkeypatch):
    monkeypatch.setenv("GNNBENCH_TUNE_BUDGET_S", "8")
    # GCN's edge form (per-edge weights), whose two SpMM paths differ; the node form's are both unweighted.
    # 32 features into hidden 16: the first layer narrows, so it aggregates x W, which needs a backward SpMM
    spec = RunConfig(system="isplib", model="gcn", dataset=TINY.replace("features=16", "features=32"), epochs=2,
                    warmup=1, normalisation="edge")
    row = train(spec)
    assert row["tune_time_s"] > 0 and row["prepare_time_s"] > 0
    choices = {(c["orientation"], c["weighting"]) for c in row["extra"]["tuning"]["choices"]}
    assert choices == {("forward", "weighted"), ("transposed", "gcn")}  # GCN's two SpMM paths
    assert "tune" not in row["hyperparameters"] and "mode" not in row["hyperparameters"]
    again = train(spec)
    assert again["tune_time_s"] is None and "tuning" not in again["extra"]
    assert "(tuned)" in again["extra"]["system_report"]["tuning"]["forward"]
    assert "(default" not in again["extra"]["system_report"]["tuning"]["forward"]


def test_report_names_the_paths_a_run_used(cache_dir):
    """Inference never runs the transposed view: the report says so instead of offering to tune it."""
    row = train(RunConfig(system="isplib", model="gcn", dataset=TINY, epochs=2, warmup=1, mode="inference"))
    tuning = row["extra"]["system_report"]["tuning"]
    assert tuning["transposed"].startswith("no SpMM ran on the transposed graph")
    assert "unweighted:sum:" in tuning["forward"] and "(tuned)" in tuning["forward"]


def test_no_tune_measures_the_default_variant(cache_dir):
    row = train(RunConfig(system="isplib", model="sage", dataset=TINY, epochs=2, warmup=1, tune=False))
    assert row["tune_time_s"] is None and not (cache_dir / tuning_cache.CACHE_NAME).exists()
    assert row["hyperparameters"]["tune"] is False
    forward = row["extra"]["system_report"]["tuning"]["forward"]
    assert "(default)" in forward and "no tuning cache entry" in forward and "(tuned)" not in forward


def test_sampled_rows_share_the_runs_kernel_signature(cache_dir):
    """A writable sample would be another numba specialisation, compiled inside the budget (17 s against 1.8 s)."""
    import numba

    g = _graph(n=2000, e=40000)
    view = _prepared(g, True)
    case = tuning._Case(tuning.TuneTask(view, "unweighted", "sum", 8, "float32"), 4000, np.random.default_rng(0))
    assert case.nnz < g.num_edges  # sampled rows, built by the tuner
    for sampled, run in ((case.indptr, view.indptr), (case.indices, view.indices)):
        assert numba.typeof(sampled) == numba.typeof(np.asarray(run))
