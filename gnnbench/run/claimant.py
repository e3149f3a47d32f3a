"""Who holds a sweep's claim, and whether that process still runs (Note [claim owners]).

Note [claim owners]
    A sweep claims each configuration in the store before running it (Note
    [claims] in :mod:`gnnbench.results.store`) under an owner text
    ``host:pid:start:nonce``: the host name, the process id, the process's
    start time (seconds since the epoch, two decimals, as the kernel reports
    it) and a random nonce that tells two sweeps of one process apart. A claim
    whose owner names this host and a process that no longer runs, or whose
    pid now belongs to a process started at another time (pid reuse), or that
    is a zombie, is taken over at once: a sweep killed with SIGKILL never
    released its claims, and its rerun should not wait for them to expire.
    A claim of another host, or an owner text of another form (older sweeps
    wrote ``host:pid:nonce``: there a dead pid on this host is enough), is left
    until it expires.
"""
from __future__ import annotations

import os
import socket
import uuid

import psutil

__all__ = ["claim_owner", "owner_is_gone", "owner_is_another_live_process", "process_gone"]


def _started(pid: int) -> str | None:
    """The process's start time as owner text, or None when no such process runs (a zombie does not)."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return f"{process.create_time():.2f}"
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return None


def claim_owner() -> str:
    """This process's owner text (Note [claim owners]), with a fresh nonce."""
    return f"{socket.gethostname()}:{os.getpid()}:{_started(os.getpid())}:{uuid.uuid4().hex[:8]}"


def owner_is_gone(owner: str) -> bool:
    """Whether ``owner`` is a process of this host that no longer runs (Note [claim owners])."""
    parts = owner.split(":")
    if len(parts) not in (3, 4) or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    return process_gone(int(parts[1]), parts[2] if len(parts) == 4 else None)


def owner_is_another_live_process(owner: str) -> bool:
    """Whether ``owner`` is a running process of this host other than this one: a sweep that can be watched
    until it stores its configuration or dies (Note [a killed sweep's configurations] in gnnbench/run/sweep.py)."""
    parts = owner.split(":")
    if len(parts) not in (3, 4) or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    return int(parts[1]) != os.getpid() and not process_gone(int(parts[1]), parts[2] if len(parts) == 4 else None)


def process_gone(pid: int, started: str | None = None) -> bool:
    """Whether process ``pid`` of this host no longer runs: none, a zombie, or (``started`` given) another
    process that reuses its pid (Note [claim owners])."""
    now = _started(pid)
    return now is None or (started is not None and now != started)
