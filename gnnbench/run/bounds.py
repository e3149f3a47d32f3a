"""Hardware bounds of this machine, measured once and cached, and SpMM figures set against them.

An SpMM's time means little across machines and papers; its achieved
bandwidth and FLOP rate, and their share of what the machine can do, do.
:func:`machine_bounds` measures the two bounds of ``benchmarks/studies/bench_spmm.py``
(Note [effective bandwidth] there): STREAM triad and a random 256-byte row
gather, on all threads, and caches them per machine; :func:`spmm_figures`
turns one SpMM's time into GB/s, GFLOP/s and fractions of those bounds.

Note [spmm figures]
    For ``out = A x`` with ``E`` edges, ``N`` nodes and width ``F``:
    GFLOP/s is ``E F / t`` (one multiply-add per edge and feature counted as
    one operation, as DGL's kernel benchmarks report it, e.g. dgl PR #4048's
    "copy_u_sum ... GFLOP/s"); bytes moved are
    ``s (E + N + 1) + v F (E + N)`` for ``s``-byte indices and ``v``-byte
    values (indices, indptr, gathered rows, output rows), the formula of
    ``bench_spmm.py`` (:meth:`~gnnbench.runtime.kernel_clock.SpmmWork.of_call`
    computes both). The fractions divide the achieved GB/s by the STREAM
    and the gather bound measured on the same machine: an SpMM is a gather,
    so the gather bound is the one it can approach.

    A run's row gives them per SpMM-type kernel (``extra.spmm_figures``,
    :func:`run_figures`): the kernel clock sums each kernel's work over its
    calls in each timed epoch (Note [spmm work] in
    :mod:`gnnbench.runtime.kernel_clock`), and the figures divide the work of
    the median epoch (every epoch of a full-graph run does the same work) by
    the kernel's median seconds per epoch, the ``kernel_median_s_by_kernel``
    of the row. A sampled run's epochs draw other blocks, so their work
    differs by a few per cent; its figures divide the epoch of median bytes
    by the median seconds, a typical epoch's rate, and its rows and edges
    are the blocks' (sources gathered, destinations written).

Note [bounds cache]
    Bounds are a property of the machine, not of a run: measuring them takes
    seconds and disturbs nothing when done once. They are cached as JSON
    under ``$GNNBENCH_CACHE`` (default ``~/.cache/gnnbench``) in
    ``bounds/<key>.json``, the key a hash of hostname, CPU model, CPU count
    and thread count, so another machine, or the same one pinned to other
    threads, measures its own.

Note [bounds in a run]
    A run reads this machine's bounds from the cache and never measures
    them, not even after its epochs: measuring compiles two kernels and runs
    a 480 MB triad and a 512 MiB gather (seconds, and a GiB that a run under
    ``--memory-limit`` may not have), inside the worker's time limit and a
    sweep's interleaved rounds, and it would measure under whatever load the
    sweep itself puts on the machine. Bounds are the machine's, measured once
    and deliberately, by ``gnnbench bounds`` on a quiet machine. A run that
    finds none stores GB/s and GFLOP/s, leaves the fractions null and says so
    in ``extra.spmm_figures.note``. The row keeps the bounds it divided by,
    so a later ``gnnbench bounds --refresh`` changes no stored figure.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from gnnbench.errors import UserError
from gnnbench.paths import check_output_file
from gnnbench.results.row import SpmmFigures, SpmmKernelFigures
from gnnbench.runtime.kernel_clock import SpmmWork

__all__ = ["Bounds", "machine_key", "measure_bounds", "machine_bounds", "cached_bounds", "spmm_figures",
           "spmm_bytes", "work_figures", "run_figures"]


@dataclass(frozen=True)
class Bounds:
    """Measured bounds in GB/s, and how they were measured."""

    triad_GBps: float
    gather256_GBps: float
    threads: int
    triad_elements: int
    gather_rows: int
    measured_at: str

    def describe(self) -> str:
        """``STREAM triad ... GB/s, random 256-byte gather ... GB/s on N threads``."""
        return (f"STREAM triad {self.triad_GBps:.1f} GB/s, random 256-byte gather {self.gather256_GBps:.1f} GB/s "
                f"on {self.threads} threads")


def machine_key(threads: int | None = None) -> str:
    """The cache key of this machine and thread count (Note [bounds cache])."""
    from gnnbench.run.environment import cpu_model

    threads = threads or os.cpu_count() or 1
    text = json.dumps([platform.node(), cpu_model(), os.cpu_count(), threads])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _best(fn: Callable[[], object], repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _kernels():
    import numba
    from numba import njit, prange

    @njit(parallel=True)
    def triad(a, b, c, s):
        for i in prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    @njit(parallel=True)
    def gather(table, rows, out):
        nt = out.shape[0]
        n = rows.shape[0]
        for t in prange(nt):
            for k in range(t * n // nt, (t + 1) * n // nt):
                r = rows[k]
                for f in range(table.shape[1]):
                    out[t, f] += table[r, f]

    return triad, gather, numba


def _triad_time(triad, n: int, repeats: int) -> float:
    a, b, c = np.empty(n), np.full(n, 1.0), np.full(n, 2.0)
    return _best(lambda: triad(a, b, c, 3.0), repeats)


def measure_bounds(triad_elements: int = 20_000_000, gather_rows: int = 1 << 21, threads: int | None = None,
                   repeats: int = 5) -> Bounds:
    """STREAM triad (``a = b + s c``, 24 bytes an element) and a random gather of 256-byte rows, best of
    ``repeats``, on ``threads`` threads (default: all)."""
    from gnnbench.results.store import utc_now

    triad, gather, numba = _kernels()
    if threads:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    n = triad_elements
    t_triad = _triad_time(triad, n, repeats)  # its arrays are freed before the gather's table is made
    table = np.random.default_rng(0).random((gather_rows, 64), dtype=np.float32)
    rows = np.random.default_rng(1).integers(0, gather_rows, gather_rows)
    out = np.zeros((numba.get_num_threads(), 64), dtype=np.float32)
    t_gather = _best(lambda: gather(table, rows, out), repeats)
    return Bounds(24 * n / t_triad / 1e9, 256 * gather_rows / t_gather / 1e9, numba.get_num_threads(), n,
                  gather_rows, utc_now())


def _cache_path(threads: int | None) -> Path:
    root = Path(os.environ.get("GNNBENCH_CACHE") or Path.home() / ".cache" / "gnnbench")
    return root / "bounds" / f"{machine_key(threads)}.json"


def cached_bounds(threads: int | None = None) -> Bounds | None:
    """This machine's bounds on ``threads`` threads if the cache holds them, else None; never measures
    (Note [bounds in a run])."""
    path = _cache_path(threads)
    if not path.is_file():
        return None
    try:
        return Bounds(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None  # a damaged cache file is as good as none: `gnnbench bounds` measures again


def machine_bounds(threads: int | None = None, *, refresh: bool = False,
                   measure: Callable[..., Bounds] = measure_bounds) -> Bounds:
    """This machine's bounds from the cache, measured first when absent or ``refresh`` (Note [bounds cache])."""
    bounds = None if refresh else cached_bounds(threads)
    if bounds is not None:
        return bounds
    path = _cache_path(threads)
    try:  # before measuring: a measurement that cannot be kept is not worth its seconds
        path.parent.mkdir(parents=True, exist_ok=True)
        check_output_file(path, "bounds cache")
    except (OSError, UserError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UserError(f"cannot write the bounds cache {path.parent}: {reason}; set GNNBENCH_CACHE to a writable "
                        f"folder (nothing was measured)") from None
    bounds = measure(threads=threads)
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(asdict(bounds)))
        os.replace(tmp, path)
    except OSError as exc:  # lost while measuring: the figures go into the message, not away
        raise UserError(f"measured {bounds.describe()}, but could not save them in {path.parent} "
                        f"({exc.strerror or exc}); set GNNBENCH_CACHE to a writable folder") from None
    return bounds


def spmm_bytes(edges: int, nodes: int, width: int, index_bytes: int = 4, value_bytes: int = 4) -> int:
    """Bytes an SpMM moves at least: indices, indptr, gathered rows, output rows (Note [spmm figures])."""
    return SpmmWork.of_call(edges, nodes, width, index_bytes, value_bytes).bytes


def work_figures(work: SpmmWork, seconds: float, bounds: Bounds | None = None) -> dict[str, float | None]:
    """GB/s, GFLOP/s and the fractions of the bounds of ``work`` done in ``seconds`` (Note [spmm figures]).

    Returns:
        ``{"GBps", "GFLOPs", "of_stream", "of_gather"}``; the fractions are None without ``bounds``.
    """
    gbps = work.bytes / seconds / 1e9
    return {"GBps": gbps, "GFLOPs": work.flops / seconds / 1e9,
            "of_stream": gbps / bounds.triad_GBps if bounds else None,
            "of_gather": gbps / bounds.gather256_GBps if bounds else None}


def spmm_figures(edges: int, nodes: int, width: int, seconds: float, bounds: Bounds | None = None, *,
                 index_bytes: int = 4, value_bytes: int = 4) -> dict[str, float | None]:
    """:func:`work_figures` of one SpMM of ``edges``, ``nodes`` and ``width`` that took ``seconds``."""
    return work_figures(SpmmWork.of_call(edges, nodes, width, index_bytes, value_bytes), seconds, bounds)


def run_figures(work_by_epoch: Sequence[Mapping[str, SpmmWork]], median_s: Mapping[str, float],
                bounds: Bounds | None, threads: int | None = None) -> SpmmFigures | None:
    """A run's ``extra.spmm_figures`` (Note [spmm figures]), or None when no SpMM-type kernel ran.

    Args:
        work_by_epoch: each timed epoch's kernel clock ``work`` (kernel name -> :class:`SpmmWork`).
        median_s: each kernel's median seconds per epoch (``kernel_median_s_by_kernel``).
        bounds: this machine's cached bounds (:func:`cached_bounds`), or None (Note [bounds in a run]).
        threads: the run's thread count, named in the note when ``bounds`` is None (default: all).
    """
    names = sorted({name for epoch in work_by_epoch for name in epoch})
    if not names:
        return None
    kernels = {}
    for name in names:
        works = sorted((epoch.get(name, SpmmWork()) for epoch in work_by_epoch), key=lambda w: w.bytes)
        work = works[(len(works) - 1) // 2]  # the median epoch's (all alike in a full-graph run)
        seconds = median_s.get(name) or 0.0
        figures = work_figures(work, seconds, bounds) if seconds > 0 else dict.fromkeys(
            ("GBps", "GFLOPs", "of_stream", "of_gather"))
        kernels[name] = SpmmKernelFigures(work.calls, work.edges, work.rows, work.flops, work.bytes, seconds,
                                          **figures)
    note = None if bounds is not None else (
        f"no bounds cached for this machine on {threads or os.cpu_count()} threads when the run ran, so no "
        "fractions: `gnnbench bounds` measures them (Note [bounds in a run])")
    return SpmmFigures(kernels, asdict(bounds) if bounds is not None else None, note)
