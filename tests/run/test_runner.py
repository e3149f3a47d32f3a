"""Tests of gnnbench.run.runner and gnnbench.run.record: process groups, exit statuses, one row shape for every outcome.

A stand-in worker (a shell or Python one-liner in place of ``python -m gnnbench.run.worker``) plays each
misbehaviour, so these tests start no training.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gnnbench.run import runner
from gnnbench.run.config import RunConfig
from gnnbench.run.record import run_record
from gnnbench.results.store import RUN_FIELDS, STATUSES

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"


@pytest.fixture
def config() -> RunConfig:
    return RunConfig("reference", "gcn", TINY, epochs=3, warmup=1, allocator="system")


@pytest.fixture
def logs(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("GNNBENCH_LOGS", str(tmp_path / "logs"))
    return tmp_path / "logs"


def _worker(monkeypatch, *command: str) -> None:
    monkeypatch.setattr(runner, "worker_command", lambda spec, result: list(command))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie is dead, waiting for a parent that is not us


def test_a_timeout_kills_the_whole_process_group(config, monkeypatch, tmp_path, logs):
    pidfile = tmp_path / "child.pid"
    _worker(monkeypatch, "sh", "-c", f"sleep 300 & echo $! > {pidfile}; echo started >&2; sleep 300")
    row = runner.run_task(config.replace(timeout=1))
    assert row["status"] == "timeout" and row["error"] == "run exceeded its time limit of 1 s"
    assert not _alive(int(pidfile.read_text()))  # the kernel's helper process did not survive
    assert Path(row["extra"]["stderr_path"]).read_text() == "started\n"


def test_sigkill_is_recorded_as_a_crash_with_its_signal_not_as_oom(config, monkeypatch, logs):
    _worker(monkeypatch, sys.executable, "-c",
            "import os, signal, sys; print('about to die', file=sys.stderr, flush=True); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    row = runner.run_task(config)
    assert row["status"] == "crashed" and "SIGKILL" in row["error"]
    assert row["stderr"] == "about to die\n"


def test_memory_error_under_the_limit_is_oom(config, monkeypatch, logs):
    _worker(monkeypatch, sys.executable, "-c", "raise MemoryError")
    row = runner.run_task(config.replace(memory_limit="1G"))
    assert row["status"] == "oom" and "1073741824 bytes" in row["error"]


def test_the_memory_limit_and_config_reach_the_worker(config, monkeypatch, tmp_path, logs):
    copy = tmp_path / "spec.json"
    monkeypatch.setattr(runner, "worker_command", lambda spec, result: ["cp", str(spec), str(copy)])
    runner.run_task(config.replace(memory_limit="2G"))
    sent = json.loads(copy.read_text())
    assert sent["memory_limit"] == 2 << 30 and RunConfig.from_dict(sent) == config.replace(memory_limit="2G")


def test_every_outcome_has_the_same_columns_dataset_and_hyperparameter_shape(config):
    from gnnbench.run.harness import resolve_hyperparameters, stored_hyperparameters

    rows = [run_record(config, status, error="why", stderr="trace") for status in STATUSES]
    columns = {f.name for f in RUN_FIELDS} - {"id"}
    hyper = json.loads(json.dumps(stored_hyperparameters(config, resolve_hyperparameters(config)[1])))
    for row in rows:
        assert set(row) == columns
        assert row["dataset"] == "sbm:classes=2,degree=4,features=8,nodes=200,p_in=0.8,seed=0"
        assert row["hyperparameters"] == hyper and row["timestamp"]
    assert rows[0]["error"] is None and all(r["error"] == "why" for r in rows[1:])


def test_a_crashed_run_prints_its_stderr_tail_and_where_the_rest_is(config, monkeypatch, tmp_path, logs, capsys):
    from gnnbench.cli import main
    from gnnbench.results.store import ResultsStore

    _worker(monkeypatch, sys.executable, "-c",
            "import sys\nfor i in range(30): print(f'line {i}', file=sys.stderr)\nsys.exit(3)")
    db = tmp_path / "r.sqlite"
    assert main(["run", "--system", "reference", "--model", "gcn", "--dataset", TINY, "--epochs", "3",
                 "--warmup", "1", "--allocator", "system", "--results", str(db)]) == 1
    out, err = capsys.readouterr()
    assert "crashed: worker exited with status 3 (stored as run 1)" in out
    lines = err.splitlines()
    assert lines[0] == "last 12 lines of the worker's stderr:" and lines[-2] == "  | line 29"
    where = lines[-1].removeprefix("whole stderr: ")
    assert Path(where).read_text().count("\n") == 30
    with ResultsStore(db) as store:
        assert store.get(1)["extra"]["stderr_path"] == where


def test_a_row_the_store_refuses_at_the_end_is_saved_as_json(config, monkeypatch, tmp_path, capsys):
    import sqlite3

    from gnnbench.cli import main
    from gnnbench.results.store import ResultsStore

    measured = run_record(config, "ok", measured={"epoch_time_median_s": 0.5})
    monkeypatch.setattr(runner, "run_task", lambda spec, isolate=True, on_event=None: dict(measured))

    def refuse(self, row):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(ResultsStore, "insert", refuse)
    db = tmp_path / "r.sqlite"
    assert main(["run", "--system", "reference", "--model", "gcn", "--dataset", TINY, "--epochs", "3",
                 "--warmup", "1", "--allocator", "system", "--results", str(db), "--json"]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"gnnbench run: could not store the row in {db} (disk I/O error); it is saved in ")
    saved = json.loads(Path(err.rsplit(" ", 1)[1]).read_text())
    assert saved["epoch_time_median_s"] == 0.5 and saved["dataset"] == config.dataset
