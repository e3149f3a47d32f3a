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

Note [spmm work]
    The clock that times a call also counts what an SpMM-type call had to do,
    so a row can say how fast its SpMMs moved data (Note [spmm figures] in
    :mod:`gnnbench.run.bounds`). A kernel is SpMM-type when its first output
    is float rows of the view (``[N, ...]``) and one float input holds the
    view's columns with the same trailing shape (``[S, ...]``): it gathers
    ``S`` rows along the ``E`` edges into ``N`` rows. By the system API
    (``gnnbench/api.gnn``) that is ``spmm_sum``, ``spmm_sum_backward``,
    ``spmm_max``, isplib's ``spmm_mean`` kernels and the fused
    ``gat_aggregate`` kernels (whose score work is left out, so their figures
    are lower bounds of what they moved); not ``spmm_max_backward``, a scatter
    through ``argmax``, nor the edge-valued SDDMM and edge-softmax kernels.
    Each call adds its ``E``, ``N``, width ``F = H D`` (the trailing shape's
    product), index size (the view's) and value size (the call's float type)
    to its kernel's :class:`SpmmWork`; the runtime works them out only while a
    clock runs, before the call's own time starts, from the shapes the
    boundary already checked. A call on a lent view counts no work, as it
    counts no time of the system's.
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

__all__ = ["KernelClock", "SpmmWork", "measuring", "call_kernel", "spmm_work"]

_FLOATS = ("float", "f32", "f64")


@dataclass(frozen=True)
class SpmmWork:
    """What SpMM-type calls did, summed over the calls (Note [spmm work]).

    For one call on ``E`` edges into ``N`` rows of width ``F``, with ``s``-byte
    indices and ``v``-byte values (Note [spmm figures] in :mod:`gnnbench.run.bounds`):

    * ``flops = E F`` (one multiply-add per edge and feature, counted once, as DGL reports it);
    * ``bytes = s (E + N + 1) + v F (E + N)``: indices, indptr, gathered rows, output rows.

    Attributes:
        calls: how many calls; edges: ``sum E``; rows: ``sum N``; flops: ``sum E F``; bytes: ``sum bytes``.
    """

    calls: int = 0
    edges: int = 0
    rows: int = 0
    flops: int = 0
    bytes: int = 0

    @classmethod
    def of_call(cls, edges: int, rows: int, width: int, index_bytes: int = 4, value_bytes: int = 4) -> "SpmmWork":
        """One call's work (the formulas above)."""
        return cls(1, edges, rows, edges * width,
                   index_bytes * (edges + rows + 1) + value_bytes * width * (edges + rows))

    def plus(self, other: "SpmmWork") -> "SpmmWork":
        return SpmmWork(self.calls + other.calls, self.edges + other.edges, self.rows + other.rows,
                        self.flops + other.flops, self.bytes + other.bytes)


class KernelClock:
    """Seconds and calls per kernel since the clock started; a fallback's kernels apart, in ``lent``; the
    work of SpMM-type kernels in ``work`` (Note [spmm work])."""

    __slots__ = ("seconds", "calls", "lent", "work", "label")

    def __init__(self, label: Callable[[str], Any] | None = None) -> None:
        #: ``label(name)``, a context manager each call runs inside, so that a profiler names the kernel
        #: (Note [profiled epochs] in gnnbench/run/profile.py); ``name`` is ``lender.kernel`` for a lent one
        self.label = label
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.lent: dict[str, float] = {}   # "lender.kernel" -> seconds
        self.work: dict[str, SpmmWork] = {}

    @property
    def total(self) -> float:
        """Seconds inside the system's own kernels, all kernels together (a fallback's not included)."""
        return sum(self.seconds.values())

    @property
    def lent_total(self) -> float:
        """Seconds inside kernels a fallback system lent."""
        return sum(self.lent.values())

    def add(self, kernel: str, seconds: float, lender: str = "", work: SpmmWork | None = None) -> None:
        if lender:
            key = f"{lender}.{kernel}"
            self.lent[key] = self.lent.get(key, 0.0) + seconds
            return
        self.seconds[kernel] = self.seconds.get(kernel, 0.0) + seconds
        self.calls[kernel] = self.calls.get(kernel, 0) + 1
        if work is not None:
            known = self.work.get(kernel)
            self.work[kernel] = work if known is None else known.plus(work)


_running: KernelClock | None = None


@contextmanager
def measuring(label: Callable[[str], Any] | None = None) -> Iterator[KernelClock]:
    """Time every kernel call made inside the ``with`` block (not re-entrant), each inside ``label(name)`` if
    given (:attr:`KernelClock.label`)."""
    global _running
    if _running is not None:
        raise RuntimeError("a kernel clock is already running")
    clock = _running = KernelClock(label)
    try:
        yield clock
    finally:
        _running = None


def spmm_work(kernel: Any, view: Any, env: Mapping[str, int], float_dtype: str | None) -> SpmmWork | None:
    """The work of one call of ``kernel`` (a :class:`~gnnbench.runtime.boundary.KernelDecl`) on ``view``, if it
    is SpMM-type and a clock runs (Note [spmm work]); ``env`` holds the shape symbols the boundary bound."""
    if _running is None or not kernel.outputs or float_dtype is None:
        return None
    out = kernel.outputs[0]
    if out.dtype not in _FLOATS or out.shape[:1] != (("N",),):
        return None
    if not any(d.dtype in _FLOATS and d.shape[:1] == (("S",),) and d.shape[1:] == out.shape[1:]
               for d in kernel.inputs):
        return None
    import numpy as np

    width = math.prod(f if isinstance(f, int) else env[f] for dim in out.shape[1:] for f in dim)
    return SpmmWork.of_call(env["E"], env["N"], width, np.dtype(view.index_dtype).itemsize,
                            np.dtype(float_dtype).itemsize)


def call_kernel(name: str, fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any] | None = None,
                work: SpmmWork | None = None) -> None:
    """``fn(*args, **kwargs)``, timed under ``name`` when a clock is running, with ``work`` counted (Note [spmm work]).

    The first argument is the kernel's graph view; a view lent by a fallback
    system (it has a ``lender``) files the time under that lender.
    """
    kwargs = kwargs or {}
    clock = _running
    if clock is None:
        fn(*args, **kwargs)
        return
    lender = getattr(args[0], "lender", "") if args else ""
    if clock.label is not None:  # profiled epochs only (Note [profiled epochs]): the timed ones take the path below
        with clock.label(f"{lender}.{name}" if lender else name):
            _timed(clock, name, fn, args, kwargs, lender, work)
        return
    _timed(clock, name, fn, args, kwargs, lender, work)


def _timed(clock: KernelClock, name: str, fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any],
           lender: str, work: SpmmWork | None) -> None:
    start = time.perf_counter()
    try:
        fn(*args, **kwargs)
    finally:
        clock.add(name, time.perf_counter() - start, lender, work)
