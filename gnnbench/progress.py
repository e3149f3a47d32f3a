"""Progress on stderr through rich: a live bar on a terminal, plain lines (or nothing) elsewhere.

:func:`progress` is the one progress display of gnnbench (sweeps, tuning,
benchmarks, per-epoch training). On a terminal it draws a rich bar with the
count, elapsed time and estimated time left, and :meth:`Progress.log` prints
lines above it; when stderr is a file or a pipe nothing is redrawn: ``log``
lines are written plainly and the bar itself is silent (``plain_steps=True``
also writes one line per step, for long sweeps whose log should show each run).
stdout is never touched, so ``--json`` output stays machine-readable.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

__all__ = ["Progress", "progress"]


class Progress:
    """A running progress display; made by :func:`progress`."""

    def __init__(self, total: int | None, description: str, stream: IO[str], plain_steps: bool,
                 transient: bool):
        self.total, self.description, self.stream = total, description, stream
        self.done = 0
        self.plain_steps = plain_steps
        self._rich: Any = None
        self._task: Any = None
        if getattr(stream, "isatty", lambda: False)():
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._rich = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                                      console=Console(file=stream), transient=transient)
            self._task = self._rich.add_task(description, total=total)

    @property
    def live(self) -> bool:
        """Whether a bar is drawn (stderr is a terminal)."""
        return self._rich is not None

    def advance(self, step: int = 1, description: str | None = None) -> None:
        """Counts ``step`` more items done; ``description`` replaces the text shown beside the bar."""
        self.done += step
        if description is not None:
            self.description = description
        if self._rich is not None:
            self._rich.update(self._task, advance=step, description=self.description)
        elif self.plain_steps:
            count = f"[{self.done}/{self.total}]" if self.total else f"[{self.done}]"
            self._write(f"{count} {self.description}")

    def update(self, done: int, total: int | None = None) -> None:
        """Sets the count to ``done`` (and the whole to ``total`` when given) without a step line:
        steps finished elsewhere (another sweep), or a total known only once work starts."""
        self.done = done
        if total is not None:
            self.total = total
        if self._rich is not None:
            self._rich.update(self._task, completed=done, **({"total": total} if total is not None else {}))

    def describe(self, description: str) -> None:
        """Changes the text beside the bar (what is running now) without counting a step."""
        self.description = description
        if self._rich is not None:
            self._rich.update(self._task, description=description)

    def log(self, line: str) -> None:
        """A line that stays: above the bar on a terminal, plain elsewhere (not parsed as rich markup)."""
        if self._rich is not None:
            self._rich.console.print(line, markup=False, highlight=False)
        else:
            self._write(line)

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()


@contextmanager
def progress(total: int | None, description: str = "", *, stream: IO[str] | None = None,
             plain_steps: bool = False, transient: bool = False) -> Iterator[Progress]:
    """A progress display for ``total`` steps (``None``: unknown) on ``stream`` (default: stderr).

    Args:
        total (int, optional): how many steps make the whole.
        description (str): the text beside the bar (default: none).
        stream (file): where to draw (default: ``sys.stderr``).
        plain_steps (bool): off a terminal, write one line per step (default: False).
        transient (bool): remove the bar when done, e.g. per-epoch bars (default: False).

    Example::

        with progress(len(tasks), "sweep") as bar:
            for task in tasks:
                bar.describe(task.describe())
                row = run(task)
                bar.advance()
                if row["status"] != "ok":
                    bar.log(f"{row['status']} {task.describe()}: {row['error']}")
    """
    bar = Progress(total, description, sys.stderr if stream is None else stream, plain_steps, transient)
    if bar._rich is not None:
        with bar._rich:
            yield bar
    else:
        yield bar
