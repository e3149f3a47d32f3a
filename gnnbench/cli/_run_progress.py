"""The display of one run's progress events: a transient per-epoch bar on a terminal, nothing elsewhere.

``gnnbench run`` and ``gnnbench sweep`` hand the callback of :func:`run_progress`
(or :class:`RunBar` on a bar they already draw) to
:func:`gnnbench.run.runner.run_task`, which feeds it the worker's
:class:`~gnnbench.run.events.RunEvent`\\ s (Note [progress channel]). Off a
terminal nothing extra is printed: logs and pipes see the same text as before.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

from gnnbench.run.events import RunEvent
from gnnbench.text import printable

__all__ = ["RunBar", "run_progress", "phase_text"]


def phase_text(event: RunEvent) -> str | None:
    """What a run is doing, in words (``None`` for a log line, which is shown as it is)."""
    if event.kind == "prepare":
        return "preparing"
    if event.kind == "tune":
        return f"tuning on first use ({printable(event.text)})" if event.text else "tuning on first use"
    if event.kind == "epoch":
        if event.step <= event.warmup:
            return f"warm-up {event.step}/{event.warmup}"
        return f"epoch {event.step - event.warmup}/{event.total - event.warmup}"
    return None


class RunBar:
    """Draws one run's events on a :class:`gnnbench.progress.Progress`.

    Args:
        bar (Progress): where to draw.
        title (str): what runs, e.g. ``isplib gcn sbm torch seed=0``.
        count (bool): move the bar's count with the epochs (default: True; a sweep's bar counts runs instead).
    """

    def __init__(self, bar, title: str, count: bool = True):
        self.bar, self.title, self.count = bar, printable(title), count

    def __call__(self, event: RunEvent) -> None:
        text = phase_text(event)
        if text is None:
            self.bar.log(printable(event.text))
            return
        if self.count and event.kind == "epoch":
            self.bar.update(event.step, event.total)
        self.bar.describe(f"{self.title}: {text}")


@contextmanager
def run_progress(title: str, stream: IO[str] | None = None) -> Iterator[Callable[[RunEvent], None] | None]:
    """A transient per-epoch bar for one run on ``stream`` (default: stderr) when it is a terminal, else ``None``."""
    from gnnbench.progress import progress

    stream = sys.stderr if stream is None else stream
    if not getattr(stream, "isatty", lambda: False)():
        yield None
        return
    with progress(None, f"{printable(title)}: starting", stream=stream, transient=True) as bar:
        yield RunBar(bar, title)
