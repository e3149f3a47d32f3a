"""Run a task in a fresh process, so that memory peaks and JIT state never bleed between runs.

The parent writes the :class:`~gnnbench.run.config.RunConfig` to a temp JSON
file, starts ``python -m gnnbench.run.worker CONFIG RESULT``, and reads the row
back from the result file (asv ``runner.py``). A crash, a signal, an
out-of-memory error or a timeout becomes a row with its own status
(:func:`gnnbench.run.record.run_record`), with the worker's stderr kept.

Note [process group]
    Each worker starts in a session of its own, so it leads a new process
    group. On a timeout the whole group is killed (a kernel's helper process
    must not outlive its run), and after a normal exit any straggler left in
    the group is killed too. The worker's stderr goes to a log file, never a
    pipe, so a straggler holding it open cannot keep the parent waiting; the
    file is kept for runs that did not succeed and its path is in the row
    (``extra.stderr_path``). Progress events, when the caller wants them, come
    on a pipe of their own (Note [progress channel] in
    :mod:`gnnbench.run.events`), never mixed with the result or the log.

Note [exit statuses]
    The status says what happened, not a guess: ``oom`` only when the worker
    reported running out of memory (a ``MemoryError`` or ``std::bad_alloc``,
    which is how the address-space limit shows, or torch's CPU allocator
    refusing a tensor, which is how a machine too small for the graph shows:
    a full-graph message tensor of edges x features floats, for one); a
    SIGKILL from outside (the kernel's OOM killer, a user, a scheduler) is
    ``crashed`` with the signal named; any other signal or exit status is
    ``crashed`` with it named. When the worker died of an exception, its
    last line (``RuntimeError: ...``) follows in ``error``, so a table's list
    of unsuccessful runs says why without the reader opening the log.

Note [bad input in a worker]
    Some bad input shows only inside the worker: a Planetoid dataset that is
    downloaded on first use and cannot be, a raw file that turns out
    unreadable. The worker then writes a ``failed`` row with the
    :class:`~gnnbench.errors.UserError`'s one line as ``error``, no traceback
    (an expected failure, not a bug) and ``extra.bad_input`` true
    (:func:`~gnnbench.run.record.bad_input_error`), and no log is kept.
    ``gnnbench run`` raises it again in the parent: one line, exit status 2,
    nothing stored, as the same error does in an ``--in-process`` run or in
    the preflight checks. A sweep stores it as that cell's failed row and goes
    on (fault isolation). An :class:`~gnnbench.errors.UnavailableError` (the
    model needs an operator the system lacks) stays a ``skipped`` row, and any
    other exception a ``crashed`` one with its traceback.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gnnbench.run.allocator import resolve_allocator
from gnnbench.run.events import EVENTS_FD_ENV, EventReader, RunEvent
from gnnbench.run.harness import RunConfig, train
from gnnbench.run.record import bad_input_error, run_record
from gnnbench.run.scratch import run_folder
from gnnbench.run.thread_pools import pool_environment
from gnnbench.results.store import utc_now

__all__ = ["run_task", "failure_row", "worker_env", "log_dir", "stderr_tail", "kill_group", "write_config", "Outcome",
           "outcome_row", "reading_events", "CONFIG_LIMIT"]

#: the default of a limit argument: the config's own ``timeout`` or ``memory_limit``
CONFIG_LIMIT: Any = object()


def worker_env(threads: int | None, allocator: str = "auto") -> dict[str, str]:
    """The environment of a worker: thread pools configured before any library starts them (Note [thread
    pools] in :mod:`gnnbench.run.thread_pools`), and the memory allocator preloaded (Note [allocator] in
    :mod:`gnnbench.run.allocator`).

    Raises:
        UserError: ``allocator`` is unknown or not installed on this machine.
    """
    return pool_environment(threads, resolve_allocator(allocator).environment(dict(os.environ)))


def log_dir() -> Path:
    """Where the stderr of unsuccessful runs is kept: ``$GNNBENCH_LOGS``, else ``<cache>/logs``."""
    env = os.environ.get("GNNBENCH_LOGS")
    if env:
        return Path(env)
    from gnnbench.places import cache_root

    return cache_root() / "logs"


def failure_row(config: RunConfig, status: str, error: str, stderr: str = "", timestamp: str | None = None,
                extra: dict | None = None) -> dict[str, Any]:
    """The row of a run that produced no measurement (see :func:`~gnnbench.run.record.run_record`)."""
    return run_record(config, status, error=error, stderr=stderr, timestamp=timestamp, extra=extra)


def stderr_tail(text: str | None, lines: int = 12) -> list[str]:
    """The last ``lines`` non-empty lines of a worker's stderr, sanitised for a terminal."""
    from gnnbench.text import printable

    kept = [line for line in (text or "").splitlines() if line.strip()]
    return [printable(line) for line in kept[-lines:]]


#: torch's CPU allocator refusing a tensor (c10/core/impl/alloc_cpu.cpp), with the size it asked for
_TORCH_REFUSED = re.compile(r"DefaultCPUAllocator: (?:can't allocate memory|not enough memory): "
                            r"you tried to allocate (\d+) bytes")


def _exception_line(stderr: str) -> str | None:
    """The last line of the last Python traceback in a worker's stderr (``RuntimeError: ...``), sanitised and
    cut to 300 characters; None when the worker printed no traceback."""
    from gnnbench.text import printable

    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last):")]
    if not starts:
        return None
    unindented = [line for line in lines[starts[-1] + 1:] if line.strip() and not line[0].isspace()]
    return printable(unindented[-1])[:300] if unindented else None


def _describe_exit(code: int, stderr: str, memory_limit: int | None) -> tuple[str, str]:
    """Note [exit statuses]."""
    if "MemoryError" in stderr or ("std::bad_alloc" in stderr and memory_limit):
        limit = f" under the memory limit of {memory_limit} bytes" if memory_limit else ""
        return "oom", f"worker ran out of memory (MemoryError){limit}"
    refused = _TORCH_REFUSED.search(stderr)
    if refused:
        return "oom", f"worker ran out of memory: torch's CPU allocator refused {int(refused[1]):,} bytes"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGKILL:
            return "crashed", (f"worker killed by {name} from outside (the kernel's out-of-memory killer, "
                               f"a user or a scheduler)")
        return "crashed", f"worker died from signal {name}"
    raised = _exception_line(stderr)
    return "crashed", f"worker exited with status {code}" + (f": {raised}" if raised else "")


def kill_group(pid: int) -> None:
    """Kill the process group ``pid`` leads, stragglers and all (Note [process group]); nothing if it is gone."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _keep_log(path: Path, config: RunConfig) -> str | None:
    """Move a failed run's stderr file into :func:`log_dir`; return its path (None if that fails)."""
    try:
        folder = log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in f"{config.system}-{config.model}")[:80]
        target = folder / f"{stamp}-{safe}-{os.getpid()}-{time.monotonic_ns() % 10**6}.stderr"
        target.write_bytes(path.read_bytes())
        return str(target)
    except OSError:
        return None


def reading_events(fd: int | None, on_event):
    """An :class:`~gnnbench.run.events.EventReader` on ``fd``, or nothing when no events were asked for."""
    from contextlib import nullcontext

    return EventReader(fd, on_event) if fd is not None else nullcontext()


def worker_command(config_path: Path, result_path: Path) -> list[str]:
    """The worker's command line (a function, so tests can stand in a misbehaving worker)."""
    return [sys.executable, "-m", "gnnbench.run.worker", str(config_path), str(result_path)]


def run_task(config: RunConfig, isolate: bool = True, timeout_s: float | None = CONFIG_LIMIT,
             memory_limit_bytes: int | None = CONFIG_LIMIT,
             on_event: Callable[[RunEvent], None] | None = None) -> dict[str, Any]:
    """Run ``config`` and return its row (never raises for a failing system when isolated).

    Isolated, bad input the worker finds comes back as a ``failed`` row that
    :func:`~gnnbench.run.record.bad_input_error` recognises; in this process it
    raises :class:`~gnnbench.errors.UserError` (Note [bad input in a worker]).

    Args:
        config (RunConfig): the run.
        isolate (bool): in a fresh process (default: True).
        timeout_s, memory_limit_bytes: override ``config.timeout`` and ``config.memory_limit``.
        on_event (callable, optional): receives the run's progress events as they happen, e.g. to draw
            a bar; best effort (Note [progress channel]); default: none are sent.
    """
    timeout_s = config.timeout if timeout_s is CONFIG_LIMIT else timeout_s
    memory_limit = config.memory_limit if memory_limit_bytes is CONFIG_LIMIT else memory_limit_bytes
    if not isolate:
        return train(config, on_event=on_event)
    started = utc_now()
    with run_folder() as tmp:  # killed runs' folders are cleaned up here (Note [run folders])
        config_path, result_path, err_path = write_config(tmp, config, memory_limit)
        cmd = worker_command(config_path, result_path)
        env = worker_env(config.threads, config.allocator)
        events_read, events_write = os.pipe() if on_event is not None else (None, None)
        if events_write is not None:
            env[EVENTS_FD_ENV] = str(events_write)
        with open(err_path, "wb") as err_file, reading_events(events_read, on_event):
            try:
                proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=err_file, stderr=err_file,
                                        start_new_session=True, pass_fds=() if events_write is None else (events_write,))
            finally:
                if events_write is not None:
                    os.close(events_write)  # the worker holds the write end now: its exit ends the reader
            try:
                proc.wait(timeout=timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            except BaseException:  # interrupted: leave no worker behind
                kill_group(proc.pid)
                proc.wait()
                raise
            finally:
                kill_group(proc.pid)  # Note [process group]
            proc.wait()
        return outcome_row(config, started, Outcome(timed_out, proc.returncode, "fresh"), result_path, err_path,
                           timeout_s, memory_limit)


def write_config(folder: str | os.PathLike, config: RunConfig, memory_limit: int | None) -> tuple[Path, Path, Path]:
    """Write what a measurement process reads into ``folder``; returns the paths of the config, of the result it
    writes and of its stderr log."""
    config_path, result_path, err_path = (Path(folder, "config.json"), Path(folder, "result.json"),
                                          Path(folder, "stderr"))
    config_path.write_text(json.dumps({**config.as_dict(), "memory_limit": memory_limit}))
    return config_path, result_path, err_path


@dataclass(frozen=True)
class Outcome:
    """How a measurement process ended: killed at its time limit, else its exit status as ``Popen.returncode``
    gives it (minus the signal that killed it), and how it started (``extra.process_start``: ``fresh`` or
    ``fork``; Note [cheap processes] in :mod:`gnnbench.run.warm`)."""

    timed_out: bool
    returncode: int | None
    process_start: str
    extra: dict | None = None  # more of ``extra`` for every row of this process (the warm parent's id)


def outcome_row(config: RunConfig, started: str, outcome: Outcome, result_path: Path, err_path: Path,
                timeout_s: float | None, memory_limit: int | None) -> dict[str, Any]:
    """The row of a measurement process that has ended, from what it wrote and how it ended (Note [exit
    statuses], Note [bad input in a worker]); every row says how its process started."""
    started_as = {"process_start": outcome.process_start, **(outcome.extra or {})}
    stderr = err_path.read_text(errors="replace") if err_path.exists() else ""
    row = None
    if not outcome.timed_out and result_path.exists():
        row = json.loads(result_path.read_text())
        if row.get("status") == "ok" or bad_input_error(row) is not None:
            # bad input: its one line says it all, no log kept (Note [bad input in a worker])
            row["extra"] = {**(row.get("extra") or {}), **started_as}
            return row
    kept = _keep_log(err_path, config)
    extra = {**({"stderr_path": kept} if kept else {}), **started_as}
    if outcome.timed_out:
        return failure_row(config, "timeout", f"run exceeded its time limit of {timeout_s:g} s", stderr,
                           started, extra)
    if row is not None:  # an expected failure the worker wrote itself
        row["stderr"] = (row.get("stderr") or stderr)[-20000:] or None
        row["extra"] = {**(row.get("extra") or {}), **extra}
        return row
    status, error = _describe_exit(outcome.returncode, stderr, memory_limit)
    return failure_row(config, status, error, stderr, started, extra)
