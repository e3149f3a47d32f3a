"""The executor protocol shared by the local and the Ray executor."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["Executor"]


class Executor:
    """Runs sweep tasks and yields ``(task, row)`` pairs as runs finish; never raises for a failing run.

    A task is anything with ``config`` (:class:`~gnnbench.run.harness.RunConfig`),
    ``timeout_s`` and ``memory_limit_bytes``. ``sequential`` executors pull
    the next task only when they start it, so the sweep can re-check the store
    first and report the configuration in progress.
    """

    name = "base"
    sequential = True

    def run(self, tasks: Iterable[Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor holds (a Ray connection); safe to call twice."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
