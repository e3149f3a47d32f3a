"""Progress events of one run, and the pipe that carries them from a worker to its parent.

The harness reports where a run is (:class:`RunEvent`: preparing, tuning, epoch
``i`` of ``n``, a tuner's line) through a callback. In a worker
(:mod:`gnnbench.run.worker`) that callback writes each event as one JSON line
to a pipe the parent opened (:func:`event_pipe`); the parent reads it in a
thread (:class:`EventReader`) and hands the events to a display, while the
result still comes back in its file (:mod:`gnnbench.run.runner`).

Note [progress channel]
    The channel is best effort and can never cost a run its result:
    - the worker's end is non-blocking: a parent that does not read makes the
      worker drop events, never wait (a run is never stalled by its display);
    - each line is shorter than ``PIPE_BUF`` (4096 bytes), so a write is atomic
      and lines of different events never interleave;
    - the parent ignores a line that is not a well-formed event (a library
      that writes to the inherited descriptor, a truncated write) and a line
      longer than :data:`MAX_LINE` without a newline;
    - a display that raises is switched off for the rest of the run; the
      run goes on;
    - the reader thread is a daemon and the parent waits for it only
      :data:`READER_GRACE_S` after the worker exits, so a straggler holding the
      write end (a helper process outside the worker's group) cannot hang it.
    The worker learns the descriptor from ``$GNNBENCH_EVENTS_FD``; without it
    (an in-process run, a worker started by hand) nothing is sent.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass

__all__ = ["RunEvent", "KINDS", "EventReader", "event_pipe", "stderr_lines", "EVENTS_FD_ENV"]

#: What a run is doing: preparing the system's graph formats, tuning on first use, an epoch just ended, a log line.
KINDS = ("prepare", "tune", "epoch", "log")
EVENTS_FD_ENV = "GNNBENCH_EVENTS_FD"
MAX_TEXT = 500    # characters of a log line sent: with \uXXXX escapes, a line stays under PIPE_BUF_SAFE
PIPE_BUF_SAFE = 4096  # POSIX guarantees atomic pipe writes of at most PIPE_BUF bytes, which is at least 512 (4096 on Linux)
MAX_LINE = 4096   # bytes the reader buffers without a newline before dropping them
READER_GRACE_S = 1.0


@dataclass(frozen=True)
class RunEvent:
    """One progress event of a run.

    Args:
        kind (str): one of :data:`KINDS`.
        step (int): for ``epoch``, how many epochs (warm-ups included) have ended (default: 0).
        total (int): for ``epoch``, the epochs of the run, warm-ups included (default: 0).
        warmup (int): for ``epoch``, how many of them are warm-ups (default: 0).
        text (str): for ``log``, the line; for ``tune``, what is tuned and its budget (default: "").
    """

    kind: str
    step: int = 0
    total: int = 0
    warmup: int = 0
    text: str = ""

    def to_line(self) -> bytes:
        """One JSON line, shorter than ``PIPE_BUF`` (Note [progress channel])."""
        event = asdict(self)
        event["text"] = self.text[:MAX_TEXT]
        line = (json.dumps(event, ensure_ascii=True) + "\n").encode()
        while len(line) >= PIPE_BUF_SAFE:  # characters outside the BMP escape to 12 bytes each
            event["text"] = event["text"][:len(event["text"]) // 2]
            line = (json.dumps(event, ensure_ascii=True) + "\n").encode()
        return line

    @classmethod
    def from_line(cls, line: bytes | str) -> RunEvent | None:
        """The event a line holds, or None when the line is not a well-formed event."""
        try:
            data = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            return None
        ints = [data.get(name, 0) for name in ("step", "total", "warmup")]
        text = data.get("text", "")
        if not all(type(v) is int and v >= 0 for v in ints) or not isinstance(text, str):
            return None
        return cls(data["kind"], *ints, text=text[:MAX_TEXT])


def stderr_lines(event: RunEvent) -> None:
    """The reporter of a run with no display: a tuner's lines go to stderr, as they always did."""
    if event.kind == "log":
        print(event.text, file=sys.stderr, flush=True)


def event_pipe() -> Callable[[RunEvent], None]:
    """The worker's reporter: :func:`stderr_lines`, and each event to ``$GNNBENCH_EVENTS_FD`` if set.

    The stderr copy keeps the tuner's lines in the run's log; the pipe feeds the
    parent's display (Note [progress channel]).
    """
    raw = os.environ.pop(EVENTS_FD_ENV, None)
    try:
        fd = int(raw) if raw is not None else None
        if fd is not None:
            os.set_blocking(fd, False)
            os.set_inheritable(fd, False)  # a kernel's helper process must not hold the parent's reader open
    except (ValueError, OSError):
        fd = None
    if fd is None:
        return stderr_lines

    def report(event: RunEvent) -> None:
        nonlocal fd
        stderr_lines(event)
        if fd is None:
            return
        try:
            os.write(fd, event.to_line())
        except BlockingIOError:  # the parent is not reading: drop the event, never wait
            pass
        except OSError:          # the parent is gone or closed its end: stop sending
            fd = None

    return report


class EventReader:
    """Reads events from the read end ``fd`` of a pipe in a daemon thread and calls ``on_event`` with each.

    Use as a context manager around the worker's lifetime; leaving it waits at
    most :data:`READER_GRACE_S` for the last events (Note [progress channel]).
    """

    def __init__(self, fd: int, on_event: Callable[[RunEvent], None]):
        self.fd, self.on_event = fd, on_event
        self.ignored = 0   # lines that were not events
        self._thread = threading.Thread(target=self._read, name="gnnbench-run-events", daemon=True)

    def __enter__(self) -> EventReader:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._thread.join(READER_GRACE_S)

    def _read(self) -> None:
        pending = b""
        display = self.on_event
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    return
                *lines, pending = (pending + chunk).split(b"\n")
                if len(pending) > MAX_LINE:
                    pending, self.ignored = b"", self.ignored + 1
                for line in lines:
                    event = RunEvent.from_line(line) if line.strip() else None
                    if event is None:
                        self.ignored += bool(line.strip())
                    elif display is not None:
                        try:
                            display(event)
                        except Exception:  # a broken display never costs the run (Note [progress channel])
                            display = None
        except OSError:
            return
        finally:
            os.close(self.fd)
