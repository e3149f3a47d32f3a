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
        runner (callable, optional): ``runner(spec, timeout_s=..., memory_limit_bytes=...) -> row``
            (default: :func:`gnnbench.run.runner.run_task`; tests pass a fake).
    """

    name = "local"
    sequential = True

    def __init__(self, runner: Callable[..., dict[str, Any]] | None = None):
        self._runner = runner

    def run(self, tasks: Iterable[Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
        runner = self._runner
        if runner is None:
            from gnnbench.run.runner import run_task as runner
        for task in tasks:  # pulled lazily: the sweep re-checks the store before each one
            yield task, runner(task.spec, timeout_s=task.timeout_s, memory_limit_bytes=task.memory_limit_bytes)
