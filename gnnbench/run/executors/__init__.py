"""Executors: where the configurations of a sweep run.

An executor takes tasks (anything with ``config``, ``timeout_s`` and
``memory_limit_bytes``, in practice :class:`gnnbench.run.sweep.Task`) and yields
``(task, row)`` pairs as runs finish; the sweep stamps and stores the rows.
It never raises for a failing run: a crash, an out-of-memory or a timeout
comes back as a row whose ``status`` says so.

- ``local`` (:class:`LocalExecutor`): one run at a time on this machine, each
  in a fresh process (:func:`gnnbench.run.runner.run_task`).
- ``ray`` (:class:`RayExecutor`): one Ray task per run on an existing Ray
  cluster; see Note [ray executor] in :mod:`gnnbench.run.executors.ray_executor`.
"""
from __future__ import annotations

from gnnbench.errors import UserError

from gnnbench.run.executors.base import Executor
from gnnbench.run.executors.local import LocalExecutor
from gnnbench.run.executors.ray_executor import RayExecutor

__all__ = ["Executor", "LocalExecutor", "RayExecutor", "EXECUTORS", "get_executor"]

EXECUTORS = ("local", "ray")


def get_executor(name: str, address: str | None = None) -> Executor:
    """The executor called ``name``; ``address`` is the Ray cluster (ignored by ``local``)."""
    if name == "local":
        return LocalExecutor()
    if name == "ray":
        return RayExecutor(address=address)
    raise UserError(f"unknown executor '{name}'; choose one of: {', '.join(EXECUTORS)}")
