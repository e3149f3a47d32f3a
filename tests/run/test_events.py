"""Tests of gnnbench.run.events: the progress events of a run and the pipe that carries them."""
from __future__ import annotations

import os

import pytest

from gnnbench.run.events import EVENTS_FD_ENV, MAX_LINE, PIPE_BUF_SAFE, EventReader, RunEvent, event_pipe


def test_an_event_round_trips_through_one_line():
    event = RunEvent("epoch", 3, 200, 5)
    line = event.to_line()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert RunEvent.from_line(line) == event


@pytest.mark.parametrize("char", ["x", "\u00e9", "\U0001f600"])
def test_a_long_log_line_is_cut_so_that_a_write_stays_atomic(char):
    line = RunEvent("log", text=char * 10_000).to_line()
    assert len(line) < PIPE_BUF_SAFE and RunEvent.from_line(line).text.startswith(char * 100)


@pytest.mark.parametrize("line", [b"", b"garbage", b"[1, 2]", b'{"kind": "explode"}', b'{"kind": "epoch", "step": -1}',
                                  b'{"kind": "epoch", "step": "3"}', b'{"kind": "epoch", "step": true}',
                                  b'{"kind": "log", "text": 7}', b"\xff\xfe"])
def test_a_line_that_is_not_an_event_reads_as_none(line):
    assert RunEvent.from_line(line) is None


def _send(*chunks: bytes, on_event=None) -> tuple[list[RunEvent], EventReader]:
    read, write = os.pipe()
    got: list[RunEvent] = []
    with EventReader(read, on_event or got.append) as reader:
        for chunk in chunks:
            os.write(write, chunk)
        os.close(write)
        reader._thread.join(5)
    assert not reader._thread.is_alive()
    return got, reader


def test_the_reader_passes_events_in_order_and_ignores_garbage():
    got, reader = _send(RunEvent("prepare").to_line(), b"not json\n", RunEvent("epoch", 1, 3).to_line()[:7],
                        RunEvent("epoch", 1, 3).to_line()[7:] + b"\n\n", RunEvent("log", text="tuned").to_line(),
                        b'{"kind": "epoch"')  # cut off by the worker's death: never delivered
    assert got == [RunEvent("prepare"), RunEvent("epoch", 1, 3), RunEvent("log", text="tuned")]
    assert reader.ignored == 1


def test_an_endless_line_is_dropped_without_losing_the_next_event():
    got, reader = _send(b"x" * (3 * MAX_LINE), b"\n", RunEvent("epoch", 2, 3).to_line())
    assert got == [RunEvent("epoch", 2, 3)] and reader.ignored >= 1


def test_a_display_that_raises_is_switched_off_and_reading_goes_on():
    calls = []

    def broken(event):
        calls.append(event)
        raise RuntimeError("terminal went away")

    got, reader = _send(RunEvent("prepare").to_line(), RunEvent("epoch", 1, 2).to_line(), on_event=broken)
    assert calls == [RunEvent("prepare")] and not reader._thread.is_alive()


def test_the_worker_end_sends_events_and_keeps_log_lines_on_stderr(monkeypatch, capsys):
    read, write = os.pipe()
    monkeypatch.setenv(EVENTS_FD_ENV, str(write))
    report = event_pipe()
    assert EVENTS_FD_ENV not in os.environ and not os.get_inheritable(write)
    report(RunEvent("prepare"))
    report(RunEvent("log", text="isplib: tuning 1/2"))
    os.close(write)
    report(RunEvent("epoch", 1, 2))  # the pipe is closed: dropped, and sending stops
    assert os.read(read, 4096).splitlines() == [RunEvent("prepare").to_line().strip(),
                                                RunEvent("log", text="isplib: tuning 1/2").to_line().strip()]
    os.close(read)
    assert capsys.readouterr().err == "isplib: tuning 1/2\n"


def test_a_full_pipe_drops_events_instead_of_stalling_the_run(monkeypatch):
    read, write = os.pipe()
    monkeypatch.setenv(EVENTS_FD_ENV, str(write))
    report = event_pipe()
    for step in range(100_000):  # far more than a pipe's buffer; nobody reads
        report(RunEvent("epoch", step, 100_000))
    os.close(write)
    os.close(read)


def test_without_a_pipe_only_log_lines_are_printed(monkeypatch, capsys):
    monkeypatch.delenv(EVENTS_FD_ENV, raising=False)
    report = event_pipe()
    report(RunEvent("epoch", 1, 2))
    report(RunEvent("log", text="tuned in 0.29 s"))
    assert capsys.readouterr().err == "tuned in 0.29 s\n"


class _CountingClock:
    """A fake clock that counts its readings, so an event can say where in the epoch it was sent."""

    def __init__(self):
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.reads * 0.001


@pytest.mark.parametrize("mode", ["train", "inference"])
def test_the_harness_reports_each_epoch_after_its_last_clock_reading(mode):
    """Note [progress outside the timer]: prepare's event before its clock starts, an epoch's after it stops."""
    from gnnbench.run.harness import RunConfig, train

    clock, seen = _CountingClock(), []
    row = train(RunConfig(system="reference", model="gcn", dataset="sbm:nodes=200,classes=2,features=8,degree=4",
                         epochs=5, warmup=2, mode=mode), clock=clock, on_event=lambda e: seen.append((e, clock.reads)))
    per_epoch = 4 if mode == "train" else 2  # t0..t3 (forward, backward, step) or t0, t1 (a pass)
    assert seen == [(RunEvent("prepare"), 0)] + [(RunEvent("epoch", i, 5, 2), 2 + per_epoch * i) for i in range(1, 6)]
    assert len(row["epoch_times"]) == 3


def test_tuning_reports_its_budget_and_the_tuner_lines(monkeypatch):
    from types import SimpleNamespace

    from gnnbench.run.tuning import FirstUseTuning

    monkeypatch.setenv("GNNBENCH_TUNE_BUDGET_S", "2")

    class Result:
        def as_dict(self):
            return {"chosen": "u4"}

    def tuner(graph, views, budget_s, progress, starting):
        starting()
        progress("isplib: tuning 1/1 forward:sum:16")
        return Result()

    bound = SimpleNamespace(graph="g", view=lambda transposed: transposed)
    seen, extra = [], {}
    FirstUseTuning(tuner, bound, 200, extra, seen.append, warmup=1).after_epoch(0, 0.01)
    assert [(e.kind, e.text) for e in seen[:2]] == [("tune", "budget 2.0 s"), ("log", "isplib: tuning 1/1 forward:sum:16")]
    assert seen[2].kind == "log" and seen[2].text.startswith("tuned in ") and extra["tuning"] == {"chosen": "u4"}


def _numpy_hugepage_advice() -> bool:
    import numpy as np

    switch = np._core.multiarray._set_madvise_hugepage
    current = switch(True)
    switch(current)
    return current


def test_tuning_runs_without_numpy_huge_page_advice_and_restores_it():
    """Note [allocator]: a tuner's freed NumPy arrays must not leave 2 MiB pages for the epochs' tensors."""
    from types import SimpleNamespace

    from gnnbench.run.tuning import FirstUseTuning

    advised = []

    def tuner(graph, views, budget_s, progress, starting):
        advised.append(_numpy_hugepage_advice())
        raise RuntimeError("a tuner that fails")

    before = _numpy_hugepage_advice()
    bound = SimpleNamespace(graph="g", view=lambda transposed: transposed)
    with pytest.raises(RuntimeError):
        FirstUseTuning(tuner, bound, 200, {}, lambda event: None, warmup=1).after_epoch(0, 0.01)
    assert advised == [False] and _numpy_hugepage_advice() is before


@pytest.mark.parametrize("warmup, epoch_times, tuned_after, budget_from, timed", [
    (5, [3.0, 0.5, 0.6], 1, 0.5, False),  # a slow first epoch does not size the budget
    (5, [0.5, 3.0, 0.6], 1, 0.5, False),
    (1, [3.0, 0.5, 0.6], 0, 3.0, False),  # the second epoch is timed: tune before it
    (0, [3.0, 0.5, 0.6], 0, 3.0, True),
])
def test_tuning_waits_for_a_steady_epoch_while_epochs_are_warm_ups(monkeypatch, warmup, epoch_times, tuned_after,
                                                                    budget_from, timed):
    from types import SimpleNamespace

    from gnnbench.run.tuning import FirstUseTuning, tune_budget_s

    monkeypatch.delenv("GNNBENCH_TUNE_BUDGET_S", raising=False)
    budgets = []

    class Result:
        def as_dict(self):
            return {}

    def tuner(graph, views, budget_s, progress, starting):
        starting()
        budgets.append((len(seen_epochs), budget_s))
        return Result()

    bound = SimpleNamespace(graph="g", view=lambda transposed: transposed)
    extra: dict = {}
    tuning = FirstUseTuning(tuner, bound, 200, extra, lambda event: None, warmup=warmup)
    seen_epochs = []
    for i, seconds in enumerate(epoch_times):
        seen_epochs.append(i)
        tuning.after_epoch(i, seconds)
    assert budgets == [(tuned_after + 1, tune_budget_s(budget_from, 200))]
    assert extra.get("tuned_after_timed_epoch", False) is timed
