"""Tests of gnnbench.run.runner and gnnbench.run.record: process groups, exit statuses, one row shape for every outcome.

A stand-in worker (a shell or Python one-liner in place of ``python -m gnnbench.run.worker``) plays each
misbehaviour, so these tests start no training.
"""
from __future__ import annotations

import json
import os
import sys
import time
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
    monkeypatch.setattr(runner, "worker_command", lambda config, result: list(command))


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
    helper = int(pidfile.read_text())
    deadline = time.monotonic() + 10  # SIGKILL to the group is sent; the kernel reaps on its own time, under load
    while _alive(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(helper)  # the kernel's helper process did not survive
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


def test_torch_refusing_a_tensor_is_oom_with_the_size_it_asked_for(config, monkeypatch, logs):
    # how pyg-native fails on a graph whose message tensor (edges x features floats) the machine cannot hold
    _worker(monkeypatch, sys.executable, "-c",
            "raise RuntimeError(\"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't "
            "allocate memory: you tried to allocate 32768000000 bytes. Error code 12 (Cannot allocate memory)\")")
    row = runner.run_task(config)
    assert row["status"] == "oom"
    assert row["error"] == "worker ran out of memory: torch's CPU allocator refused 32,768,000,000 bytes"


def test_an_uncaught_exception_names_itself_in_the_error(config, monkeypatch, logs):
    _worker(monkeypatch, sys.executable, "-c",
            "import sys; print('warming up', file=sys.stderr)\n"
            "try:\n    raise KeyError('inner')\nexcept KeyError:\n    raise ValueError('boom\\x1b[31m')")
    row = runner.run_task(config)
    assert row["status"] == "crashed"
    assert row["error"] == "worker exited with status 1: ValueError: boom\\x1b[31m"  # the last exception, escaped


def test_the_memory_limit_and_config_reach_the_worker(config, monkeypatch, tmp_path, logs):
    copy = tmp_path / "config.json"
    monkeypatch.setattr(runner, "worker_command", lambda config_file, result: ["cp", str(config_file), str(copy)])
    runner.run_task(config.replace(memory_limit="2G"))
    sent = json.loads(copy.read_text())
    assert sent["memory_limit"] == 2 << 30 and RunConfig.from_dict(sent) == config.replace(memory_limit="2G")


def test_every_outcome_has_the_same_columns_dataset_and_hyperparameter_shape(config):
    from gnnbench.run.resolved import resolve_hyperparameters, stored_hyperparameters

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
    monkeypatch.setattr(runner, "run_task", lambda config, isolate=True, on_event=None: dict(measured))

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


# ------------------------------------------------------------- progress channel (Note [progress channel])
_SEND = ("import json, os, signal, sys\n"
         "fd = int(os.environ['GNNBENCH_EVENTS_FD'])\n"
         "send = lambda line: os.write(fd, line.encode() + b'\\n')\n")


def _event_worker(monkeypatch, body: str) -> None:
    monkeypatch.setattr(runner, "worker_command",
                        lambda config, result: [sys.executable, "-c", _SEND + body, str(result)])


def test_events_reach_the_parent_in_order_and_garbage_is_ignored(config, monkeypatch, logs):
    from gnnbench.run.events import RunEvent

    row = run_record(config, "ok", measured={"epoch_time_median_s": 0.5})
    _event_worker(monkeypatch, "send('{\"kind\": \"prepare\"}')\n"
                               "send('garbage from a library that found the descriptor')\n"
                               "send('{\"kind\": \"epoch\", \"step\": 1, \"total\": 3, \"warmup\": 1}')\n"
                               "send('{\"kind\": \"epoch\", \"step\": \"two\"}')\n"
                               "send('{\"kind\": \"log\", \"text\": \"tuned\"}')\n"
                               f"open(sys.argv[1], 'w').write({json.dumps(json.dumps(row))})\n")
    events = []
    got = runner.run_task(config, on_event=events.append)
    assert got == {**row, "extra": {"process_start": "fresh"}}  # Note [cheap processes]
    assert events == [RunEvent("prepare"), RunEvent("epoch", 1, 3, 1), RunEvent("log", text="tuned")]


def test_a_worker_killed_mid_run_still_gives_its_error_row(config, monkeypatch, logs):
    from gnnbench.run.events import RunEvent

    _event_worker(monkeypatch, "send('{\"kind\": \"epoch\", \"step\": 1, \"total\": 3}')\n"
                               "os.write(fd, b'{\"kind\": \"epo')\n"  # cut off mid-line
                               "os.kill(os.getpid(), signal.SIGKILL)\n")
    events = []
    row = runner.run_task(config, on_event=events.append)
    assert row["status"] == "crashed" and "SIGKILL" in row["error"]
    assert events == [RunEvent("epoch", 1, 3)]


def test_a_display_that_raises_costs_the_run_nothing(config, monkeypatch, logs):
    row = run_record(config, "ok", measured={"epoch_time_median_s": 0.5})
    _event_worker(monkeypatch, "send('{\"kind\": \"prepare\"}')\n"
                               f"open(sys.argv[1], 'w').write({json.dumps(json.dumps(row))})\n")

    def broken(event):
        raise OSError("the terminal is gone")

    assert runner.run_task(config, on_event=broken) == {**row, "extra": {"process_start": "fresh"}}


def test_a_process_outside_the_group_holding_the_pipe_cannot_hang_the_parent(config, monkeypatch, tmp_path, logs):
    import os
    import signal

    pidfile = tmp_path / "escaped.pid"
    row = run_record(config, "ok", measured={"epoch_time_median_s": 0.5})
    _event_worker(monkeypatch, "import subprocess\n"
                               "p = subprocess.Popen(['sleep', '60'], pass_fds=(fd,), start_new_session=True)\n"
                               f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
                               f"open(sys.argv[1], 'w').write({json.dumps(json.dumps(row))})\n")
    try:
        # it returns after READER_GRACE_S
        assert runner.run_task(config, on_event=lambda event: None) == {**row, "extra": {"process_start": "fresh"}}
    finally:
        os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_without_a_display_the_worker_gets_no_pipe(config, monkeypatch, tmp_path, logs):
    seen = tmp_path / "env"
    _worker(monkeypatch, "sh", "-c", f"echo \"${{GNNBENCH_EVENTS_FD-unset}}\" > {seen}; exit 3")
    assert runner.run_task(config)["status"] == "crashed"
    assert seen.read_text() == "unset\n"


def test_a_new_run_removes_the_folders_of_killed_runs_only(tmp_path, monkeypatch):
    import subprocess
    import sys
    import tempfile

    from gnnbench.run.scratch import remove_stale_run_folders, run_folder

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # SIGKILLed or not, its process is gone now
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    killed, older, other = (tmp_path / f"gnnbench-run-{child.pid}-x1", tmp_path / "gnnbench-run-ab12",
                            tmp_path / "someone-else")
    live = tmp_path / f"gnnbench-run-{os.getppid()}-y2"
    for folder in (killed, older, other, live):
        (folder / "config.json").parent.mkdir()
        (folder / "config.json").write_text("{}")
    with run_folder() as mine:
        assert Path(mine).name.startswith(f"gnnbench-run-{os.getpid()}-")
        assert remove_stale_run_folders(tmp_path) == []  # its own folder is not stale
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (older, other, live))
