"""What isplib builds once per graph orientation before training: :class:`IsplibGraph`.

``prepare(view)`` runs outside the timed epochs. It computes the row blocks
every kernel distributes over threads, the inverse degrees a mean needs, and
loads this graph's entries from the tuning cache, so that a kernel call only
does a dict lookup (Note [tuning lookup]).

Note [balanced row blocks]
    Block boundaries split the cumulative cost ``indptr[i] + i`` (one unit per
    nonzero plus one per row for zeroing and writing the output row) into
    equal parts: ``searchsorted(indptr + arange, linspace(0, total, B + 1))``.
    On a power-law graph equal row counts can leave one thread with most hub
    rows; equal cost cannot, up to the size of the largest single row.

Note [prepare at scale]
    ``prepare`` is timed apart from the epochs, and at 16M-64M edges it was
    once isplib's weak point against DGL's graph construction. What it does
    and why each part is as it is: the transposed view (the backward's
    graph) is a counting sort run on every thread, not an ``argsort``
    (Note [linear transpose] and Note [parallel transpose] in
    :mod:`gnnbench.runtime.csr_transpose`); the graph signature (the tuning
    cache's key) is one linear pass; ``warm_up`` loads the kernels from
    numba's disk cache, a constant that weighs most on small graphs; the
    two ``IsplibGraph`` are ``N``-long arrays; GCN's normalisation is
    computed in row chunks, since whole-array arithmetic held about 28
    bytes an edge of temporaries inside the run's peak-memory window. A
    cold numba cache's compilation is the install's cost, not the graph's,
    and a run reports it apart (Note [compile time apart] in
    :mod:`gnnbench.run.jit_clock`). With all of this isplib's prepare is on
    par with DGL's construction in time and holds less memory (it keeps no
    COO). The profiles and the head-to-head tables:
    ``results/studies/isplib-prepared.md``; the campaign:
    ``benchmarks/bench_prepare.py``.

Note [peak memory of isplib]
    A run's peak is measured above the resident set after ``prepare``
    (Note [peak memory] in :mod:`gnnbench.run.environment`), so what
    ``prepare`` holds (both views, edge ids, degrees) is not in it. In the
    epochs isplib's kernels allocate nothing: outputs are the framework's,
    the mean's scales are ``N``-long (``inv_row_degree``,
    ``inv_col_degree``, built once), and unweighted paths never read the
    transposed view's edge ids; the mean's backward scales ``grad_out``
    into a workspace the framework allocates for the call (Note [mean
    backward] in :mod:`~gnnbench.systems.isplib.kernels`).

    What remains between isplib's peak and dgl-native's is not the kernels:
    the glue once kept every ``spmm``'s input for a weight gradient an
    unweighted call never computes (Note [saved for backward] in
    :mod:`gnnbench.runtime.glue` fixed it), and the rest is what the
    allocator keeps mapped above the same live tensors, a share that moves
    between processes. The measurements, with their commits:
    ``results/studies/isplib-prepared.md`` and ``results/memory_timeline.md``.

Note [resident graph]
    The graph a run trains on is a read-only memory map of the dataset
    cache (``datasets/cache.py``): file-backed 4 KiB pages, resident or not
    as the page cache decides, and this VM's proactive reclaim pages out a
    dataset idle for about a minute. isplib's kernels read the CSR in
    place, every epoch, while dgl-native and pyg-native copy the graph into
    structures of their own in ``prepare``; an SpMM reading the indices from
    the map was measurably slower than from an anonymous copy
    (``benchmarks/bench_page_size.py``, ``results/page_size.md``). So
    :func:`prepare` copies a mapped ``indptr`` and ``indices`` into the
    process's memory (:func:`resident`), timed as ``prepare``'s, and every
    kernel reads them through :meth:`IsplibGraph.csr`; the first read from
    disk lands in ``prepare``, not in the epochs. The copy is a private
    anonymous mapping of its own, outside the heap the epochs allocate
    from: made with ``np.array`` it raised GIN's peak above the baseline,
    though the tensors were the same (the allocator's share again, Note
    [peak memory of isplib]). Both views are mapped (the cache holds the
    transpose too); arrays already in memory (graphs built in the process,
    tests) are used as they are. The transposed view's edge ids stay where
    they are: only weighted paths read them. The figures:
    ``results/studies/isplib-prepared.md``.

Note [tuning lookup]
    Entries are keyed ``(weighting, reduce, width, dtype)`` within one
    orientation and thread count (Note [tuning key]), width ``H * D`` (the
    flattened feature width the SpMM loop sees). A miss is not an error: the
    kernel uses :func:`~gnnbench.systems.isplib.variant.default_variant`, the
    key joins ``pending`` (what a run tunes on first use, Note [tune on first
    use]) and ``tuned`` stays False so the harness can say so once
    (:func:`describe_tuning`). Lookups are memoised, so a kernel call costs
    one dict lookup.
"""
from __future__ import annotations

import mmap
import weakref
from dataclasses import dataclass, field

import numba
import numpy as np

from gnnbench.runtime.graph import GraphView
from gnnbench.systems.isplib import tuning_cache
from gnnbench.systems.isplib.factorised import GcnFactors
from gnnbench.systems.isplib.variant import Dummies, Variant, default_variant
from gnnbench.systems.isplib.warm import warm_up_fixed

__all__ = ["IsplibGraph", "prepare", "describe_tuning", "balanced_bounds", "row_bounds"]


def balanced_bounds(indptr: np.ndarray, num_blocks: int) -> np.ndarray:
    """Row block boundaries with equal ``nonzeros + rows`` per block (Note [balanced row blocks]).

    Args:
        indptr: ``[N + 1]`` CSR offsets.
        num_blocks: ``B >= 1``.

    Shapes:
        returns int64 ``[B + 1]``, non-decreasing, from 0 to ``N``.
    """
    n = indptr.shape[0] - 1
    cost = indptr.astype(np.int64) + np.arange(n + 1, dtype=np.int64)
    targets = np.arange(num_blocks + 1) * (cost[-1] / num_blocks)  # np.linspace's values, without its overhead
    bounds = np.searchsorted(cost, targets, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    return np.maximum.accumulate(bounds)


def row_bounds(num_rows: int, num_blocks: int) -> np.ndarray:
    """Equal-row-count block boundaries, int64 ``[B + 1]``."""
    return np.linspace(0, num_rows, num_blocks + 1).round().astype(np.int64)


@dataclass(eq=False)
class IsplibGraph:
    """isplib's per-orientation state, built by :func:`prepare`.

    Args:
        orientation: ``"forward"`` or ``"transposed"``.
        signature: ``Graph.signature()`` of the underlying graph.
        num_rows: rows of the view.
        indptr: the view's offsets (kept to build more block sets lazily).
        variants: tuned choice per ``(weighting, reduce, width, dtype name)``, or per
            ``(width, dtype name)`` for every path (Note [tuning lookup]).
        tuned: whether the tuning cache had any entry for this orientation.
        cache_path: the tuning cache file that was read.
    """

    orientation: str
    signature: str
    num_rows: int
    indptr: np.ndarray = field(repr=False)
    variants: dict[tuple, Variant] = field(default_factory=dict)
    tuned: bool = False
    cache_path: str = ""
    _bounds: dict[tuple[str, int], np.ndarray] = field(default_factory=dict, repr=False)
    _inv_row: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _inv_col: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _dummies: dict[tuple[np.dtype, np.dtype], Dummies] = field(default_factory=dict, repr=False)
    _lookup: dict[tuple, Variant] = field(default_factory=dict, repr=False)
    pending: set[tuple[str, str, int, str]] = field(default_factory=set, repr=False)
    row_degree: np.ndarray | None = field(default=None, repr=False)
    col_degree: np.ndarray | None = field(default=None, repr=False)
    _gcn: GcnFactors | None = field(default=None, repr=False)
    indices: np.ndarray | None = field(default=None, repr=False)

    def csr(self, view: GraphView) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)`` as the kernels read them: what :func:`prepare` made resident (Note [resident
        graph]), or ``view``'s own arrays for a state built without them (the tuner's samples, the PyG patch)."""
        if self.indices is None:
            return view.indptr, view.indices
        return self.indptr, self.indices

    # ------------------------------------------------------------------ lookups
    def used_variants(self) -> dict[tuple, Variant]:
        """The kernel paths asked for since the choices last changed, and their variants (an unused view: none)."""
        return dict(self._lookup)

    def variant(self, width: int, dtype: np.dtype, weighting: str = "unweighted", reduce: str = "sum",
                record: bool = True) -> Variant:
        """The tuned variant of one kernel path (Note [tuning key]), or the default.

        A miss with ``record`` joins :attr:`pending` (Note [tune on first use]).
        """
        key = (weighting, reduce, width, dtype)
        v = self._lookup.get(key)
        if v is None:
            v = self.variants.get((weighting, reduce, width, dtype.name)) or self.variants.get((width, dtype.name))
            if v is None:
                v = default_variant(int(self.indptr[-1]), width)  # Note [untuned default]
                if record:
                    self.pending.add((weighting, reduce, width, dtype.name))
            self._lookup[key] = v
        return v

    def set_variants(self, variants: dict[tuple, Variant]) -> None:
        """Replace the tuned choices (keys as :attr:`variants`; e.g. to force one in a test)."""
        self.variants = dict(variants)
        self.tuned = bool(variants)
        self._lookup.clear()
        for v in variants.values():
            self.bounds_for(v)

    def add_variants(self, variants: dict[tuple[str, str, int, str], Variant]) -> None:
        """Merge freshly tuned choices (what first-use tuning found) and drop them from :attr:`pending`."""
        self.variants = {**self.variants, **variants}
        self.tuned = bool(self.variants)
        self.pending.difference_update(variants)
        self._lookup.clear()
        for v in variants.values():
            self.bounds_for(v)

    def bounds(self, partition: str, num_blocks: int) -> np.ndarray:
        """Row blocks for a partition kind, computed once per (kind, count)."""
        key = ("rows" if partition == "rows" else "nnz", num_blocks)
        b = self._bounds.get(key)
        if b is None:
            b = (row_bounds(self.num_rows, num_blocks) if key[0] == "rows"
                 else balanced_bounds(self.indptr, num_blocks))
            self._bounds[key] = b
        return b

    def bounds_for(self, variant: Variant) -> np.ndarray:
        threads = numba.get_num_threads() if variant.threads <= 0 else min(variant.threads,
                                                                            numba.get_num_threads())
        return self.bounds(variant.partition, variant.num_blocks(threads))

    def default_bounds(self) -> np.ndarray:
        """Nonzero-balanced blocks, 4 per thread, for the non-SpMM kernels (Note [edge kernel blocks])."""
        return self.bounds("nnz", 4 * numba.get_num_threads())

    def inv_row_degree(self, dtype: np.dtype) -> np.ndarray:
        """``1 / max(row_degree, 1)`` in ``dtype`` (the mean's row scale)."""
        a = self._inv_row.get(dtype.name)
        if a is None:
            a = self._inv_row[dtype.name] = (1.0 / np.maximum(self.row_degree.astype(np.float64), 1.0)).astype(dtype)
        return a

    def inv_col_degree(self, dtype: np.dtype) -> np.ndarray:
        """``1 / max(col_degree, 1)`` in ``dtype`` (the mean backward's gathered-row scale)."""
        a = self._inv_col.get(dtype.name)
        if a is None:
            a = self._inv_col[dtype.name] = (1.0 / np.maximum(self.col_degree.astype(np.float64), 1.0)).astype(dtype)
        return a

    def gcn_factors(self, weight: np.ndarray) -> GcnFactors | None:
        """This view's scales if ``weight`` is its graph's GCN normalisation, else None (Note [factorised weights])."""
        return self._gcn if self._gcn is not None and self._gcn.matches(weight) else None

    def dummies(self, index_dtype: np.dtype, float_dtype: np.dtype) -> Dummies:
        key = (index_dtype, float_dtype)
        d = self._dummies.get(key)
        if d is None:
            d = self._dummies[key] = Dummies.make(index_dtype, float_dtype)
        return d


def prepare(view: GraphView, cache_path: str | None = None) -> IsplibGraph:
    """Build :class:`IsplibGraph` for one orientation (called once, outside the timed epochs).

    Computes the default row blocks, loads the tuning entries of this graph
    and CPU, and loads (from numba's disk cache) any width-specialised kernel
    a tuned entry names, so no compilation happens inside an epoch.

    Args:
        view: the forward or transposed :class:`~gnnbench.runtime.graph.GraphView`.
        cache_path: tuning cache file (default: ``$GNNBENCH_CACHE`` or
            ``~/.cache/gnnbench``, ``isplib-tuning.json``).
    """
    orientation = "transposed" if view.transposed else "forward"
    signature = tuning_cache.graph_key(view.graph)  # a sampled block: its class (Note [block classes])
    path = tuning_cache.cache_file(cache_path)
    entries = tuning_cache.lookup(signature, orientation, path)
    prepared = IsplibGraph(orientation, signature, view.num_rows, resident(np.asarray(view.indptr)),
                           variants=entries, tuned=bool(entries), cache_path=str(path),
                           row_degree=np.asarray(view.row_degree), col_degree=np.asarray(view.col_degree),
                           indices=resident(np.asarray(view.indices)))
    if view.transposed:  # only the backward's view factorises (Note [factorised weights])
        prepared._gcn = GcnFactors(view.graph, True, 4 * numba.get_num_threads())
    prepared.default_bounds()
    for (_weighting, _reduce, width, _dtype), v in entries.items():
        prepared.bounds_for(v)
        if v.kernel == "fixed":
            warm_up_fixed(view.index_dtype, np.dtype(_dtype), width)
    return prepared


def describe_tuning(prepared: IsplibGraph | None, *, after_run: bool = False) -> str:
    """One line saying which SpMM variants a prepared graph will use, or, ``after_run``, which it used.

    Before a run, e.g. ``"isplib: no tuning cache entry for this graph (...); using the default
    variant generic/u4/pf16/nnz/tmax (...)"``. After it, each kernel path the epochs ran, with its
    variant and whether it was tuned, e.g. ``"the forward graph 2d27... ran
    unweighted:sum:16:float32 fixed/u4/pf16/nnz/tmax (tuned)"``. GAT's per-head path (``heads``)
    is never tuned: it takes the default's loop, with only prefetch and threads chosen.
    """
    if prepared is None:
        return "isplib: graph not prepared; using the default SpMM variant"
    if after_run:
        return _describe_used(prepared)
    if not prepared.tuned:
        return (f"isplib: no tuning cache entry for this graph ({prepared.signature}, {prepared.orientation}) "
                f"in {prepared.cache_path}; using the default variant "
                f"{default_variant(int(prepared.indptr[-1]), 1).label} "
                f"(a run tunes what it uses on first use unless --no-tune)")
    chosen = ", ".join(f"{':'.join(map(str, k))}: {v.label}" for k, v in sorted(prepared.variants.items(), key=str))
    return f"isplib: tuned variants for {prepared.orientation} graph {prepared.signature}: {chosen}"


def _describe_used(prepared: IsplibGraph) -> str:
    """:func:`describe_tuning` after a run: the paths its kernels looked up, tuned or not."""
    used = prepared.used_variants()
    if not used:
        return (f"no SpMM ran on the {prepared.orientation} graph (inference runs forward passes only), "
                f"so nothing was tuned for it")
    paths, untuned = [], False
    for (weighting, reduce, width, dtype), v in sorted(used.items(), key=str):
        tuned = ((weighting, reduce, width, dtype.name) in prepared.variants
                 or (width, dtype.name) in prepared.variants)
        never = weighting == "heads"
        untuned |= not (tuned or never)
        state = "tuned" if tuned else "default, never tuned" if never else "default"
        paths.append(f"{weighting}:{reduce}:{width}:{dtype.name} {v.label} ({state})")
    why = (f"; a default path has no tuning cache entry in {prepared.cache_path} "
           f"(a run tunes what it uses on first use unless --no-tune)") if untuned else ""
    return f"the {prepared.orientation} graph {prepared.signature} ran {', '.join(paths)}{why}"


def _memory_mapped(array: np.ndarray) -> bool:
    """Whether ``array``'s memory is a file mapping (``np.load(mmap_mode=...)``, the dataset cache)."""
    while array is not None:
        if isinstance(array, np.memmap):
            return True
        array = getattr(array, "base", None)
    return False


def resident(array: np.ndarray) -> np.ndarray:
    """``array``, or a read-only copy in this process's own memory if it is a file mapping (Note [resident graph]).

    The copy is a private anonymous mapping of its own, outside the allocator's heap (Note [resident graph]).
    """
    if not _memory_mapped(array):
        return array
    pages = mmap.mmap(-1, max(array.nbytes, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    copy = np.frombuffer(pages, dtype=array.dtype, count=array.size).reshape(array.shape)
    copy[...] = array
    copy.setflags(write=False)  # the graph's arrays are read-only: one numba signature (Note [one signature])
    return copy


def _as_prepared(view: GraphView) -> IsplibGraph:
    """``view.prepared`` if it is ours, else a state built once per view object (not timed apart)."""
    p = view.prepared
    if isinstance(p, IsplibGraph):
        return p
    p = _FALLBACK.get(view)
    if p is None:
        p = _FALLBACK[view] = prepare(view)
    return p


# views that reached a kernel without prepare() (tests, ad-hoc calls)
_FALLBACK: "weakref.WeakKeyDictionary[GraphView, IsplibGraph]" = weakref.WeakKeyDictionary()
