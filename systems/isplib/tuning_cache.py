"""isplib's tuning cache: the choices the tuner made, filed by machine, graph and kernel path.

:mod:`~gnnbench.systems.isplib.tuning` (the tuner) writes it; ``prepare``
(:mod:`~gnnbench.systems.isplib.prepared`) and PyG's patch read it. It sits
below both, so a prepared graph can look its choices up without the tuner,
and the tuner can build prepared graphs to time.

Note [tuning key]
    A choice holds for one kernel path only: ``orientation`` (forward, or the
    transposed view of the backward), ``weighting`` (``unweighted``;
    ``weighted``, a gathered per-edge weight; ``gcn``, GCN's weight run as
    node scales, Note [factorised weights]), ``reduce`` (``sum`` or ``mean``,
    which adds a row or gathered-row scale), the flattened width ``H * D``,
    the float dtype and the thread count. CPU model and compiler are the
    cache's machine fingerprint.

Note [tuning cache]
    One JSON file, ``$GNNBENCH_CACHE/isplib-tuning.json`` (default
    ``~/.cache/gnnbench``)::

        {"version": 6, "machines": {FINGERPRINT: {SIGNATURE: {
            "forward:unweighted:sum:64:float32:t2": {"variant": {...}, "ms": 21.3,
                                    "default_ms": 24.9, "tuned_at": "2025-..."}}}}}

    ``FINGERPRINT`` is CPU model, core count and numba version: a choice made
    on another machine or compiler is never reused. The entry key is Note
    [tuning key]. Files of another version are ignored and rewritten:
    version 1 keyed by orientation, width and dtype only; version 2 chose
    against the generic default, without the width-specialised kernel in
    reach, so its choices would now override a faster untuned default
    (Note [untuned default]); version 3 timed the width-specialised kernel
    before its rows became explicit vectors (Note [explicit row vectors]), up to
    2x slower at narrow widths, so it chose against the wrong kernel; version 4
    could not reach streaming stores (Note [streaming stores]); version 5's first-use tuning never saw the
    width-specialised kernel as compiled (its check asked the serial/parallel pair of Note [serial below a
    size] instead of the twin a call runs), so it chose among generic loops only and its choices override
    the faster specialised default. Writes merge into the current file under
    an ``flock`` and land by ``os.replace``, so concurrent tuners never leave
    a torn file.
"""
from __future__ import annotations

import fcntl
import functools
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

import numba

from gnnbench.errors import UserError
from gnnbench.systems.isplib.variant import Variant

__all__ = ["cache_file", "cpu_fingerprint", "lookup", "entry_key", "graph_key", "store", "CACHE_NAME", "WEIGHTINGS"]

CACHE_NAME = "isplib-tuning.json"
_VERSION = 6
#: Note [tuning key]
WEIGHTINGS = ("unweighted", "weighted", "gcn")


def cache_file(path: str | os.PathLike | None = None) -> Path:
    """The tuning cache file.

    ``path`` if given, else :data:`CACHE_NAME` in ``$GNNBENCH_CACHE`` (default ``~/.cache/gnnbench``).
    """
    if path is not None:
        return path if isinstance(path, Path) else Path(path)
    return _default_cache_file(os.environ.get("GNNBENCH_CACHE"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=8)
def _default_cache_file(root: str | None, home: str | None) -> Path:
    """:func:`cache_file`'s default for one ``$GNNBENCH_CACHE`` and ``$HOME`` (a sampled run asks per block)."""
    root = root or os.path.join(os.path.expanduser("~"), ".cache", "gnnbench")
    return Path(root) / CACHE_NAME


@functools.lru_cache(maxsize=1)
def cpu_fingerprint() -> str:
    """``"<cpu model>|<n> cores|numba <version>"`` (Note [tuning cache]).

    Read once per process: a sampled run looks its tuning up per block, and rereading ``/proc/cpuinfo``
    there was a fixed cost of every batch (issue 43); none of the three changes while a process runs.
    """
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


def entry_key(orientation: str, weighting: str, reduce: str, width: int, dtype: str, threads: int) -> str:
    """The cache entry name of one kernel path (Note [tuning key]), e.g. ``forward:gcn:sum:64:float32:t2``."""
    return f"{orientation}:{weighting}:{reduce}:{width}:{dtype}:t{threads}"


def graph_key(graph) -> str:
    """What the tuning cache files a graph's choices under: its signature, or a sampled block's class.

    Note [block classes]
        Sampled training meets new blocks every batch (issue 34), so tuning
        each is impossible and its signature would never be seen again. A
        block is filed under its class instead: ``block:r{R}:d{D}``, ``R`` its
        destination rows and ``D`` its mean in-degree, each rounded down to
        a power of two (the entry key adds the width, Note [tuning key]). The
        first block of a class met in a warm-up epoch is tuned (on first
        use, as a graph is) and every later block of the class, in this run
        or later ones, takes the class's choices in its ``prepare``; a block
        of an unseen class runs the default variant. Both orientations of a
        block share its class; the entry key names the orientation.
    """
    if not getattr(graph, "is_block", False):
        return graph.signature()
    rows = max(int(graph.num_nodes), 1)
    degree = max(graph.num_edges // rows, 1)
    return f"block:r{1 << (rows.bit_length() - 1)}:d{1 << (degree.bit_length() - 1)}"


def lookup(signature: str, orientation: str, path: str | os.PathLike | None = None,
           threads: int | None = None) -> dict[tuple[str, str, int, str], Variant]:
    """Tuned variants of one graph orientation on this CPU and thread count.

    Returns ``{(weighting, reduce, width, dtype name): Variant}`` (Note [tuning key]);
    ``threads`` defaults to numba's current thread count.
    """
    data = _read(cache_file(path))
    threads = numba.get_num_threads() if threads is None else threads
    return dict(_indexed(data, threads).get((signature, orientation), {}))


#: the last parsed cache file and its entries by (graph, orientation) for one thread count (a sampled run looks
#: up both orientations of every block it meets: parsing each entry again per block was most of a lookup)
_INDEX: dict[tuple[str, int], tuple[dict, dict[tuple[str, str], dict[tuple[str, str, int, str], Variant]]]] = {}


def _indexed(data: dict, threads: int) -> dict[tuple[str, str], dict[tuple[str, str, int, str], Variant]]:
    """This CPU's entries of ``data`` at ``threads``, by (graph key, orientation); built once per parsed file."""
    machine = cpu_fingerprint()
    hit = _INDEX.get((machine, threads))
    if hit is not None and hit[0] is data:
        return hit[1]
    index: dict[tuple[str, str], dict[tuple[str, str, int, str], Variant]] = {}
    for signature, entries in data.get("machines", {}).get(machine, {}).items():
        for key, entry in entries.items():
            parts = key.split(":")
            if len(parts) != 6:
                continue
            orient, weighting, reduce, width, dtype, t = parts
            if t == f"t{threads}":
                index.setdefault((signature, orient), {})[(weighting, reduce, int(width), dtype)] = (
                    Variant.from_dict(entry["variant"]))
    _INDEX[(machine, threads)] = (data, index)
    return index


def store(path: Path, signature: str, entries: dict[str, dict[str, Any]]) -> None:
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
