"""``gnnbench run --repeat N`` as a user meets it: a line per process, their spread, a row each (Note [repetitions]).

Workers are replaced by a fake ``run_task`` that returns fixed rows, so the rendered text is exact.
"""
from __future__ import annotations

import json

import pytest

from gnnbench.cli import main
from gnnbench.cli.run import summary
from gnnbench.results.store import ResultsStore
from gnnbench.run import runner
from gnnbench.run.record import BAD_INPUT
from gnnbench.run.runner import failure_row
from gnnbench.run.sweep import identity, provenance

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"
RUN = ["run", "--system", "reference", "--model", "gcn", "--dataset", TINY, "--epochs", "6"]
WHAT = "reference gcn on sbm:classes=2,degree=4,features=8,nodes=200,p_in=0.8,seed=0"  # the canonical name


def _fake_workers(monkeypatch, outcomes: list) -> list:
    """Each started worker takes the next outcome: a median in ms (its epochs 1 % either side), or a status."""
    started: list = []

    def run_task(spec, isolate=True, on_event=None, **_kw):
        assert isolate  # every repetition is its own worker process
        outcome = outcomes[len(started)]
        started.append(spec)
        if outcome == "bad input":
            return failure_row(spec, "failed", "no such file", extra={BAD_INPUT: True})
        if isinstance(outcome, str):
            return failure_row(spec, outcome, "worker died from signal SIGSEGV")
        times = [outcome / 1e3 * f for f in (0.99, 1.0, 1.01)]
        return {**identity(spec), "status": "ok", "epoch_times": times, "epoch_time_median_s": outcome / 1e3}

    monkeypatch.setattr(runner, "run_task", run_task)
    return started


def _stored(db) -> list[dict]:
    with ResultsStore(db) as store:
        return store.rows()


def test_each_process_prints_its_line_then_the_spread_over_processes(monkeypatch, capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    started = _fake_workers(monkeypatch, [10.0, 11.0, 12.0])
    assert main(RUN + ["--repeat", "3", "--results", str(db)]) == 0
    assert capsys.readouterr().out == (
        "process 1/3: epoch 10.00 ms median, IQR 0.10 ms (stored as run 1)\n"
        "process 2/3: epoch 11.00 ms median, IQR 0.11 ms (stored as run 2)\n"
        "process 3/3: epoch 12.00 ms median, IQR 0.12 ms (stored as run 3)\n"
        f"{WHAT}: epoch 11.00 ms median of 3 process medians, min-max 10.00-12.00 ms, "
        "spread 9.1% (stdev/mean of process medians)\n")
    rows = _stored(db)
    assert len(started) == 3 and len({provenance(r) for r in rows}) == 1  # one configuration, three rows
    assert {r["seed"] for r in rows} == {0}  # seeds unchanged: the noise between processes, not seeds


def test_a_failed_process_keeps_the_others_rows_flags_the_spread_and_exits_1(monkeypatch, capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    _fake_workers(monkeypatch, [10.0, "crashed", 14.0])
    assert main(RUN + ["--repeat", "3", "--results", str(db)]) == 1
    out, err = capsys.readouterr()
    assert out == (
        "process 1/3: epoch 10.00 ms median, IQR 0.10 ms (stored as run 1)\n"
        "process 2/3: crashed: worker died from signal SIGSEGV (stored as run 2)\n"
        "process 3/3: epoch 14.00 ms median, IQR 0.14 ms (stored as run 3)\n"
        f"{WHAT}: epoch 12.00 ms median of 2 process medians (1 of 3 processes did not succeed), "
        "min-max 10.00-14.00 ms, spread 23.6% (stdev/mean of process medians) (! unstable: above 10%)\n")
    assert err == "stderr stored with run 2 (`gnnbench results --json`)\n"
    assert [r["status"] for r in _stored(db)] == ["ok", "crashed", "ok"]


def test_one_successful_process_has_no_spread_and_none_says_so(monkeypatch, capsys, tmp_path):
    _fake_workers(monkeypatch, ["timeout", 10.0, "oom", "crashed"])
    assert main(RUN + ["--repeat", "2", "--no-store"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"{WHAT}: epoch 10.00 ms median of 1 process median (1 of 2 processes did not succeed), "
        "min-max 10.00-10.00 ms, spread between processes needs two that succeeded")
    assert main(RUN + ["--repeat", "2", "--no-store"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == f"{WHAT}: none of 2 processes succeeded"


def test_json_prints_one_row_per_line_and_no_summary(monkeypatch, capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    _fake_workers(monkeypatch, [10.0, 11.0])
    assert main(RUN + ["--repeat", "2", "--json", "--results", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [(r["id"], r["status"], r["epoch_time_median_s"]) for r in rows] == [(1, "ok", 0.010), (2, "ok", 0.011)]


def test_bad_input_found_by_a_later_worker_keeps_the_rows_before_it(monkeypatch, capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    _fake_workers(monkeypatch, [10.0, "bad input", 12.0])
    assert main(RUN + ["--repeat", "3", "--results", str(db)]) == 2
    out, err = capsys.readouterr()
    assert out == "process 1/3: epoch 10.00 ms median, IQR 0.10 ms (stored as run 1)\n"
    assert err == "gnnbench run: no such file\n"
    assert [r["status"] for r in _stored(db)] == ["ok"]


def test_without_repeat_the_output_is_the_one_summary(monkeypatch, capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    _fake_workers(monkeypatch, ["crashed"])
    assert main(RUN + ["--results", str(db)]) == 1
    out, err = capsys.readouterr()
    row = _stored(db)[0]
    assert out == summary(row) + "\n" and out.startswith(f"{WHAT}: crashed: worker died")
    assert err == "stderr stored with run 1 (`gnnbench results --json`)\n"


@pytest.mark.parametrize("extra,message", [
    (["--repeat", "0"], "gnnbench run: --repeat must be an integer in [1, 10000] (got 0)"),
    (["--repeat", "x"], "gnnbench run: --repeat must be an integer in [1, 10000] (got 'x')"),
    (["--repeat", "-2"], "gnnbench run: --repeat must be an integer in [1, 10000] (got '-2')"),
    (["--repeat", "10001"], "gnnbench run: --repeat must be an integer in [1, 10000] (got 10001)"),
    (["--repeat", "3", "--in-process"],
     "gnnbench run: --repeat runs each repetition in its own worker process; drop --in-process"),
])
def test_a_bad_repeat_is_one_line_and_status_2_before_any_worker(extra, message, monkeypatch, capsys, tmp_path):
    started = _fake_workers(monkeypatch, [])
    assert main(RUN + extra + ["--results", str(tmp_path / "new" / "r.sqlite")]) == 2
    assert capsys.readouterr().err == message + "\n"
    assert started == [] and not (tmp_path / "new").exists()
