"""The local executor: configurations one after another, each in its own process.

One at a time, because concurrent runs on one machine would share cores and
memory bandwidth and distort each other's timings. Isolation, the time limit
and the memory limit are :func:`gnnbench.run.runner.run_task`'s: the worker
applies ``RLIMIT_AS`` and a crash, a signal or a timeout becomes a row with
status ``crashed``, ``oom``, ``timeout`` or ``failed`` and the worker's stderr.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from gnnbench.run.executors.base import Executor

__all__ = ["LocalExecutor"]


class LocalExecutor(Executor):
    """Runs each task with :func:`~gnnbench.run.runner.run_task` in a fresh subprocess.

    Args:
        runner (callable, optional): ``runner(config, timeout_s=..., memory_limit_bytes=...) -> row``
            (default: :func:`gnnbench.run.runner.run_task`; tests pass a fake).
        run_events (callable, optional): ``run_events(task)`` gives the callback that receives that
            run's progress events, or None (default: no events; Note [progress channel] in
            :mod:`gnnbench.run.events`).
    """

    name = "local"
    sequential = True

    def __init__(self, runner: Callable[..., dict[str, Any]] | None = None,
                 run_events: Callable[[Any], Callable[..., None] | None] | None = None):
        self._runner = runner
        self._run_events = run_events

    def run(self, tasks: Iterable[Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
        runner = self._runner
        if runner is None:
            from gnnbench.run.runner import run_task as runner
        for task in tasks:  # pulled lazily: the sweep re-checks the store before each one
            on_event = self._run_events(task) if self._run_events is not None else None
            events = {} if on_event is None else {"on_event": on_event}
            yield task, runner(task.config, timeout_s=task.timeout_s, memory_limit_bytes=task.memory_limit_bytes,
                               **events)
