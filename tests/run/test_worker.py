"""Tests of gnnbench.run.worker, the isolated run's entry point, called in this process (no subprocess)."""
from __future__ import annotations

import json
import os

import pytest

from gnnbench.run import worker
from gnnbench.run.config import RunConfig
from gnnbench.run.events import EVENTS_FD_ENV, RunEvent

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"


@pytest.fixture(autouse=True)
def _no_parent_death_signal(monkeypatch):
    monkeypatch.setattr(worker, "die_with_parent", lambda: None)  # would bind pytest's life to its parent


def _run(tmp_path, config: RunConfig) -> dict:
    config_file, result = tmp_path / "config.json", tmp_path / "result.json"
    config_file.write_text(json.dumps({**config.as_dict(), "memory_limit": None}))
    assert worker.main([str(config_file), str(result)]) == 0
    assert not (tmp_path / "result.json.tmp").exists()  # written whole, then renamed
    return json.loads(result.read_text())


def test_a_run_writes_its_row_and_sends_its_events(tmp_path, monkeypatch):
    read, write = os.pipe()
    monkeypatch.setenv(EVENTS_FD_ENV, str(write))
    row = _run(tmp_path, RunConfig("reference", "gcn", TINY, epochs=3, warmup=1))
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        events = [RunEvent.from_line(line) for line in pipe]
    assert row["status"] == "ok" and len(row["epoch_times"]) == 2
    assert events == [RunEvent("prepare")] + [RunEvent("epoch", i, 3, 1) for i in (1, 2, 3)]


def test_bad_input_is_a_failed_row_of_one_line_without_a_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(EVENTS_FD_ENV, raising=False)
    row = _run(tmp_path, RunConfig("reference", "gcn", TINY, epochs=3, warmup=1, system_options=(("aggr", "x"),)))
    assert row["status"] == "failed" and row["error"] == "system 'reference' takes no options (got aggr)"
    assert row["extra"] == {"bad_input": True} and row["stderr"] is None  # Note [bad input in a worker]
    assert "Traceback" not in capsys.readouterr().err


def test_an_unexpected_error_propagates_with_its_traceback_and_writes_no_row(tmp_path, monkeypatch):
    def broken(config, on_event=None):
        raise RuntimeError("a kernel bug")

    monkeypatch.setattr("gnnbench.run.harness.train", broken)
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps({**RunConfig("reference", "gcn", TINY, epochs=3, warmup=1).as_dict(),
                                       "memory_limit": None}))
    with pytest.raises(RuntimeError, match="a kernel bug"):  # the parent stores it as crashed, with the traceback
        worker.main([str(config_file), str(tmp_path / "result.json")])
    assert not (tmp_path / "result.json").exists()


def test_a_missing_operator_is_a_skip(tmp_path, monkeypatch):
    from gnnbench.errors import UnavailableError

    def unavailable(config, on_event=None):
        raise UnavailableError("system 'x' does not implement gat_aggregate\nmore detail")

    monkeypatch.setattr("gnnbench.run.harness.train", unavailable)
    row = _run(tmp_path, RunConfig("reference", "gat", TINY, epochs=3, warmup=1))
    assert row["status"] == "skipped" and row["error"] == "system 'x' does not implement gat_aggregate"
