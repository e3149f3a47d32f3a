"""Seconds a block spends compiling JIT kernels (numba): a one-time cost of an install, reported apart.

Note [compile time apart]
    A numba kernel compiles on its first call on a machine; every later
    process loads it from numba's disk cache. isplib compiles its kernels in
    ``prepare`` (``warm_up``), so on a fresh install its first run at 16M
    edges reported a ``prepare_time_s`` dozens of times that of the same
    prepare with a warm cache, and many times DGL's, which ships compiled
    (``results/studies/runtime-notes.md``).
    That is a cost of the install, not of the graph: the run reports it as
    ``extra.compile_time_s`` and ``prepare_time_s`` is the rest, as tuning is
    reported apart (``tune_time_s``). Loading from the disk cache is not
    compilation and stays in ``prepare`` (every run pays it). Only the
    outermost ``numba:compile`` event of a nest counts (a kernel's compile
    includes the functions it calls). Later compiles already fall outside the
    measurements: in warm-up epochs, or in tuning, whose time is its own.
"""
from __future__ import annotations

import time
from typing import Callable

__all__ = ["CompileClock"]


class CompileClock:
    """``with CompileClock() as jit: ...``; then ``jit.seconds`` is the time numba spent compiling inside.

    Args:
        clock: the clock to read, the caller's (default: ``time.perf_counter``).
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock = clock
        self.seconds = 0.0
        self._depth = 0
        self._started = 0.0
        self._scope = None

    def __enter__(self) -> "CompileClock":
        from numba.core import event

        clock = self

        class _Outermost(event.Listener):
            def on_start(self, ev) -> None:
                if clock._depth == 0:
                    clock._started = clock.clock()
                clock._depth += 1

            def on_end(self, ev) -> None:
                clock._depth -= 1
                if clock._depth == 0:
                    clock.seconds += clock.clock() - clock._started

        self._scope = event.install_listener("numba:compile", _Outermost())
        self._scope.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._scope.__exit__(*exc)
