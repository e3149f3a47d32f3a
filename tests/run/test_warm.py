"""Forked measurement processes from a warm parent (gnnbench/run/warm.py, Note [cheap processes]).

One warm parent serves the module's tests (its start imports torch); the broken systems of
``tests/sweep_systems`` play each way a child can end badly.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from gnnbench.run.config import RunConfig
from gnnbench.run.events import RunEvent
from gnnbench.run.harness import train
from gnnbench.run.warm import ForkUnsafe, WarmParent, process_settings

SWEEP_SYSTEMS = Path(__file__).resolve().parents[1] / "sweep_systems"
TINY = "sbm:nodes=200,classes=2,features=8,degree=4"
GIB = 1 << 30


def _config(system: str = "reference", **kw) -> RunConfig:
    return RunConfig(system, "gcn", TINY, epochs=3, warmup=1, threads=1, allocator="system", **kw)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _gone(pids: list[int], within_s: float = 10.0) -> bool:
    """Whether every process of ``pids`` has ended within ``within_s`` (a death signal is not instant)."""
    import time

    deadline = time.monotonic() + within_s
    while any(_alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def parent(tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GNNBENCH_SYSTEMS_PATH", str(SWEEP_SYSTEMS))
        mp.setenv("GNNBENCH_LOGS", str(logs))
        configs = [_config(s) for s in ("reference", "segfaulter", "memhog", "hanger")]
        with WarmParent(configs) as warm:
            yield warm


def test_a_forked_row_has_the_shape_of_a_fresh_one_and_says_how_it_started(parent):
    events: list[RunEvent] = []
    row = parent.run(_config(), on_event=events.append)
    assert row["status"] == "ok", row["error"]
    in_process = train(_config())
    assert set(row) == set(in_process)
    assert set(row["extra"]) - set(in_process["extra"]) == {"process_start", "warm_parent"}
    assert row["extra"]["process_start"] == "fork" and row["extra"]["warm_parent"] == parent.id
    # the child's pools, sized in the child as a worker's (Note [thread pools])
    assert row["extra"]["thread_pools"] == {
        "threads": 1, "numba_layer": "workqueue", "numba_threads": 1, "omp_wait_policy": "PASSIVE", "torch_threads": 1,
        "torch_interop_threads": 1}
    assert events == [RunEvent("prepare")] + [RunEvent("epoch", i, 3, 1) for i in (1, 2, 3)]
    assert parent.run(_config())["extra"]["warm_parent"] == parent.id  # one parent serves many runs


def test_a_segfault_is_a_crashed_row_and_the_parent_serves_on(parent):
    pid = parent.pid
    row = parent.run(_config("segfaulter"))
    assert row["status"] == "crashed" and row["error"] == "worker died from signal SIGSEGV"
    assert row["extra"]["process_start"] == "fork" and Path(row["extra"]["stderr_path"]).exists()
    assert parent.pid == pid and parent.run(_config())["status"] == "ok"


def test_a_child_over_its_memory_limit_is_an_oom_row(parent):
    row = parent.run(_config("memhog", memory_limit=4 * GIB))
    assert row["status"] == "oom" and "MemoryError" in row["error"]


def test_a_timeout_kills_the_child_and_its_group_and_the_parent_serves_on(parent):
    row = parent.run(_config("hanger"), timeout_s=3)
    assert row["status"] == "timeout" and row["error"] == "run exceeded its time limit of 3 s"
    assert _children_of(parent.pid) == []  # reaped: nothing of the run is left
    assert parent.run(_config())["status"] == "ok"


def test_bad_input_is_the_one_line_failed_row_a_fresh_worker_writes(parent):
    row = parent.run(_config(system_options=(("aggr", "x"),)))
    assert row["status"] == "failed" and row["error"] == "system 'reference' takes no options (got aggr)"
    assert row["extra"] == {"bad_input": True, "process_start": "fork", "warm_parent": parent.id}
    assert row["stderr"] is None


def test_a_parent_that_died_is_started_again_for_the_next_run(parent):
    old_id, old_pid = parent.id, parent.pid
    os.kill(old_pid, signal.SIGKILL)  # between runs: the next run is not lost
    row = parent.run(_config())
    assert row["status"] == "ok" and parent.id != old_id and parent.pid != old_pid


def test_a_parent_killed_mid_run_takes_its_child_along_and_the_row_says_so(parent):
    """PR_SET_PDEATHSIG: the child dies with its parent, which dies with the caller; nothing is left behind."""
    import threading

    pid, ident = parent.pid, parent.id
    children: list[int] = []

    def kill_parent_once_its_child_runs():
        import time

        for _ in range(200):
            children.extend(_children_of(pid))
            if children:
                break
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_parent_once_its_child_runs)
    killer.start()
    row = parent.run(_config("hanger"), timeout_s=60)
    killer.join()
    assert row["status"] == "crashed" and row["error"].startswith("the warm parent died during the run")
    assert row["extra"]["process_start"] == "fork" and row["extra"]["warm_parent"] == ident
    assert children and _gone(children)
    assert parent.run(_config())["status"] == "ok"  # a fresh parent serves the next run


def test_leaving_ends_the_parent_and_its_spare_and_leaves_no_process_behind(monkeypatch):
    """Note [a spare parent]: the next parent prepares while one serves, and renewing serves from it."""
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(SWEEP_SYSTEMS))
    with WarmParent([_config("hanger")], spare=True) as warm:
        pid, spare = warm.pid, warm._spare.proc.pid
        assert warm.run(_config("hanger"), timeout_s=1)["status"] == "timeout"
        first = warm.id
        warm.renew()  # a fresh parent: a new layout for the next round
        assert warm.id != first and warm.pid == spare and not _alive(pid) and warm.starts == 2
        pid, spare = warm.pid, warm._spare.proc.pid
        assert _alive(spare)
    assert not _alive(pid) and not _alive(spare) and warm.pid is None


def test_configurations_one_process_cannot_share_are_refused():
    with pytest.raises(ValueError, match="must share threads"):
        process_settings([_config(), _config().replace(threads=2)])
    assert process_settings([_config(cpus="0"), _config(cpus="1")]) == (1, "system", None)  # each child pins itself
    with pytest.raises(ValueError, match="this warm parent runs threads=1"):
        WarmParent([_config()]).run(_config().replace(threads=2))


def test_a_parent_with_a_started_pool_refuses_to_fork(monkeypatch):
    """Note [cheap processes]: a pool started before the fork would be inherited without its workers."""
    from gnnbench.run import warm

    monkeypatch.setattr("gnnbench.run.thread_pools.numba_pool_started", lambda: False)
    monkeypatch.setattr(warm, "_threads_now", lambda: 99)
    assert warm._unsafe(1).startswith("the warm parent runs 98 thread(s) beyond its start")
    assert ForkUnsafe.__mro__[1] is RuntimeError
    monkeypatch.setattr("gnnbench.run.thread_pools.numba_pool_started", lambda: True)
    assert warm._unsafe(99) == "the warm parent started numba's thread pool before forking"


def test_measurement_processes_gives_one_callable_for_either_start(monkeypatch):
    from gnnbench.run import runner
    from gnnbench.run.warm import measurement_processes

    with measurement_processes("fresh", [_config()]) as run:
        assert run is runner.run_task
    with pytest.raises(ValueError, match="process start must be one of fresh, fork"):
        with measurement_processes("spawn", [_config()]):
            pass


def test_a_parent_that_cannot_prepare_is_an_error_naming_its_last_words(monkeypatch):
    monkeypatch.setattr("sys.executable", "/bin/sh")  # `sh -m gnnbench.run.warm ...`: sh says why it cannot
    said = r"^the warm parent exited while preparing: .*cannot open gnnbench\.run\.warm"
    with pytest.raises(RuntimeError, match=said):
        with WarmParent([_config()], spare=True):
            pass
