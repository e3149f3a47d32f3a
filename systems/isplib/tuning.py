"""The isplib auto-tuner: time SpMM variants on the real graph and widths, cache the winner.

Note [tuning search]
    The space (:class:`~gnnbench.systems.isplib.variant.Variant`) is searched
    in two stages, since the loop shape and the work split are nearly
    independent:

    1. loop shape -- ``kernel x unroll x prefetch`` at all threads with the
       nonzero-balanced split;
    2. work split -- the best shape under every ``partition x threads``.
       On a busy machine (1-minute load above 3/4 of the cores) only all
       threads are tried: fewer threads win there because the others are
       preempted, and that choice would halve the speed once the machine is
       quiet again.

    Every candidate runs once untimed (this also compiles a width-specialised
    kernel), its output is checked against the default variant's, then all
    candidates run ``reps`` interleaved rounds so machine drift is shared; the
    winner has the smallest median, unless it beats the default variant by
    less than 2 % (noise on shared cores), in which case the default stays. Graphs whose transpose differs from
    themselves are tuned in both orientations (the backward runs on the
    transpose); symmetric ones reuse the forward choice.

Note [tuning cache]
    One JSON file, ``$GNNBENCH_CACHE/isplib-tuning.json`` (default
    ``~/.cache/gnnbench``)::

        {"version": 1, "machines": {FINGERPRINT: {SIGNATURE: {
            "forward:64:float32": {"variant": {...}, "ms": 21.3, "default_ms": 24.9,
                                    "tuned_at": "2025-..."}}}}}

    ``FINGERPRINT`` is CPU model, core count and numba version: a choice made
    on another machine or compiler is never reused. Writes merge into the
    current file under an ``flock`` and land by ``os.replace``, so concurrent
    tuners never leave a torn file.
"""
from __future__ import annotations

import datetime
import fcntl
import json
import os
import platform
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numba
import numpy as np

from gnnbench.errors import UserError
from gnnbench.graph import Graph
from gnnbench.systems.isplib.variant import KERNELS, PARTITIONS, Variant, default_variant, run_variant

__all__ = ["TuneResult", "tune", "cache_file", "cpu_fingerprint", "lookup", "CACHE_NAME"]

CACHE_NAME = "isplib-tuning.json"
_VERSION = 1


def cache_file(path: str | os.PathLike | None = None) -> Path:
    """The tuning cache file.

    ``path`` if given, else :data:`CACHE_NAME` in ``$GNNBENCH_CACHE`` (default ``~/.cache/gnnbench``).
    """
    if path is not None:
        return Path(path)
    root = os.environ.get("GNNBENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "gnnbench")
    return Path(root) / CACHE_NAME


def cpu_fingerprint() -> str:
    """``"<cpu model>|<n> cores|numba <version>"`` (Note [tuning cache])."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}|{os.cpu_count()} cores|numba {numba.__version__}"


# ------------------------------------------------------------------ cache I/O
_READ_CACHE: dict[str, tuple[tuple[int, int], dict]] = {}


def _read(path: Path) -> dict:
    """The parsed cache file (``{}`` when missing), re-read only when it changed."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return {}
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _READ_CACHE.get(str(path))
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise UserError(f"isplib tuning cache {path} is unreadable ({err}); delete it and rerun "
                        f"`gnnbench tune --system isplib`") from err
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        # an older or foreign layout: treat as empty, the next tune rewrites it
        data = {}
    _READ_CACHE[str(path)] = (stamp, data)
    return data


def lookup(signature: str, orientation: str, path: str | os.PathLike | None = None) -> dict[tuple[int, str], Variant]:
    """Tuned variants of one graph orientation on this CPU: ``{(width, dtype name): Variant}``."""
    data = _read(cache_file(path))
    graphs = data.get("machines", {}).get(cpu_fingerprint(), {})
    found: dict[tuple[int, str], Variant] = {}
    for key, entry in graphs.get(signature, {}).items():
        orient, width, dtype = key.split(":")
        if orient == orientation:
            found[(int(width), dtype)] = Variant.from_dict(entry["variant"])
    return found


def _store(path: Path, signature: str, entries: dict[str, dict[str, Any]]) -> None:
    """Merge ``entries`` for one graph into the cache file atomically (Note [tuning cache])."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(str(path) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
        except ValueError:
            data = {}
        if data.get("version") != _VERSION:
            data = {"version": _VERSION, "machines": {}}
        graph = data["machines"].setdefault(cpu_fingerprint(), {}).setdefault(signature, {})
        graph.update(entries)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    _READ_CACHE.pop(str(path), None)


# --------------------------------------------------------------------- tuning
@dataclass(frozen=True)
class TuneResult:
    """What :func:`tune` chose and measured.

    Args:
        signature: the graph's signature.
        fingerprint: :func:`cpu_fingerprint` of this machine.
        dtype: float dtype name.
        choices: ``(orientation, width) -> Variant`` stored in the cache.
        times_ms: ``(orientation, width) -> {variant label: median ms}``.
        default_ms: ``(orientation, width) -> median ms`` of the default variant.
        wall_time_s: time the whole tuning took, compilation included.
        cache_path: the cache file written.
        load_avg: the 1-minute load average at start and end of tuning, the
            larger one; above the core count the timings saw contention.
    """

    signature: str
    fingerprint: str
    dtype: str
    choices: dict[tuple[str, int], Variant]
    times_ms: dict[tuple[str, int], dict[str, float]] = field(repr=False)
    default_ms: dict[tuple[str, int], float]
    wall_time_s: float
    cache_path: str
    load_avg: float = 0.0

    @property
    def busy(self) -> bool:
        """Whether other processes competed for the cores while tuning (choices may not transfer)."""
        return _busy(self.load_avg)

    def speedup(self, orientation: str, width: int) -> float:
        """Default-variant time over chosen-variant time."""
        key = (orientation, width)
        return self.default_ms[key] / self.times_ms[key][self.choices[key].label]

    def __str__(self) -> str:
        """One line per (orientation, width): the winner, its time and its gain over the default."""
        lines = [f"isplib tuning of graph {self.signature} ({self.dtype}) on {self.fingerprint}"]
        for (orientation, width), v in sorted(self.choices.items()):
            ms, default = self.times_ms[(orientation, width)][v.label], self.default_ms[(orientation, width)]
            lines.append(f"  {orientation:<10} F={width:<5} {v.label:<28} {ms:8.2f} ms  "
                         f"(default {default:.2f} ms, {default / ms:.2f}x)")
        if self.busy:
            lines.append(f"  load average {self.load_avg:.1f} while tuning: other work competed for the cores, "
                         "so these choices may not hold on a quiet machine")
        lines.append(f"  cached in {self.cache_path}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature, "fingerprint": self.fingerprint, "dtype": self.dtype,
            "wall_time_s": self.wall_time_s, "cache_path": self.cache_path, "load_avg": self.load_avg,
            "busy": self.busy,
            "choices": [{"orientation": o, "width": w, "variant": v.as_dict(), "label": v.label,
                         "ms": self.times_ms[(o, w)][v.label], "default_ms": self.default_ms[(o, w)]}
                        for (o, w), v in sorted(self.choices.items())],
            "times_ms": {f"{o}:{w}": t for (o, w), t in sorted(self.times_ms.items())},
        }


#: A variant must beat the default by this fraction to replace it (timing noise on shared cores).
_MARGIN = 0.02


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


def _stage_one() -> list[Variant]:
    return [Variant(kernel=k, unroll=u, prefetch=pf, partition="nnz", threads=0)
            for k in KERNELS for u in (1, 4, 8) for pf in (0, 8, 16, 32)]


def _stage_two(best: Variant, busy: bool) -> list[Variant]:
    top = numba.get_num_threads()
    counts = [top] if busy else _thread_counts()
    return [Variant(best.kernel, best.unroll, best.prefetch, part, 0 if t == top else t)
            for part in PARTITIONS for t in counts]


def _time_variants(variants: list[Variant], run, reps: int, check) -> dict[str, float]:
    """Median ms per variant over ``reps`` interleaved rounds, after one checked untimed call each."""
    for v in variants:
        check(v, run(v))
    samples: dict[str, list[float]] = {v.label: [] for v in variants}
    for _ in range(reps):
        for v in variants:
            t0 = time.perf_counter()
            run(v)
            samples[v.label].append((time.perf_counter() - t0) * 1e3)
    return {k: float(np.median(s)) for k, s in samples.items()}


def _tune_one(view, width: int, dtype: np.dtype, reps: int, rng: np.random.Generator, busy: bool):
    from gnnbench.systems.isplib.prepared import IsplibGraph

    prep = IsplibGraph("tuning", "", view.num_rows, np.asarray(view.indptr),
                       row_degree=np.asarray(view.row_degree), col_degree=np.asarray(view.col_degree))
    x = rng.standard_normal((view.num_cols, width)).astype(dtype)
    out = np.empty((view.num_rows, width), dtype=dtype)
    dummies = prep.dummies(view.index_dtype, dtype)
    indptr, indices = np.asarray(view.indptr), np.asarray(view.indices)

    def run(v: Variant) -> np.ndarray:
        run_variant(v, prep.bounds_for(v), indptr, indices, None, None, x, out, None, None, dummies)
        return out

    default = default_variant()
    reference = run(default).copy()
    tol = 1e-4 if dtype == np.float32 else 1e-10

    def check(v: Variant, got: np.ndarray) -> None:
        if not np.allclose(got, reference, rtol=tol, atol=tol * max(1.0, float(np.abs(reference).max(initial=0)))):
            raise AssertionError(f"isplib variant {v.label} disagrees with the default variant on width {width}")

    first = _time_variants([default] + [v for v in _stage_one() if v != default], run, reps, check)
    best_label = min(first, key=first.get)
    best = next(v for v in [default] + _stage_one() if v.label == best_label)
    second = _time_variants([v for v in _stage_two(best, busy) if v.label not in first], run, reps, check)
    times = {**first, **second}
    label = min(times, key=times.get)
    if times[label] > (1 - _MARGIN) * times[default.label]:
        label = default.label  # within noise of the default: keep the default
    chosen = next(v for v in [default] + _stage_one() + _stage_two(best, busy) if v.label == label)
    return chosen, times, first[default.label]


def _is_symmetric(graph: Graph) -> bool:
    t = graph.view(transposed=True)
    return bool(np.array_equal(t.indptr, graph.indptr) and np.array_equal(t.indices, graph.indices))


def tune(graph: Graph, widths: Iterable[int], dtype: Any = np.float32, *, reps: int = 5,
         cache_path: str | os.PathLike | None = None, seed: int = 0) -> TuneResult:
    """Time the SpMM variants on ``graph`` for each width and store the winners (Note [tuning search]).

    Args:
        graph: the graph the kernels will run on (its index dtype is used).
        widths: flattened feature widths ``H * D`` to tune for, e.g. ``[64, 16]``.
        dtype: float32 or float64 (default: float32).
        reps: timed rounds per variant; the median decides (default: 5).
        cache_path: tuning cache file (default: :func:`cache_file`).
        seed: for the random features timed on.

    Returns:
        :class:`TuneResult`; the chosen variants are also in the cache, where
        :func:`~gnnbench.systems.isplib.prepared.prepare` finds them.
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise UserError(f"isplib tunes float32 or float64 kernels (got {dtype}); pass --dtype float32")
    widths = sorted({int(w) for w in widths})
    if not widths or widths[0] < 1:
        raise UserError(f"isplib tune needs positive feature widths H*D (got {widths})")
    if reps < 1:
        raise UserError(f"isplib tune needs reps >= 1 (got {reps})")
    t0 = time.perf_counter()
    load = _load()
    rng = np.random.default_rng(seed)
    path = cache_file(cache_path)
    orientations = ["forward"] if _is_symmetric(graph) else ["forward", "transposed"]
    choices: dict[tuple[str, int], Variant] = {}
    times: dict[tuple[str, int], dict[str, float]] = {}
    default_ms: dict[tuple[str, int], float] = {}
    entries: dict[str, dict[str, Any]] = {}
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for orientation in orientations:
        view = graph.view(transposed=orientation == "transposed")
        for width in widths:
            chosen, t, d = _tune_one(view, width, dtype, reps, rng, _busy(load))
            # a symmetric graph's transpose is itself: one timing serves both
            for o in ([orientation] if len(orientations) == 2 else ["forward", "transposed"]):
                choices[(o, width)], times[(o, width)], default_ms[(o, width)] = chosen, t, d
                entries[f"{o}:{width}:{dtype.name}"] = {"variant": chosen.as_dict(), "ms": t[chosen.label],
                                                        "default_ms": d, "tuned_at": stamp,
                                                        "load_avg": max(load, _load())}
    _store(path, graph.signature(), entries)
    return TuneResult(graph.signature(), cpu_fingerprint(), dtype.name, choices, times, default_ms,
                      time.perf_counter() - t0, str(path), max(load, _load()))
