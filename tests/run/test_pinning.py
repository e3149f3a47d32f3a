"""``--cpus``: a run's process pinned to chosen CPUs (Note [pinned runs] in gnnbench/run/pinning.py)."""
from __future__ import annotations

import json
import os

import pytest

from gnnbench.errors import UserError
from gnnbench.run import pinning, worker
from gnnbench.run.config import RunConfig, make_config
from gnnbench.run.preflight import check
from gnnbench.run.resolved import resolve_hyperparameters, stored_hyperparameters
from gnnbench.run.sweep import campaign_from_mapping

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"


def _config(**values):
    return make_config({"system": "reference", "model": "gcn", "dataset": TINY, "epochs": 3, "warmup": 1, **values})


def test_a_cpu_list_is_stored_in_its_shortest_form_and_threads_follow_it():
    assert _config(cpus=" 3,0-2").cpus == "0-3"
    assert _config(cpus="1").threads == 1 and _config(cpus="0,2").threads == 2
    assert _config(cpus="0-3", threads=2).threads == 2  # fewer threads than CPUs: the user's choice
    assert _config().cpus is None and _config().threads is None  # unpinned: the libraries' own pools


@pytest.mark.parametrize("cpus, message", [
    ("a", "--cpus must be a CPU list such as 1, 0-3 or 0,2 (got 'a'; 'a' is not a CPU or a range)"),
    ("3-1", "--cpus must be a CPU list such as 1, 0-3 or 0,2 (got '3-1'; the range '3-1' runs backwards)"),
    ("1,,2", "--cpus must be a CPU list such as 1, 0-3 or 0,2 (got '1,,2'; '' is not a CPU or a range)"),
    (" ", "--cpus must name at least one CPU, e.g. 1 or 0-3 (got ' ')"),
    ("１", "--cpus must be a CPU list such as 1, 0-3 or 0,2 (got '１'; '１' is not a CPU or a range)"),
])
def test_a_bad_list_is_one_line_naming_the_piece(cpus, message):
    with pytest.raises(UserError) as err:
        _config(cpus=cpus)
    assert str(err.value) == message


def test_more_threads_than_pinned_cpus_is_refused():
    with pytest.raises(UserError) as err:
        _config(cpus="1", threads=2)
    assert str(err.value) == ("--threads 2 with --cpus 1: 2 threads on 1 CPU would only take turns; pin as many "
                              "CPUs as threads")


def test_a_cpu_this_process_may_not_use_is_refused_before_any_worker(monkeypatch):
    monkeypatch.setattr(pinning.os, "sched_getaffinity", lambda pid: {0, 1})
    with pytest.raises(UserError) as err:
        check(_config(cpus="1-3"))
    assert str(err.value) == "--cpus 1-3: CPU 2-3 is not one this process may use (allowed: 0-1; see `gnnbench machine`)"
    check(_config(cpus="1"))


def test_an_in_process_run_cannot_be_pinned():
    with pytest.raises(UserError, match=r"^--cpus 0 needs an isolated run: pinning an --in-process run would pin "
                                        r"this process for good"):
        check(_config(cpus="0"), isolate=False)


def test_pin_sets_the_affinity_and_a_refusal_is_one_line(monkeypatch):
    calls = []
    monkeypatch.setattr(pinning.os, "sched_setaffinity", lambda pid, cpus: calls.append((pid, frozenset(cpus))))
    pinning.pin(None)
    pinning.pin("0-1")
    assert calls == [(0, frozenset({0, 1}))]

    def refuse(pid, cpus):
        raise OSError(22, "Invalid argument")
    monkeypatch.setattr(pinning.os, "sched_setaffinity", refuse)
    with pytest.raises(UserError, match=r"^--cpus 7: cannot pin the run to these CPUs \(Invalid argument\)$"):
        pinning.pin("7")


def test_the_request_is_stored_only_when_pinned():
    plain, pinned = _config(), _config(cpus="0")
    assert "cpus" not in stored_hyperparameters(plain, resolve_hyperparameters(plain)[1])  # old rows keep identity
    assert stored_hyperparameters(pinned, resolve_hyperparameters(pinned)[1])["cpus"] == "0"


def test_the_worker_pins_itself_before_training(tmp_path, monkeypatch):
    monkeypatch.setattr(worker, "die_with_parent", lambda: None)
    order = []
    monkeypatch.setattr(pinning, "pin", lambda cpus: order.append(("pin", cpus)))
    import gnnbench.run.harness as harness
    monkeypatch.setattr(harness, "train", lambda config, on_event=None: order.append(("train", config.cpus)) or {})
    config_file, result = tmp_path / "config.json", tmp_path / "result.json"
    config_file.write_text(json.dumps({**_config(cpus="0").as_dict(), "memory_limit": None}))
    assert worker.main([str(config_file), str(result)]) == 0
    assert order == [("pin", "0"), ("train", "0")]


def test_a_campaign_can_pin_its_runs():
    campaign = campaign_from_mapping({"systems": ["reference"], "models": ["gcn"], "datasets": [TINY], "epochs": 3,
                                      "cpus": "0", "threads": 1})
    assert {c.cpus for m in campaign.matrices for c in m.configs} == {"0"}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning to one of several CPUs needs two allowed CPUs")
def test_an_isolated_pinned_run_records_the_cpu_it_ran_on(tmp_path):
    from gnnbench.run.runner import run_task

    cpu = max(os.sched_getaffinity(0))
    row = run_task(RunConfig("reference", "gcn", TINY, epochs=3, warmup=1, cpus=str(cpu)))
    assert row["status"] == "ok", row.get("error")
    assert row["machine_state"]["cpus_allowed"] == str(cpu) and row["threads"] == 1
    assert row["hyperparameters"]["cpus"] == str(cpu)
