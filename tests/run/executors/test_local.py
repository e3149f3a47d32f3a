"""Tests of gnnbench.run.executors.local: one run after another, tasks pulled lazily, limits passed on."""
from __future__ import annotations

from types import SimpleNamespace

from gnnbench.run.executors import LocalExecutor, get_executor


def _task(name: str, timeout_s=None, memory=None):
    return SimpleNamespace(config=name, timeout_s=timeout_s, memory_limit_bytes=memory)


def test_runs_each_task_with_its_limits_and_yields_its_row():
    calls = []

    def runner(config, timeout_s, memory_limit_bytes):
        calls.append((config, timeout_s, memory_limit_bytes))
        return {"status": "ok", "system": config}

    tasks = [_task("a", 5, 1 << 30), _task("b")]
    with LocalExecutor(runner) as executor:
        out = list(executor.run(tasks))
    assert [(t.config, row["system"]) for t, row in out] == [("a", "a"), ("b", "b")]
    assert calls == [("a", 5, 1 << 30), ("b", None, None)]


def test_tasks_are_pulled_only_when_the_previous_run_has_finished():
    order = []

    def tasks():
        for name in ("a", "b"):
            order.append(f"pull {name}")
            yield _task(name)

    def runner(config, **_):
        order.append(f"run {config}")
        return {"status": "ok"}

    for task, _ in LocalExecutor(runner).run(tasks()):
        order.append(f"got {task.config}")
    assert order == ["pull a", "run a", "got a", "pull b", "run b", "got b"]


def test_get_executor_names_the_local_one():
    executor = get_executor("local")
    assert isinstance(executor, LocalExecutor) and executor.name == "local" and executor.sequential


def test_each_run_gets_the_event_callback_made_for_its_task():
    seen = []

    def runner(config, timeout_s, memory_limit_bytes, on_event):
        on_event(f"epoch of {config}")
        return {"status": "ok"}

    executor = LocalExecutor(runner, run_events=lambda task: lambda event: seen.append((task.config, event)))
    list(executor.run([_task("a"), _task("b")]))
    assert seen == [("a", "epoch of a"), ("b", "epoch of b")]
