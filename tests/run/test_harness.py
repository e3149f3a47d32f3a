"""The training loop: timing phases from a fake clock, fairness of initialisation, learning."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.cli.run import summary
from gnnbench.run.harness import RunConfig, train
from gnnbench.models import MODELS

#: the homogeneous models (the relational ones train on typed datasets: tests/relational)
HOMOGENEOUS = [name for name, cls in MODELS.items() if not cls.typed]

TINY = "sbm:nodes=400,classes=3,features=16,degree=8,seed=1"


class MockClock:
    """Deterministic time: prepare takes 0.25 s; epoch e spends 10+e%3 ms forward, 20 ms backward, 2 ms step."""

    def __init__(self):
        self.values = [0.0, 0.25]
        base = 1.0
        for e in range(100):
            t1 = base + 0.010 + 0.001 * (e % 3)
            self.values += [base, t1, t1 + 0.020, t1 + 0.022]
            base = t1 + 1.0
        self.values.reverse()

    def __call__(self) -> float:
        return self.values.pop()


def test_phases_come_from_the_clock_and_warmups_are_excluded():
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=12, warmup=3), clock=MockClock())
    assert len(row["epoch_times"]) == 9 and row["epochs"] == 12
    assert row["forward_times"] == pytest.approx([0.010, 0.011, 0.012] * 3)
    assert row["forward_median_s"] == pytest.approx(0.011)
    assert row["backward_median_s"] == pytest.approx(0.020)
    assert row["optimizer_median_s"] == pytest.approx(0.002)
    assert row["epoch_time_median_s"] == pytest.approx(0.033)
    assert row["epoch_time_iqr_s"] == pytest.approx(0.002)
    assert row["prepare_time_s"] == pytest.approx(0.25)
    lines = summary({**row, "verified": "passed"}).splitlines()
    assert lines[1] == "  epoch      33.00 ms median, IQR 2.00 ms over 9 timed epochs (3 warm-up excluded)"
    assert lines[2] == "  phases     forward 11.00 ms, backward 20.00 ms, optimizer 2.00 ms"
    assert lines[3].startswith("  kernels    ") and "inside reference's kernels; spmm_sum" in lines[3]  # real clock
    assert lines[4].startswith("  spmm       spmm_sum ") and " GB/s" in lines[4]  # Note [spmm figures]
    assert lines[5] == "  prepare    250.0 ms (apart from epochs)"


def test_the_row_records_how_much_of_the_process_ran_on_huge_pages():
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=4, warmup=1))
    assert isinstance(row["extra"]["huge_page_bytes"], int)  # Linux: /proc/self/smaps_rollup
    shown = {**row, "allocator": "tcmalloc", "peak_memory_bytes": 2**21,
             "extra": {**row["extra"], "huge_page_bytes": 545 * 2**20, "held_bytes": None}}
    assert ("  memory     2.0 MiB peak above the pre-training baseline "
            "(tcmalloc allocator; 545 MiB of the process on huge pages)") in summary(shown).splitlines()


def test_the_row_says_how_much_of_its_peak_the_loop_still_held_after_the_epochs():
    """Note [peak memory]: on a small graph the peak is mostly one-time start-up, which the row shows."""
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=4, warmup=1))
    assert isinstance(row["extra"]["held_bytes"], int) and row["extra"]["held_bytes"] <= row["peak_memory_bytes"]
    shown = {**row, "allocator": "tcmalloc", "peak_memory_bytes": 106.3 * 2**20,
             "extra": {**row["extra"], "huge_page_bytes": 0, "held_bytes": 104.0 * 2**20}}
    assert ("  memory     106.3 MiB peak above the pre-training baseline, 104.0 MiB of it held after the epochs "
            "(tcmalloc allocator; 0 MiB of the process on huge pages)") in summary(shown).splitlines()


@pytest.mark.parametrize("has_work", [False, True])
def test_memory_is_released_around_tuning_only_when_something_is_tuned(monkeypatch, has_work):
    """Note [tune on first use]: a release makes the next epoch fault its pages in again, so a run that finds
    its tuning cache full must not pay for it; one that tunes is measured from what was resident before."""
    from types import SimpleNamespace

    from gnnbench.run import tuning as first_use

    events, resident = [], iter([100, 130])
    monkeypatch.setattr(first_use, "_release", lambda: events.append("release"))
    monkeypatch.setattr(first_use, "_reset_peak", lambda: events.append("reset peak"))
    monkeypatch.setattr(first_use, "_resident_bytes", lambda: next(resident))

    class Result:
        def as_dict(self):
            return {}

    def tuner(graph, views, budget_s, progress, starting):
        if not has_work:
            return None
        starting()
        events.append("tune")
        return Result()

    tuning = first_use.FirstUseTuning(tuner, SimpleNamespace(graph="g", view=lambda transposed: transposed), 200, {},
                                      lambda event: None, warmup=2)
    tuning.watch(SimpleNamespace(peak_above_baseline=lambda: 70))
    for epoch in range(3):
        tuning.after_epoch(epoch, 0.5)
    if has_work:
        assert events == ["release", "tune", "release", "reset peak"]
        assert (tuning.peak_before, tuning.residue) == (70, 30) and tuning.seconds is not None
    else:
        assert events == [] and (tuning.peak_before, tuning.residue, tuning.seconds) == (0, 0, None)


@pytest.mark.parametrize("system", ["reference", "pyg-native"])
def test_preparation_runs_without_numpy_huge_page_advice(monkeypatch, system):
    """Note [huge pages outside the epochs]: prepare's freed NumPy scratch must not leave 2 MiB pages to the epochs."""
    import gnnbench.peers
    import gnnbench.runtime.glue

    switch = np._core.multiarray._set_madvise_hugepage
    seen = []

    def advice_inside(prepare):
        def watched(*args, **kwargs):
            current = switch(True)
            switch(current)
            seen.append(current)
            return prepare(*args, **kwargs)
        return watched

    monkeypatch.setattr(gnnbench.runtime.glue.BoundGraph, "prepare",
                        advice_inside(gnnbench.runtime.glue.BoundGraph.prepare))
    monkeypatch.setattr(gnnbench.peers, "build_native", advice_inside(gnnbench.peers.build_native))
    before = switch(True)
    try:
        train(RunConfig(system=system, model="gcn", dataset=TINY, epochs=2, warmup=1))
        assert seen == [False] and switch(True) is True  # off inside, restored after
    finally:
        switch(before)


def test_an_inference_run_is_rendered_in_passes():
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=12, warmup=3), clock=MockClock())
    inference = {**row, "verified": "passed", "hyperparameters": {**row["hyperparameters"], "mode": "inference"},
                 "backward_median_s": None}
    lines = summary(inference).splitlines()
    assert lines[1] == "  pass       33.00 ms median, IQR 2.00 ms over 9 timed passes (3 warm-up excluded)"
    assert lines[2] == "  mode       inference: forward passes only, without autograd"
    assert "% of the pass) inside reference's kernels" in lines[3]


def test_jit_compilation_in_prepare_is_reported_apart_from_it(monkeypatch):
    # Note [compile time apart]: a cold numba cache's compilation is the install's cost, not the graph's
    import gnnbench.run.harness as harness

    class Compiled:
        def __init__(self, clock):
            self.seconds = 0.1

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    monkeypatch.setattr(harness, "CompileClock", Compiled)
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=4, warmup=1), clock=MockClock())
    assert row["prepare_time_s"] == pytest.approx(0.15) and row["extra"]["compile_time_s"] == 0.1
    lines = summary({**row, "verified": "passed"}).splitlines()
    assert lines[5] == "  prepare    150.0 ms (apart from epochs); JIT compilation 0.10 s, once per machine (apart)"


@pytest.mark.parametrize("model", sorted(HOMOGENEOUS))
def test_initial_parameters_depend_only_on_the_seed(model):
    cls = MODELS[model]
    a, b = cls(8, 3).init_params(5), cls(8, 3).init_params(5)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    c = cls(8, 3).init_params(6)
    assert any(not np.array_equal(a[k], c[k]) for k in a if a[k].any())


@pytest.mark.parametrize("model", sorted(HOMOGENEOUS))
def test_every_model_learns_well_above_chance(model):
    row = train(RunConfig(system="reference", model=model, dataset=TINY, epochs=60, warmup=2))
    assert row["status"] == "ok"
    assert row["final_loss"] < row["first_loss"]
    assert row["test_accuracy"] > 0.6  # three classes: chance is 0.33
    assert row["peak_memory_bytes"] >= 0 and row["prepare_time_s"] >= 0


def test_run_row_records_provenance():
    row = train(RunConfig(system="reference", model="sage", dataset=TINY, epochs=6, warmup=1, seed=3))
    assert row["system_hash"] and row["git_commit"] and row["cpu_model"]
    assert row["machine"]["libraries"]["torch"].startswith("2.13")
    assert row["hyperparameters"]["hidden"] == 64 and row["seed"] == 3
    assert row["dataset"] == "sbm:classes=3,degree=8,features=16,nodes=400,p_in=0.8,seed=1"


def test_epochs_must_exceed_warmup():
    from gnnbench.errors import UserError

    with pytest.raises(UserError, match=r"--epochs \(3\) must exceed --warmup \(5\)"):
        train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=3, warmup=5))
