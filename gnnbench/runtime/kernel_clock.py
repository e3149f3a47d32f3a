"""Time spent inside a system's kernels: the system's own share of an epoch.

Note [kernel time]
    Both runtimes call every kernel through :func:`call_kernel`, which adds the
    call's wall time to the clock that :func:`measuring` started, if any. The
    harness starts one for each timed epoch of a kernel system, so a row says
    how much of the epoch the system's kernels took (``kernel_median_s``); the
    rest is the framework's share (dense transforms, elementwise ops, dropout,
    loss, optimizer, glue), the same code for every system. That split is what
    bounds a speed-up: a system that made its kernels free would still pay the
    rest. On the CPU a kernel call returns when its work is done, so its wall
    time is its cost; a CUDA kernel returns before it finishes, so CUDA runs
    leave the figure null rather than report launch times. A call made on a
    view lent by a fallback system is filed under ``lent``, never under the
    system's own kernels (Note [fallback accounting] in :mod:`gnnbench.runtime.fallback`).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

__all__ = ["KernelClock", "measuring", "call_kernel"]


class KernelClock:
    """Seconds and calls per kernel since the clock started; a fallback's kernels apart, in ``lent``."""

    __slots__ = ("seconds", "calls", "lent")

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.lent: dict[str, float] = {}   # "lender.kernel" -> seconds

    @property
    def total(self) -> float:
        """Seconds inside the system's own kernels, all kernels together (a fallback's not included)."""
        return sum(self.seconds.values())

    @property
    def lent_total(self) -> float:
        """Seconds inside kernels a fallback system lent."""
        return sum(self.lent.values())

    def add(self, kernel: str, seconds: float, lender: str = "") -> None:
        if lender:
            key = f"{lender}.{kernel}"
            self.lent[key] = self.lent.get(key, 0.0) + seconds
            return
        self.seconds[kernel] = self.seconds.get(kernel, 0.0) + seconds
        self.calls[kernel] = self.calls.get(kernel, 0) + 1


_running: KernelClock | None = None


@contextmanager
def measuring() -> Iterator[KernelClock]:
    """Time every kernel call made inside the ``with`` block (not re-entrant)."""
    global _running
    if _running is not None:
        raise RuntimeError("a kernel clock is already running")
    clock = _running = KernelClock()
    try:
        yield clock
    finally:
        _running = None


def call_kernel(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """``fn(*args, **kwargs)``, timed under ``name`` when a clock is running.

    The first argument is the kernel's graph view; a view lent by a fallback
    system (it has a ``lender``) files the time under that lender.
    """
    clock = _running
    if clock is None:
        fn(*args, **kwargs)
        return
    start = time.perf_counter()
    try:
        fn(*args, **kwargs)
    finally:
        clock.add(name, time.perf_counter() - start, getattr(args[0], "lender", "") if args else "")
