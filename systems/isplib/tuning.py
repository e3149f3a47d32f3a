"""The isplib auto-tuner: time SpMM variants on the real graph and widths, cache the winner.

Note [tuning search]
    The space (:class:`~gnnbench.systems.isplib.variant.Variant`) is searched
    in two stages, since the loop shape and the work split are nearly
    independent:

    1. loop shape -- ``kernel x unroll x prefetch`` at all threads with the
       nonzero-balanced split, most promising first (:func:`_stage_one`);
    2. work split -- the best shape under every ``partition x threads``.
       On a busy machine (1-minute load above 3/4 of the cores) only all
       threads are tried: fewer threads win there because the others are
       preempted, and that choice would halve the speed once the machine is
       quiet again.
    3. output stores -- the best so far with streaming stores, when it is
       the width-specialised kernel and its rows are whole cache lines
       (Note [streaming stores] in :mod:`~gnnbench.systems.isplib.row_ops`):
       one candidate, since how a row is written does not change how it is
       summed or how rows are split. It is timed in the same rounds as the
       best, and its time is the best's scaled by their ratio: the gain is
       1-4 %, and timed in a stage of its own it lost in 5 of the 6 cells of
       ``benchmarks/bench_spmm.py`` that it wins when interleaved.

    Every candidate runs once untimed (this also compiles a width-specialised
    kernel), its output is checked against the default variant's, then all
    candidates run ``reps`` interleaved rounds so machine drift is shared; the
    winner has the smallest median, unless it beats the default variant by
    less than 2 % (noise on shared cores), in which case the default stays.
    Each orientation is tuned apart (the backward runs on the transpose,
    whose degree distribution differs), and so is each kernel path
    (Note [tuning key]).

Note [tuning budget]
    Tuning on first use (:mod:`~gnnbench.systems.isplib.first_use`) must cost
    a small fraction of the run it serves, so :func:`tune_keys` takes a time
    budget. Two things keep it inside:

    * sampled rows: the candidates run on a subset of the rows (16 runs of
      consecutive rows, started at evenly spaced nonzero quantiles, so hub
      rows are sampled in proportion to their nonzeros) gathering from the
      full feature matrix, so the gathers see the real cache behaviour. The
      sample is sized from a probe call so that every planned call fits;
      ``2^18`` nonzeros at least, the whole graph when it is that small;
    * fewer candidates: when even the smallest sample cannot time them all,
      the least promising are dropped (the default always stays), and stage
      two runs only on the budget left.

    * no compilation: a width-specialised kernel compiles once per width
      and machine (numba's disk cache keeps it), 5-30 s on a quiet machine
      and minutes on a loaded one (GCN's first run at 4M edges spent several
      times its budget tuning when compilation was allowed:
      ``results/studies/isplib-kernels.md``). Under
      a budget it is a candidate only when already compiled in this process
      or found in numba's disk cache (:meth:`_Case.fixed_ready`);
      ``gnnbench tune`` compiles it, after which every run may choose it.
      On a view big enough for the width-specialised kernel to be the
      untuned default (Note [untuned default]) the run's first epoch has
      compiled it, so the search times it and its knobs, against it.

    A budget of ``None`` (``gnnbench tune``) times the full candidate set on
    at most ``2^22`` nonzeros, compiling what it must.

Note [hard tuning budget]
    The sizing above is a forecast; the budget itself is a deadline
    (:class:`_Deadline` on :data:`_clock`). Everything a path does counts
    against it: drawing the features, the probe, building the sample, loading
    a width-specialised kernel from numba's disk cache on its first call, the
    timed rounds and the whole-graph confirmation (Note [confirm on the whole
    graph]). A first-use run at 4M edges took 5.1 s against a 4.69 s budget
    before this, because only the search was sized and confirmation and
    loading came on top. Now:

    * no kernel call starts that would end after the deadline, predicted by
      the case's latest call (:meth:`_Case.run` times itself), so a path
      overshoots by at most the misprediction of one call;
    * when the deadline comes, the path keeps the best timed so far, but only
      against a timed default and beyond the 2 % margin; with no timed
      default it stores nothing and stays pending (``skipped``);
    * the confirmation's cost (two variants, :data:`_CONFIRM_REPS` rounds of
      the whole graph, estimated from the probe) is reserved before the
      search starts; if it does not fit, the sampled winner is not confirmed
      and the default stays;
    * nothing is timed twice for nothing: the probe's sample is the search's
      when it is big enough, the default's calls there are its warm-up,
      the features are drawn once per path and shared with the
      confirmation, which makes no untimed calls (both variants already ran);
    * paths share the budget in proportion to their width (the same
      nonzeros, so kernel time grows with the width), and a path narrower
      than :data:`_SMALL_WIDTH` of the widest pending one is not tuned under
      a budget (``narrow``): GCN's width-8 output layer beside its width-64
      hidden layer is a small share of the kernel time and would take a
      share of the budget for little. They are cached as the default
      (``"narrow": true``), so a later run finds them and tunes nothing;
      ``gnnbench tune`` (no budget) tunes every width.

    Tests drive this with a fake clock that advances with each kernel call
    (``tests/systems/isplib/test_isplib_tuning.py``).

"""
from __future__ import annotations

import datetime
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

import numba
import numpy as np

from gnnbench.errors import UserError
from gnnbench.runtime.graph import Graph, GraphView
from gnnbench.systems.isplib.prepared import IsplibGraph
from gnnbench.systems.isplib.row_ops import STREAM_ALIGN
from gnnbench.systems.isplib.tuning_cache import WEIGHTINGS, cache_file, cpu_fingerprint, entry_key, graph_key, store
from gnnbench.systems.isplib.variant import (KERNELS, PARTITIONS, Variant, default_variant, line_aligned_empty,
                                            run_variant)

__all__ = ["TuneResult", "TuneTask", "tune", "tune_keys"]

# --------------------------------------------------------------------- tuning
#: A variant must beat the default by this fraction to replace it (timing noise on shared cores).
_MARGIN = 0.02
#: Note [tuning budget]: smallest row sample, sample for an unbudgeted tune, runs of rows per sample.
_MIN_SAMPLE_NNZ = 1 << 18
_FULL_SAMPLE_NNZ = 1 << 22
_SAMPLE_RUNS = 16
#: A path whose share of the budget is below this is left for a later run (seconds).
_MIN_SHARE_S = 0.05
#: Timed rounds per candidate under a budget (an unbudgeted tune takes ``reps``).
_BUDGET_REPS = 3
#: interleaved full-graph rounds that confirm a sampled winner (Note [confirm on the whole graph])
_CONFIRM_REPS = 2
#: Under a budget, a path narrower than this fraction of the widest pending one keeps the default (Note [hard tuning budget]).
_SMALL_WIDTH = 0.25
#: The tuner's clock; tests swap in a fake one (Note [hard tuning budget]).
_clock = time.perf_counter


@dataclass(frozen=True)
class TuneTask:
    """One kernel path to tune on one graph view (Note [tuning key]).

    Args:
        view: the forward or transposed :class:`~gnnbench.runtime.graph.GraphView`.
        weighting: one of :data:`~gnnbench.systems.isplib.tuning_cache.WEIGHTINGS`.
        reduce: ``"sum"`` or ``"mean"``.
        width: flattened feature width ``H * D``.
        dtype: float dtype name.
    """

    view: GraphView = field(repr=False)
    weighting: str
    reduce: str
    width: int
    dtype: str

    @property
    def orientation(self) -> str:
        return "transposed" if self.view.transposed else "forward"

    @property
    def key(self) -> tuple[str, str, str, int, str]:
        return (self.orientation, self.weighting, self.reduce, self.width, self.dtype)


@dataclass(frozen=True)
class TuneResult:
    """What :func:`tune_keys` chose and measured.

    Args:
        signature: the graph's signature.
        fingerprint: :func:`~gnnbench.systems.isplib.tuning_cache.cpu_fingerprint` of this machine.
        choices: ``(orientation, weighting, reduce, width, dtype) -> Variant`` stored in the cache.
        times_ms: same keys ``-> {variant label: median ms}`` (on the row sample).
        default_ms: same keys ``-> median ms`` of the default variant (on the row sample).
        sample_nnz: same keys ``-> nonzeros`` the candidates ran on (Note [tuning budget]).
        wall_time_s: time the whole tuning took, compilation included.
        cache_path: the cache file written.
        load_avg: the 1-minute load average at start and end of tuning, the
            larger one; above the core count the timings saw contention.
        budget_s: the time budget, None when unbounded.
        threads: numba's thread count the choices are stored under.
        skipped: keys left untuned because the budget was spent (a later run tunes them).
        narrow: keys left untuned under a budget because their width is a small
            share of the kernel time (Note [hard tuning budget]); they are
            cached as the default variant.
    """

    signature: str
    fingerprint: str
    choices: dict[tuple, Variant]
    times_ms: dict[tuple, dict[str, float]] = field(repr=False)
    default_ms: dict[tuple, float]
    sample_nnz: dict[tuple, int]
    wall_time_s: float
    cache_path: str
    load_avg: float = 0.0
    budget_s: float | None = None
    threads: int = 1
    skipped: tuple[tuple, ...] = ()
    narrow: tuple[tuple, ...] = ()

    @property
    def busy(self) -> bool:
        """Whether other processes competed for the cores while tuning (choices may not transfer)."""
        return _busy(self.load_avg)

    def speedup(self, *key) -> float:
        """Default-variant time over chosen-variant time for one key of :attr:`choices`."""
        return self.default_ms[key] / self.times_ms[key][self.choices[key].label]

    def __str__(self) -> str:
        """One line per kernel path: the winner, its time and its gain over the default."""
        budget = "" if self.budget_s is None else f", budget {self.budget_s:.1f} s"
        lines = [f"isplib tuning of graph {self.signature} on {self.fingerprint}, "
                 f"{self.threads} threads{budget}"]
        for key, v in sorted(self.choices.items()):
            orientation, weighting, reduce, width, dtype = key
            ms, default = self.times_ms[key][v.label], self.default_ms[key]
            lines.append(f"  {orientation:<10} {weighting:<10} {reduce:<4} F={width:<5} {dtype:<7} "
                         f"{v.label:<28} {ms:8.2f} ms  (default {default:.2f} ms, {default / ms:.2f}x, "
                         f"{len(self.times_ms[key])} variants on {self.sample_nnz[key]} nonzeros)")
        for key in self.skipped:
            lines.append(f"  {' '.join(map(str, key))}: not tuned, the budget was spent (the next run tunes it)")
        for key in self.narrow:
            lines.append(f"  {' '.join(map(str, key))}: not tuned, a narrow width is a small share of the kernel "
                         "time; it keeps the default variant")
        if self.busy:
            lines.append(f"  load average {self.load_avg:.1f} while tuning: other work competed for the cores, "
                         "so these choices may not hold on a quiet machine")
        lines.append(f"  took {self.wall_time_s:.2f} s; cached in {self.cache_path}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature, "fingerprint": self.fingerprint, "threads": self.threads,
            "wall_time_s": self.wall_time_s, "cache_path": self.cache_path, "load_avg": self.load_avg,
            "busy": self.busy, "budget_s": self.budget_s, "skipped": [list(k) for k in self.skipped],
            "narrow": [list(k) for k in self.narrow],
            "choices": [{"orientation": k[0], "weighting": k[1], "reduce": k[2], "width": k[3], "dtype": k[4],
                         "variant": v.as_dict(), "label": v.label, "ms": self.times_ms[k][v.label],
                         "default_ms": self.default_ms[k], "sample_nnz": self.sample_nnz[k]}
                        for k, v in sorted(self.choices.items())],
        }


def _busy(load: float) -> bool:
    return load > 0.75 * (os.cpu_count() or 1)


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def _thread_counts() -> list[int]:
    top = numba.get_num_threads()
    counts = {top}
    t = 1
    while t < top:
        counts.add(t)
        t *= 2
    return sorted(counts)


def _stage_one(default: Variant | None = None) -> list[Variant]:
    """Loop shapes, the path's untuned ``default`` then the most promising (timings of ``benchmarks/bench_spmm.py``)."""
    first = [Variant("fixed", 4, 16), Variant("fixed", 8, 16), Variant("fixed", 4, 32), Variant("generic", 8, 16),
             Variant("fixed", 4, 8), Variant("fixed", 8, 32), Variant("generic", 4, 32), Variant("fixed", 4, 0)]
    rest = [Variant(k, u, pf) for k in KERNELS for u in (1, 4, 8) for pf in (0, 8, 16, 32)]
    order = [default or default_variant()] + first + rest
    seen, out = set(), []
    for v in order:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _stage_two(best: Variant, busy: bool) -> list[Variant]:
    top = numba.get_num_threads()
    counts = [top] if busy else _thread_counts()
    return [Variant(best.kernel, best.unroll, best.prefetch, part, 0 if t == top else t)
            for part in PARTITIONS for t in counts]


def _stage_three(best: Variant, task: "TuneTask") -> list[Variant]:
    """``best`` with streaming stores, where it has them (Note [tuning search], stage 3)."""
    if best.kernel != "fixed" or best.stores == "streaming" or (task.width * np.dtype(task.dtype).itemsize) % STREAM_ALIGN:
        return []
    return [replace(best, stores="streaming")]


def _sample_segments(indptr: np.ndarray, target_nnz: int) -> list[tuple[int, int]] | None:
    """Runs of consecutive rows with about ``target_nnz`` nonzeros in all, or None for every row.

    Note [tuning budget]: :data:`_SAMPLE_RUNS` runs start at evenly spaced nonzero quantiles.
    """
    n, nnz = indptr.shape[0] - 1, int(indptr[-1])
    if nnz <= target_nnz or n <= _SAMPLE_RUNS:
        return None
    per = max(1, target_nnz // _SAMPLE_RUNS)
    starts = np.searchsorted(indptr, np.linspace(0, nnz, _SAMPLE_RUNS, endpoint=False), side="right") - 1
    segments: list[tuple[int, int]] = []
    for s in np.unique(np.clip(starts, 0, n - 1)):
        s = int(s)
        if segments and s < segments[-1][1]:
            s = segments[-1][1]
            if s >= n:
                break
        e = int(np.searchsorted(indptr, indptr[s] + per, side="left"))
        segments.append((s, min(n, max(e, s + 1))))
    return segments


class _Case:
    """The arrays one kernel path runs on while tuning: sampled rows, full gathered features."""

    def __init__(self, task: TuneTask, target_nnz: int, rng: np.random.Generator, x: np.ndarray | None = None):
        view, dtype = task.view, np.dtype(task.dtype)
        indptr, indices = np.asarray(view.indptr), np.asarray(view.indices)
        eids = None if view.edge_ids is None else np.asarray(view.edge_ids)
        segments = _sample_segments(indptr, target_nnz)
        if segments is None:
            rows = np.arange(view.num_rows)
            positions = None
            sub_indptr, sub_indices, sub_eids = indptr, indices, eids
        else:
            rows = np.concatenate([np.arange(s, e) for s, e in segments])
            positions = np.concatenate([np.arange(indptr[s], indptr[e]) for s, e in segments])
            counts = np.diff(indptr)[rows]
            sub_indptr = np.zeros(rows.shape[0] + 1, dtype=indptr.dtype)
            np.cumsum(counts, out=sub_indptr[1:])
            sub_indices = indices[positions]
            sub_eids = None if eids is None else eids[positions]
            # read-only like a Graph's arrays, so the sample shares the run's numba signature: a writable
            # one is another specialisation, compiled inside the budget (17 s against 1.8 s at 4M edges)
            sub_indptr.setflags(write=False)
            sub_indices.setflags(write=False)
        self.nnz = int(sub_indptr[-1])
        weighted = task.weighting == "weighted"
        transposed = view.transposed
        self.w = None
        if weighted:
            # the transposed view gathers w[eids[p]] from all E weights; the forward one reads in order
            self.w = (rng.random((view.num_edges if transposed else self.nnz, 1)) + 0.5).astype(dtype)
            self.w.setflags(write=False)  # as the run passes it (Note [one signature] in kernels.py)
        self.eids = sub_eids if (weighted and transposed) else None
        if sub_eids is not None and self.eids is not None:
            self.eids.setflags(write=False)
        self.row_scale = self.col_scale = None
        if task.weighting == "gcn":
            self.row_scale = (rng.random(rows.shape[0]) + 0.5).astype(dtype)
            self.col_scale = (rng.random(view.num_cols) + 0.5).astype(dtype)
        if task.reduce == "mean":
            if transposed:
                inv = 1.0 / np.maximum(np.asarray(view.col_degree, dtype=np.float64), 1.0)
                self.col_scale = inv.astype(dtype) if self.col_scale is None else self.col_scale * inv.astype(dtype)
            else:
                inv = (1.0 / np.maximum(np.asarray(view.row_degree, dtype=np.float64), 1.0))[rows].astype(dtype)
                self.row_scale = inv if self.row_scale is None else self.row_scale * inv
        self.indptr, self.indices = sub_indptr, sub_indices
        self.prep = IsplibGraph("tuning", "", rows.shape[0], sub_indptr)
        # the features gathered are the same for every sample of one path: drawn once (Note [hard tuning budget])
        if x is None:
            x = rng.standard_normal((view.num_cols, task.width)).astype(dtype)
            x.setflags(write=False)  # as the run passes it (Note [one signature] in kernels.py)
        self.x = x
        self.out = line_aligned_empty((rows.shape[0], task.width), dtype)  # so streaming stores can be timed
        self.last_s = 0.0  # seconds the latest call took (what the next one is predicted to take)
        self.dummies = self.prep.dummies(view.index_dtype, dtype)
        del positions

    def fixed_ready(self) -> bool:
        """Whether this width's specialised kernel runs without compiling (Note [tuning budget])."""
        from gnnbench.systems.isplib.spmm_numba import spmm_rows_fixed

        line = 64 // self.x.dtype.itemsize
        kernel = spmm_rows_fixed(self.x.shape[1], line)
        d = self.dummies
        args = (self.indptr, self.indices, d.index if self.eids is None else self.eids, True,
                d.weight if self.w is None else self.w, True, self.x, self.out,
                d.vector if self.row_scale is None else self.row_scale, True,
                d.vector if self.col_scale is None else self.col_scale, True,
                self.prep.bounds("nnz", 1), 4, 16, line, d.one, False)
        dispatcher = kernel.twin(*args)  # the serial or parallel twin this call runs (Note [serial below a size])
        try:  # this exact signature, compiled in this process or in numba's disk cache; a failure means "not known"
            sig = tuple(numba.typeof(a) for a in args)
            return sig in dispatcher.overloads or dispatcher._cache.load_overload(sig, dispatcher.targetctx) is not None
        except Exception:  # noqa: BLE001
            return False

    def run(self, v: Variant) -> np.ndarray:
        t0 = _clock()
        run_variant(v, self.prep.bounds_for(v), self.indptr, self.indices, self.eids, self.w, self.x, self.out,
                    self.row_scale, self.col_scale, self.dummies)
        self.last_s = _clock() - t0
        return self.out


class _Deadline:
    """When tuning must stop (Note [hard tuning budget]); ``None`` seconds never stops.

    Args:
        seconds: from now on :data:`_clock`, or None for no limit.
    """

    def __init__(self, seconds: float | None):
        self.end = None if seconds is None else _clock() + max(0.0, seconds)

    @property
    def bounded(self) -> bool:
        return self.end is not None

    def left(self) -> float:
        """Seconds left (``inf`` without a limit)."""
        return float("inf") if self.end is None else max(0.0, self.end - _clock())

    def allows(self, seconds: float) -> bool:
        """Whether something predicted to take ``seconds`` still ends in time."""
        return self.end is None or _clock() + seconds <= self.end

    def within(self, seconds: float) -> "_Deadline":
        """A deadline ``seconds`` from now, but never later than this one."""
        d = _Deadline(None)
        d.end = _clock() + max(0.0, seconds) if self.end is None else min(self.end, _clock() + max(0.0, seconds))
        return d


_UNLIMITED = _Deadline(None)


def _time_variants(variants: list[Variant], case: _Case, reps: int, check,
                   deadline: _Deadline = _UNLIMITED, warmed: Iterable[str] = ()) -> dict[str, float]:
    """Median ms per variant over ``reps`` interleaved rounds, after one checked untimed call each.

    Variants in ``warmed`` (labels) already ran on ``case`` and are not called
    untimed again. Under a ``deadline`` no call starts that the case's latest
    call says would end after it (Note [hard tuning budget]); a variant with
    no timed round is left out of the result.
    """
    warmed = set(warmed)
    ready = []
    for v in variants:
        if v.label not in warmed:
            if not deadline.allows(case.last_s):
                continue
            check(v, case.run(v))
        ready.append(v)
    samples: dict[str, list[float]] = {v.label: [] for v in ready}
    for _ in range(reps):
        for v in ready:
            if not deadline.allows(case.last_s):
                break
            case.run(v)
            samples[v.label].append(case.last_s * 1e3)
        else:
            continue
        break
    return {k: float(np.median(s)) for k, s in samples.items() if s}


def _probe_ms_per_nnz(case: _Case, default: Variant) -> float:
    """Milliseconds per nonzero of the path's ``default`` variant on ``case`` (second of two calls)."""
    case.run(default)
    case.run(default)
    return case.last_s * 1e3 / max(case.nnz, 1)


def _tune_one(task: TuneTask, reps: int, rng: np.random.Generator, busy: bool, budget_s: float | None):
    """``(chosen, {label: ms}, default ms, sample nonzeros)`` for one kernel path (Note [tuning budget]).

    Under a budget the path stops when it runs out (Note [hard tuning budget]).
    """
    return _tune_within(task, reps, rng, busy, _Deadline(budget_s))


def _tune_within(task: TuneTask, reps: int, rng: np.random.Generator, busy: bool, deadline: _Deadline):
    total_nnz = int(task.view.indptr[-1])
    default = default_variant(total_nnz, task.width)  # what the run uses untuned (Note [untuned default])
    confirm_s = 0.0
    if not deadline.bounded:
        candidates = _stage_one(default)
        case = _Case(task, _FULL_SAMPLE_NNZ, rng)
        reference = case.run(default).copy()
    else:
        reps = _BUDGET_REPS
        probe = _Case(task, _MIN_SAMPLE_NNZ, rng)
        if default.kernel == "fixed" and not probe.fixed_ready():
            # not compiled: the run this tunes for compiled it in its first epoch; a bare call must not pay for it
            default = default_variant()
        candidates = _stage_one(default)
        ms_per_nnz = max(_probe_ms_per_nnz(probe, default), 1e-12)
        # the whole-graph confirmation (two variants, _CONFIRM_REPS rounds, no untimed call) is reserved up front
        if probe.nnz < total_nnz:
            confirm_s = 2 * _CONFIRM_REPS * ms_per_nnz * total_nnz / 1e3
        left_ms = max(0.0, deadline.left() - confirm_s) * 1e3
        # stage one gets 3/4 of what is left; (reps + 1) calls per candidate, the default's first is done
        calls = len(candidates) * (reps + 1)
        target = int(0.75 * left_ms / calls / ms_per_nnz)
        if target < _MIN_SAMPLE_NNZ:
            keep = int(0.75 * left_ms / ((reps + 1) * _MIN_SAMPLE_NNZ * ms_per_nnz))
            candidates = candidates[:max(2, keep)]
            target = _MIN_SAMPLE_NNZ
        case = probe if target <= probe.nnz or probe.nnz >= total_nnz else _Case(task, target, rng, x=probe.x)
        del probe
        reference = (case.out if case.last_s else case.run(default)).copy()
        if not case.fixed_ready():
            candidates = [v for v in candidates if v.kernel != "fixed"]
    dtype = np.dtype(task.dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-10

    def check(v: Variant, got: np.ndarray) -> None:
        if not np.allclose(got, reference, rtol=tol, atol=tol * max(1.0, float(np.abs(reference).max(initial=0)))):
            raise AssertionError(f"isplib variant {v.label} disagrees with the default variant on {task.key}")

    searching = deadline.within(deadline.left() - confirm_s) if deadline.bounded else deadline
    t0 = _clock()
    first = _time_variants(candidates, case, reps, check, searching, warmed=(default.label,))
    spent = _clock() - t0
    second: dict[str, float] = {}
    second_candidates: list[Variant] = []
    if default.label in first:
        best = next(v for v in candidates if v.label == min(first, key=first.get))
        second_candidates = [v for v in _stage_two(best, busy) if v.label not in first]
        if deadline.bounded:
            # stage two on what is left: each candidate costs about what a stage-one one did
            per = spent / max(len(first), 1)
            second_candidates = second_candidates[:int(searching.left() // max(per, 1e-9))]
        if second_candidates:
            second = _time_variants(second_candidates, case, reps, check, searching)
        ranked = {**first, **second}
        best = next(v for v in candidates + second_candidates if v.label == min(ranked, key=ranked.get))
        third_candidates = [v for v in _stage_three(best, task) if v.label not in ranked]
        if third_candidates:
            # against the best in the same rounds: the gain is a few per cent, less than the drift between stages
            pair = _time_variants([best] + third_candidates, case, reps, check, searching, warmed=(best.label,))
            for v in third_candidates:
                if v.label in pair and pair.get(best.label):
                    second[v.label] = ranked[best.label] * pair[v.label] / pair[best.label]
            second_candidates += third_candidates
    times = {**first, **second}
    label = default.label
    if default.label in times:  # no default time, no evidence: the default stays
        best_label = min(times, key=times.get)
        if times[best_label] <= (1 - _MARGIN) * times[default.label]:
            label = best_label  # beyond noise of the default
    chosen = next(v for v in candidates + second_candidates if v.label == label)
    if deadline.bounded and chosen != default and case.nnz < total_nnz:
        chosen = _confirmed_on_whole_graph(task, chosen, default, rng, case.x, deadline)
    return chosen, times, times.get(default.label, float("nan")), case.nnz


def _confirmed_on_whole_graph(task: TuneTask, chosen: Variant, default: Variant, rng: np.random.Generator,
                              x: np.ndarray, deadline: _Deadline = _UNLIMITED) -> Variant:
    """``chosen`` if it beats the path's ``default`` on every row of the graph too, else ``default``.

    Note [confirm on the whole graph]
        A budgeted search times sampled rows, called again and again, so the
        rows they gather stay warm in the caches: a variant that gives up
        prefetching (``pf0``) can win on the sample and lose on the graph. So a
        sampled winner must also beat the default over the whole graph, in
        :data:`_CONFIRM_REPS` interleaved rounds (each variant already matched
        the default on the sample), before it is cached. The calls are a few
        full SpMMs: 0.1-0.3 s at 4M edges, a few seconds at 64M.

        What prompted it, and what it did not explain: two first-use GCN runs
        at 4M edges on a quiet machine chose ``generic/u8/pf0`` and
        ``generic/u4/pf32`` for the same path and their kernels' epoch times
        were nearly two to one. With this check every sampled winner fell back
        to the default, and the slow kernel time stayed: the gap is not the
        variant. The same campaign under glibc's malloc was as slow with the
        default variant, so the suspect is how the process's pages are mapped
        (the feature rows the kernels gather; this machine's transparent huge
        pages are ``madvise`` only), not the tuner. Measured:
        ``results/studies/isplib-kernels.md``; issue 19's note has the rest.
    """
    whole = _Case(task, int(task.view.indptr[-1]), rng, x=x)  # every row: no copy of the graph
    both = [default, chosen]  # both ran on the sample already: no untimed call (Note [hard tuning budget])
    ms = _time_variants(both, whole, _CONFIRM_REPS, None, deadline, warmed=[v.label for v in both])
    if chosen.label not in ms or default.label not in ms:
        return default  # the budget ran out before both were timed: nothing is confirmed
    return chosen if ms[chosen.label] <= (1 - _MARGIN) * ms[default.label] else default


def tune_keys(tasks: Iterable[TuneTask], *, budget_s: float | None = None, reps: int = 5,
              cache_path: str | os.PathLike | None = None, seed: int = 0,
              progress: Callable[[str], None] | None = None) -> TuneResult:
    """Tune each kernel path of ``tasks`` and store the winners (Notes [tuning search], [tuning budget]).

    Args:
        tasks: :class:`TuneTask` items, all views of one graph.
        budget_s: seconds for all tasks together, shared equally; None for an
            unbounded search (default: None).
        reps: timed rounds per variant without a budget (default: 5).
        cache_path: tuning cache file (default: :func:`~gnnbench.systems.isplib.tuning_cache.cache_file`).
        seed: for the random features timed on.
        progress: called with one line before each task (default: silent).

    Returns:
        :class:`TuneResult`; the choices are also in the cache under the current thread count.
    """
    tasks = list(tasks)
    if not tasks:
        raise UserError("isplib tune was given nothing to tune")
    if reps < 1:
        raise UserError(f"isplib tune needs reps >= 1 (got {reps})")
    if budget_s is not None and budget_s <= 0:
        raise UserError(f"isplib tune needs a positive time budget (got {budget_s} s)")
    t0 = _clock()
    deadline = _Deadline(budget_s)
    load = _load()
    rng = np.random.default_rng(seed)
    path = cache_file(cache_path)
    threads = numba.get_num_threads()
    signature = graph_key(tasks[0].view.graph)  # a block's class (Note [block classes])
    choices: dict[tuple, Variant] = {}
    times: dict[tuple, dict[str, float]] = {}
    default_ms: dict[tuple, float] = {}
    sample_nnz: dict[tuple, int] = {}
    entries: dict[str, dict[str, Any]] = {}
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    skipped: list[tuple] = []
    narrow: list[tuple] = []
    nnz_of = {t.key: int(t.view.indptr[-1]) for t in tasks}
    if budget_s is not None:  # Note [hard tuning budget]: narrow paths are a small share of the kernel time
        widest = max(t.width for t in tasks)
        narrow = [t.key for t in tasks if t.width < _SMALL_WIDTH * widest]
        tasks = [t for t in tasks if t.key not in narrow]
    weights = [float(t.width) for t in tasks]  # a path's kernel time grows with its width (same nonzeros)
    for n, task in enumerate(tasks):
        share = None
        if budget_s is not None:
            share = deadline.left() * weights[n] / sum(weights[n:])
            if share < _MIN_SHARE_S:
                skipped.append(task.key)
                continue
        if progress is not None:
            budget = "" if share is None else f", {share:.1f} s"
            progress(f"isplib: tuning {n + 1}/{len(tasks)} {':'.join(map(str, task.key))}{budget}")
        key = task.key
        mine = deadline if share is None else deadline.within(share)
        chosen, t, d, nnz = _tune_within(task, reps, rng, _busy(load), mine)
        if chosen.label not in t:  # the budget ran out before the default was timed: nothing to store
            skipped.append(key)
            continue
        choices[key], times[key], default_ms[key], sample_nnz[key] = chosen, t, d, nnz
        entries[entry_key(*key, threads)] = {"variant": chosen.as_dict(), "ms": t[chosen.label], "default_ms": d,
                                             "sample_nnz": nnz, "tuned_at": stamp, "load_avg": max(load, _load())}
    for key in narrow:  # cached as the default, so a later run does not tune them (Note [hard tuning budget])
        entries[entry_key(*key, threads)] = {"variant": default_variant(nnz_of[key], key[3]).as_dict(), "ms": None,
                                             "default_ms": None,
                                             "narrow": True, "tuned_at": stamp}
    if entries:
        store(path, signature, entries)
    return TuneResult(signature, cpu_fingerprint(), choices, times, default_ms, sample_nnz,
                      _clock() - t0, str(path), max(load, _load()), budget_s, threads, tuple(skipped),
                      tuple(narrow))


def tune(graph: Graph, widths: Iterable[int], dtype: Any = np.float32, *, reps: int = 5,
         cache_path: str | os.PathLike | None = None, seed: int = 0,
         weightings: Iterable[str] = ("unweighted", "weighted"), budget_s: float | None = None,
         progress: Callable[[str], None] | None = None) -> TuneResult:
    """Tune both orientations of ``graph`` for each width and weighting, sum reduce (``gnnbench tune``).

    Args:
        graph: the graph the kernels will run on (its index dtype is used).
        widths: flattened feature widths ``H * D`` to tune for, e.g. ``[64, 16]``.
        dtype: float32 or float64 (default: float32).
        reps: timed rounds per variant; the median decides (default: 5).
        cache_path: tuning cache file (default: :func:`~gnnbench.systems.isplib.tuning_cache.cache_file`).
        seed: for the random features timed on.
        weightings: kernel paths to tune (Note [tuning key]) (default: unweighted and weighted).
        budget_s: seconds for everything, None for unbounded (default: None).
        progress: called with one line per kernel path.

    Returns:
        :class:`TuneResult`; the chosen variants are also in the cache, where
        :func:`~gnnbench.systems.isplib.prepared.prepare` finds them. A run
        tunes what it misses by itself (:mod:`~gnnbench.systems.isplib.first_use`).
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise UserError(f"isplib tunes float32 or float64 kernels (got {dtype}); pass --dtype float32")
    widths = sorted({int(w) for w in widths})
    if not widths or widths[0] < 1:
        raise UserError(f"isplib tune needs positive feature widths H*D (got {widths})")
    weightings = tuple(weightings)
    bad = [w for w in weightings if w not in WEIGHTINGS]
    if bad or not weightings:
        raise UserError(f"isplib tune weightings must be among {WEIGHTINGS} (got {weightings})")
    tasks = [TuneTask(graph.view(transposed=t), weighting, "sum", width, dtype.name)
             for t in (False, True) for weighting in weightings for width in widths]
    return tune_keys(tasks, budget_s=budget_s, reps=reps, cache_path=cache_path, seed=seed, progress=progress)
