"""isplib.tune: times variants on a tiny graph, writes the JSON cache, prepare() reads it back."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gnnbench.runtime.graph import Graph
from gnnbench.errors import UserError
from gnnbench.systems import isplib
from gnnbench.systems.isplib import kernels as K
from gnnbench.systems.isplib import tuning, tuning_cache
from gnnbench.systems.isplib.variant import Variant, default_variant
from tests.systems.isplib.fake_clock import FakeClock, faster_than_default


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path))
    return tmp_path


def _graph(symmetric: bool) -> Graph:
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, 40, 300), rng.integers(0, 40, 300)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return Graph.from_edges(src, dst, 41, np.int64)


def test_prepare_without_cache_entry_uses_default(cache_dir):
    g = _graph(symmetric=True)
    p = isplib.prepare(g.view())
    assert not p.tuned and p.variant(16, np.dtype(np.float32)) == default_variant()
    text = isplib.describe_tuning(p)
    assert "no tuning cache entry" in text and "first use" in text
    assert default_variant().label in text


@pytest.mark.parametrize("symmetric", [True, False])
def test_tune_writes_cache_and_prepare_reads_it(cache_dir, symmetric):
    g = _graph(symmetric)
    result = isplib.tune(g, widths=[3, 8], dtype=np.float32, reps=1)
    path = cache_dir / tuning_cache.CACHE_NAME
    assert result.cache_path == str(path) and path.exists()
    assert result.wall_time_s > 0 and result.signature == g.signature()
    keys = {(o, wt, "sum", w, "float32") for o in ("forward", "transposed") for wt in ("unweighted", "weighted")
            for w in (3, 8)}
    assert set(result.choices) == keys
    for key, variant in result.choices.items():
        assert variant.label in result.times_ms[key]  # the winner was measured
        best = min(result.times_ms[key].values())
        # the fastest variant wins unless it is within 2 % of the default
        assert result.times_ms[key][variant.label] == best or (
            variant == default_variant() and result.default_ms[key] <= best / 0.98)
        assert len(result.times_ms[key]) > 8  # both stages ran
        assert result.speedup(*key) > 0

    data = json.loads(path.read_text())
    entries = data["machines"][tuning_cache.cpu_fingerprint()][g.signature()]
    assert set(entries) == {tuning_cache.entry_key(*k, result.threads) for k in keys}

    for transposed in (False, True):
        p = isplib.prepare(g.view(transposed=transposed))
        orient = "transposed" if transposed else "forward"
        f32 = np.dtype(np.float32)
        assert p.tuned
        assert p.variant(8, f32) == result.choices[(orient, "unweighted", "sum", 8, "float32")]
        assert p.variant(8, f32, "weighted") == result.choices[(orient, "weighted", "sum", 8, "float32")]
        assert p.variant(5, f32) == default_variant()  # untuned width
        assert p.variant(8, f32, "unweighted", "mean") == default_variant()  # untuned reduce
        assert p.pending == {("unweighted", "sum", 5, "float32"), ("unweighted", "mean", 8, "float32")}
        assert "tuned variants" in isplib.describe_tuning(p)

    # the tuned variants compute the same SpMM
    fwd = g.view().with_prepared(isplib.prepare(g.view()))
    x = np.random.default_rng(0).standard_normal((g.num_nodes, 1, 8)).astype(np.float32)
    out, ref = np.empty_like(x), np.zeros_like(x, dtype=np.float64)
    K.spmm_sum(fwd, x, None, out, reduce="sum")
    src, dst = g.edges()
    np.add.at(ref, dst, x[src])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert json.loads(json.dumps(result.as_dict()))["choices"]
    shown = str(result).splitlines()  # what `gnnbench tune` prints
    assert shown[0].startswith(f"isplib tuning of graph {g.signature()} on ")
    assert len([line for line in shown if " F=" in line]) == 8 and shown[-1].endswith(f"cached in {path}")


def test_cache_key_covers_threads(cache_dir):
    sig = _graph(True).signature()
    tuning_cache.store(tuning_cache.cache_file(), sig, {
        tuning_cache.entry_key("forward", "weighted", "mean", 4, "float32", 1): {"variant": Variant(unroll=1).as_dict()},
        tuning_cache.entry_key("forward", "weighted", "mean", 4, "float32", 64): {"variant": Variant(unroll=8).as_dict()},
    })
    assert tuning_cache.lookup(sig, "forward", threads=1) == {("weighted", "mean", 4, "float32"): Variant(unroll=1)}
    assert tuning_cache.lookup(sig, "forward", threads=64) == {("weighted", "mean", 4, "float32"): Variant(unroll=8)}
    assert tuning_cache.lookup(sig, "forward", threads=3) == {}
    assert tuning_cache.lookup(sig, "transposed", threads=1) == {}


def test_version_one_cache_is_ignored(cache_dir):
    (cache_dir / tuning_cache.CACHE_NAME).write_text(json.dumps(
        {"version": 1, "machines": {tuning_cache.cpu_fingerprint(): {"0" * 16: {"forward:4:float32": {}}}}}))
    assert tuning_cache.lookup("0" * 16, "forward") == {}


def test_cache_merges_graphs_and_ignores_other_machines(cache_dir, monkeypatch):
    a, b = _graph(True), _graph(False)
    ka = tuning_cache.entry_key("forward", "unweighted", "sum", 4, "float32", 2)
    kb = tuning_cache.entry_key("forward", "unweighted", "sum", 4, "float64", 2)
    tuning_cache.store(tuning_cache.cache_file(), a.signature(), {ka: {"variant": Variant(unroll=1).as_dict()}})
    tuning_cache.store(tuning_cache.cache_file(), b.signature(), {kb: {"variant": Variant(unroll=8).as_dict()}})
    key = ("unweighted", "sum", 4)
    assert tuning_cache.lookup(a.signature(), "forward", threads=2) == {(*key, "float32"): Variant(unroll=1)}
    assert tuning_cache.lookup(b.signature(), "forward", threads=2) == {(*key, "float64"): Variant(unroll=8)}
    assert tuning_cache.lookup(b.signature(), "transposed", threads=2) == {}
    assert not list(cache_dir.glob("*.tmp"))  # atomic replace left no temp file
    monkeypatch.setattr(tuning_cache, "cpu_fingerprint", lambda: "another cpu|64 cores|numba 0")
    assert tuning_cache.lookup(a.signature(), "forward", threads=2) == {}


def test_a_lookup_sees_entries_stored_after_an_earlier_lookup(cache_dir):
    """Lookups read an index of the parsed file (a sampled run looks up every block); a rewrite renews it."""
    a = _graph(True)
    key = ("unweighted", "sum", 4, "float32")
    assert tuning_cache.lookup(a.signature(), "forward", threads=2) == {}
    tuning_cache.store(tuning_cache.cache_file(), a.signature(),
                  {tuning_cache.entry_key("forward", *key, 2): {"variant": Variant(unroll=4).as_dict()}})
    found = tuning_cache.lookup(a.signature(), "forward", threads=2)
    assert found == {key: Variant(unroll=4)} and tuning_cache.lookup(a.signature(), "forward", threads=1) == {}
    found.clear()  # a caller's copy: the index keeps its entries
    assert tuning_cache.lookup(a.signature(), "forward", threads=2) == {key: Variant(unroll=4)}


def test_tune_rejects_bad_arguments(cache_dir):
    g = _graph(True)
    with pytest.raises(UserError, match="float32 or float64"):
        isplib.tune(g, [8], dtype=np.int32)
    with pytest.raises(UserError, match="positive feature widths"):
        isplib.tune(g, [])


def test_corrupt_cache_is_a_user_error(cache_dir):
    (cache_dir / tuning_cache.CACHE_NAME).write_text("{not json")
    with pytest.raises(UserError, match="unreadable"):
        tuning_cache.lookup("0" * 16, "forward")


def test_variant_validation_and_round_trip():
    v = Variant("fixed", 8, 16, "nnz-dynamic", 1)
    assert Variant.from_dict(v.as_dict()) == v and v.label == "fixed/u8/pf16/nnz-dynamic/t1"
    with pytest.raises(ValueError, match="unroll must be 1, 4 or 8"):
        Variant(unroll=3)
    with pytest.raises(ValueError, match="partition must be one of"):
        Variant(partition="cols")
    streamed = Variant("fixed", stores="streaming")
    assert Variant.from_dict(streamed.as_dict()) == streamed and streamed.label == "fixed/u4/pf16/nnz/tmax/nt"
    assert Variant.from_dict({"kernel": "fixed"}).stores == "cached"  # an entry written before the knob existed
    with pytest.raises(ValueError, match="stores must be one of"):
        Variant(stores="uncached")


@pytest.mark.parametrize("width,dtype,kernel,streamed", [(16, "float32", "fixed", True), (8, "float64", "fixed", True),
                                                         (12, "float32", "fixed", False),
                                                         (16, "float32", "generic", False)])
def test_stage_three_tries_streaming_stores_where_the_rows_are_whole_lines(monkeypatch, width, dtype, kernel, streamed):
    """Note [tuning search], stage 3: the best variant with streaming stores, chosen when it is fastest."""
    g = _graph(symmetric=False)
    best = Variant(kernel, 8, 16)
    task = tuning.TuneTask(g.view(), "unweighted", "sum", width, dtype)
    assert tuning._stage_three(best, task) == ([Variant(kernel, 8, 16, stores="streaming")] if streamed else [])

    def fake_times(variants, case, reps, check, deadline=None, warmed=()):
        return {v.label: 0.5 if v.stores == "streaming" else 0.9 if v == best else 1.0 for v in variants}

    monkeypatch.setattr(tuning, "_time_variants", fake_times)
    chosen, times, *_ = tuning._tune_one(task, 1, np.random.default_rng(0), True, budget_s=None)
    assert chosen == (tuning._stage_three(best, task)[0] if streamed else best)


@pytest.mark.parametrize("wins_on_whole_graph", [False, True])
def test_a_sampled_winner_is_kept_only_if_it_wins_on_the_whole_graph(monkeypatch, wins_on_whole_graph):
    """Note [confirm on the whole graph]: a variant that wins on warm sampled rows must also win on every row."""
    g = _graph(symmetric=False)
    total = int(g.view().indptr[-1])
    monkeypatch.setattr(tuning, "_MIN_SAMPLE_NNZ", 16)  # a sample smaller than this tiny graph
    # the width-specialised candidates are timed only once compiled in this process (Note [tuning budget]);
    # whether an earlier test compiled them depends on the test order (two xdist workers): say they are, so the
    # sampled stage has a winner to confirm whatever ran before
    monkeypatch.setattr(tuning._Case, "fixed_ready", lambda self: True)
    calls = []

    def fake_times(variants, case, reps, check, deadline=None, warmed=()):
        whole = case.nnz == total
        calls.append(whole)
        fast = 0.5 if not whole or wins_on_whole_graph else 2.0
        return {v.label: 1.0 if v == default_variant() else fast for v in variants}

    monkeypatch.setattr(tuning, "_time_variants", fake_times)
    task = tuning.TuneTask(g.view(), "unweighted", "sum", 8, "float32")
    chosen, *_ = tuning._tune_one(task, 1, np.random.default_rng(0), False, budget_s=1e-6)
    assert calls[-1] is True and not any(calls[:-1]), calls  # sampled stages first, then one whole-graph check
    assert (chosen != default_variant()) == wins_on_whole_graph


def _big_graph() -> Graph:
    rng = np.random.default_rng(11)
    return Graph.from_edges(rng.integers(0, 400, 6000), rng.integers(0, 400, 6000), 400, np.int64)


@pytest.mark.parametrize("budget_s", [0.002, 0.02, 0.08, 0.3, 2.0])
def test_budget_is_a_deadline_for_every_step(cache_dir, monkeypatch, budget_s):
    """Sampling, probe, search and confirmation all end by the deadline, give or take one call."""
    clock = FakeClock(faster_than_default).install(monkeypatch)
    monkeypatch.setattr(tuning, "_MIN_SAMPLE_NNZ", 256)  # sampled rows, and a whole graph 20x bigger
    g = _big_graph()
    tasks = [tuning.TuneTask(g.view(transposed=t), "unweighted", "sum", 16, "float32") for t in (False, True)]
    result = tuning.tune_keys(tasks, budget_s=budget_s)
    assert result.wall_time_s <= budget_s + clock.longest
    assert set(result.choices) | set(result.skipped) == {t.key for t in tasks}
    for key, v in result.choices.items():  # whatever was stored was timed against a timed default
        assert v.label in result.times_ms[key] and result.default_ms[key] > 0


def test_a_winner_needs_the_budget_for_its_confirmation(cache_dir, monkeypatch):
    monkeypatch.setattr(tuning, "_MIN_SAMPLE_NNZ", 256)
    g = _big_graph()
    task = tuning.TuneTask(g.view(), "unweighted", "sum", 16, "float32")
    FakeClock(faster_than_default).install(monkeypatch)
    chosen, times, *_ = tuning._tune_one(task, 1, np.random.default_rng(0), True, budget_s=1.0)
    assert chosen != default_variant()  # found on the sample, confirmed on the whole graph
    # the confirmation alone (4 whole-graph calls) costs 24 ms here: reserved in a 30 ms budget, not in 20 ms
    clock = FakeClock(faster_than_default).install(monkeypatch)
    chosen, times, *_ = tuning._tune_one(task, 1, np.random.default_rng(0), True, budget_s=0.03)
    assert chosen != default_variant() and clock.now <= 0.03
    clock = FakeClock(faster_than_default).install(monkeypatch)
    chosen, times, *_ = tuning._tune_one(task, 1, np.random.default_rng(0), True, budget_s=0.02)
    assert chosen == default_variant() and clock.now <= 0.02


def test_narrow_paths_keep_the_default_under_a_budget(cache_dir, monkeypatch):
    """GCN's width-8 output layer beside its width-64 hidden layer is a small share of the kernel time."""
    FakeClock(faster_than_default).install(monkeypatch)
    g = _big_graph()
    tasks = [tuning.TuneTask(g.view(), "unweighted", "sum", w, "float32") for w in (64, 8)]
    result = tuning.tune_keys(tasks, budget_s=1.0)
    assert set(result.choices) == {tasks[0].key} and result.narrow == (tasks[1].key,)
    assert "narrow width" in str(result)
    assert tuning_cache.lookup(g.signature(), "forward")[("unweighted", "sum", 8, "float32")] == default_variant()
    unbounded = tuning.tune_keys(tasks, budget_s=None, reps=1)  # `gnnbench tune` tunes every width
    assert set(unbounded.choices) == {t.key for t in tasks} and not unbounded.narrow


def test_large_views_default_to_the_width_specialised_kernel(cache_dir, monkeypatch):
    """Note [untuned default]: a compilation per width pays off only on big views; small ones stay generic."""
    from gnnbench.systems.isplib import variant as variant_module
    from gnnbench.systems.isplib.prepared import describe_tuning, prepare

    g = _graph(symmetric=True)
    f32 = np.dtype(np.float32)
    assert prepare(g.view()).variant(64, f32) == default_variant() and default_variant().kernel == "generic"
    monkeypatch.setattr(variant_module, "FIXED_DEFAULT_MIN_NNZ", g.num_edges)  # this graph now counts as big
    big = prepare(g.view())
    assert big.variant(64, f32) == Variant(kernel="fixed") == default_variant(g.num_edges, 64)
    assert big.variant(variant_module.FIXED_DEFAULT_MAX_WIDTH + 1, f32).kernel == "generic"  # too wide for the stack
    assert big.pending == {("unweighted", "sum", 64, "float32"), ("unweighted", "sum", 513, "float32")}
    assert "using the default variant fixed/u4/pf16/nnz/tmax" in describe_tuning(big)


def test_a_specialised_kernel_that_ran_on_a_case_is_ready_for_it():
    """Note [tuning budget]: once the width-specialised kernel has run on a case's arrays, ``fixed_ready`` says so.
    It once asked the serial/parallel pair (Note [serial below a size]) for a dispatcher's overloads, failed and
    always said no: under a budget the tuner then chose among generic loops only and cached them over the faster
    specialised default."""
    task = tuning.TuneTask(_graph(symmetric=False).view(), "unweighted", "sum", 16, "float32")
    case = tuning._Case(task, 1 << 20, np.random.default_rng(0))
    case.run(Variant(kernel="fixed"))
    assert case.fixed_ready()


def test_the_tuner_measures_against_the_default_the_run_would_use(cache_dir, monkeypatch):
    """A big path's reference is the specialised kernel once compiled, and the generic one before (no compiling)."""
    from gnnbench.systems.isplib import variant as variant_module

    FakeClock(faster_than_default, run_kernels=False).install(monkeypatch)  # nothing compiles
    g = _big_graph()
    monkeypatch.setattr(variant_module, "FIXED_DEFAULT_MIN_NNZ", 1000)
    monkeypatch.setattr(tuning, "_MIN_SAMPLE_NNZ", 256)
    task = tuning.TuneTask(g.view(), "unweighted", "sum", 16, "float32")
    monkeypatch.setattr(tuning._Case, "fixed_ready", lambda self: False)
    _, times, default_ms, _ = tuning._tune_one(task, 1, np.random.default_rng(0), True, budget_s=1.0)
    assert default_ms == times[default_variant().label]  # not compiled: the generic kernel is the reference
    monkeypatch.setattr(tuning._Case, "fixed_ready", lambda self: True)  # compiled by the run's first epoch
    chosen, times, default_ms, _ = tuning._tune_one(task, 1, np.random.default_rng(0), True, budget_s=1.0)
    assert Variant(kernel="fixed").label in times and default_ms == times[Variant(kernel="fixed").label]
    result = tuning.tune_keys([task, tuning.TuneTask(g.view(), "unweighted", "sum", 2, "float32")], budget_s=1.0)
    assert result.narrow and tuning_cache.lookup(g.signature(), "forward")[("unweighted", "sum", 2, "float32")] == \
        Variant(kernel="fixed")  # a narrow path is cached as its own untuned default
