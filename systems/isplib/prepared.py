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
    Where isplib's ``prepare`` time and its extra memory went at 16M-64M
    edges (profiled on the 16M-edge R-MAT graph with self loops, 16.5M
    edges; 2 shared cores under a load of 15-19, so absolute times are
    several times an idle machine's, ratios hold):

    * the transposed view, the backward's graph, was a stable ``argsort``
      of the sources: ``O(E log E)`` on one core, 28-31 s here against
      5.8-6.0 s for the counting sort that replaced it (Note [linear
      transpose] in :mod:`gnnbench.runtime.csr_transpose`), with 638 MiB of NumPy
      temporaries against 260 MiB, which is the output itself (indices and
      edge ids, int64). DGL builds the same CSC for its backward;
    * the graph signature (SHA-256 of the CSR, the tuning cache's key):
      1.5 s, linear, once per graph;
    * ``warm_up``, loading the kernels from numba's disk cache: 2.5 s, a
      constant, which is why isplib's prepare is worse relative to DGL's on
      small graphs than on large ones;
    * the forward and transposed ``IsplibGraph`` (row blocks, GCN factors):
      0.05 s each, ``N``-long arrays;
    * GCN's normalisation (``Graph.gcn_norm``), computed on the first
      forward, so inside the peak-memory window of the run: whole-array
      float32 arithmetic held about 28 bytes per edge of temporaries (445 MiB
      at 16M edges, 1.7 GiB at 64M) on top of the epoch's own peak, the
      extra memory isplib (and every kernel system running GCN with edge
      weights) showed over DGL, whose GraphConv scales nodes. Computed in
      row chunks it holds 88 MiB (the 4-byte result) and took 2.5 s against
      10.0 s.

    Head to head with DGL (issue 19 item 2; one fresh process per side,
    R-MAT graphs from ``gnnbench.datasets``, int64 indices, glibc malloc so
    that freed memory leaves the resident set; load 3.4-4.8 on 2 shared
    cores). isplib: both views, the signature, ``warm_up`` from numba's disk
    cache and both ``IsplibGraph``; DGL: ``dgl.graph`` from the edge arrays
    and ``create_formats_()`` (COO, CSR and CSC, what its first epoch
    builds). "held" is resident memory after, "peak" the high-water mark,
    both over the graph already loaded:

    ==========  ==================  ==================  =====================
    edges       isplib prepare      DGL construction    isplib's largest part
    ==========  ==================  ==================  =====================
    16M (2^20)  3.1-3.3 s, held     2.4 s, held         transpose 1.5-1.8 s,
                410 MiB, peak 507   523 MiB, peak 523   views' degrees 0.5 s
    64M (2^22)  20.8 s, held 1194   21.0 s, held 2020   transpose 13.2 s,
                MiB, peak 1638      MiB, peak 2084      degrees 4.3 s,
                                                        signature 1.4 s
    ==========  ==================  ==================  =====================

    So isplib's prepare is now on par with DGL's construction in time and
    holds 20-40 % less memory (it keeps no COO). What was left was the
    one-core counting sort of the transpose (about 200 ns an edge at 64M, a
    random 16-byte scatter per edge) and the out-degrees (``bincount`` over
    the indices). Both now run on every thread (Note [parallel transpose] in
    :mod:`gnnbench.runtime.csr_transpose`; ``Graph.out_degree`` reads the
    transpose's row lengths, or counts in parallel). Interleaved in one
    process (``benchmarks/bench_prepare.py``, graph with self loops, 2
    shared cores, load 1.4-4.0; 5 rounds, 3 at 64M; medians, ratios are
    medians of per-round ratios with their range):

    ==========  =====================  ==========================================
    edges       transpose, 1 core /    isplib prepare / DGL build
                parallel
    ==========  =====================  ==========================================
    4M          0.87x (0.83-0.92)      0.93x (0.87-0.99)
    16M         2.00x (1.78-2.27)      0.77x (0.68-1.27); 0.94 s against 1.23 s
    64M         1.93x (1.58-2.00)      0.76x (0.60-1.01); 7.3 s against 9.7 s,
                                       of which the transpose 3.4 s (6.4 s on one core)
    ==========  =====================  ==========================================

    At 4M the whole cursor array sits in cache and the extra passes of the
    parallel sort (histogram rows, column sums) cost what the second core
    gains on a loaded machine; from 16M the scatter's cache misses dominate
    and two cores halve it. A cold numba cache adds 30-55 s of compilation
    to the first prepare (``warm_up`` after a source change), a one-time cost
    DGL, being precompiled, never pays; a run reports it apart as
    ``extra.compile_time_s`` (Note [compile time apart] in
    :mod:`gnnbench.run.jit_clock`).

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

    SAGE's peak over dgl-native's (1.13x at 16M, 1.20x at 64M in
    ``results/scaling.md`` at commit cdbe2d9) was not the model's
    arithmetic, as this Note used to say, but the glue: every ``spmm`` kept
    its input ``x`` for a weight gradient an unweighted call never computes,
    so the ``[N, hidden]`` features SAGE (and GCN) transform before
    aggregating lived from forward to backward. Saving only what the
    gradients that will run read (Note [saved for backward] in
    :mod:`gnnbench.runtime.glue`) brought SAGE to 1.01x at 16M and 1.04x at
    64M (commit 4bf6e17), GCN from 0.77x / 0.69x to 0.69x / 0.67x.

    The mean's workspace is not at SAGE's peak either, as this Note said
    after commit 6c72a68 (1.07x at 64M, 3610 against 3387 MiB). One
    profiled epoch at 64M (``benchmarks/bench_memory_timeline.py``,
    ``results/memory_timeline.md``) puts the tensor peak of both systems in
    layer 2's weight gradient, with the same tensors alive: the dropped-out
    input (1 GiB), the ReLU and dropout outputs, two ``[N, 64]`` gradients
    and one ``[N, 8]``; 3136 MiB under isplib, 3144 under dgl-native. The
    workspace comes later, in layer 1's backward, when 1.5 GiB less is
    alive. What differs is what tcmalloc keeps mapped above the tensors,
    480 against 615 MiB in that run, and that share moves between
    processes: at commit a166460 four separate runs gave isplib 3605 / 3608
    and dgl-native 3757 / 3758 MiB, and the campaign at 34659dd 3608
    against 3759 (0.96x).

Note [resident graph]
    The graph a run trains on is a read-only memory map of the dataset
    cache (``datasets/cache.py``): file-backed 4 KiB pages, resident or not
    as the page cache decides. isplib's kernels read the CSR in place, every
    epoch, while dgl-native and pyg-native copy the graph into structures of
    their own in ``prepare``. ``benchmarks/bench_page_size.py`` timed the
    same SpMM with the indices read from the map against an anonymous copy
    (``results/page_size.md``, Reddit's shape, width 64, one process, 7
    interleaved rounds): 692 against 650 ms (1.07x), and 20.0 against 18.2
    ms on the 4M-edge R-MAT graph in a 3-round run not kept. So
    :func:`prepare` copies a mapped ``indptr`` and ``indices`` into the
    process's memory (:func:`resident`) and every kernel reads them through
    :meth:`IsplibGraph.csr`. The copy is ``prepare``'s and timed there: 2.4 s
    for Reddit's shape's 0.85 GiB of indices per view (page cache warm, this
    machine, most of it faulting in the fresh pages) in a probe; in a
    3-round campaign of ``benchmarks/bench_scaling.py`` on that shape at
    530d12f isplib's prepare took 3.0-3.1 s against 1.6 s before the copy
    and dgl-native's 9.7-10.5 s, and its epochs ran 1.10x / 1.05x / 1.18x
    dgl-native's (GCN / SAGE / GIN) against 1.07x / 0.92x / 1.22x the
    campaign before (both with the first-use process's huge pages of Note
    [allocator]; ``results/scaling_reddit.md`` has the campaign without
    them). At 4M edges prepare went from 0.41-0.42 to 0.43-0.51 s.
    Like DGL's own copy it is below the baseline a run's peak memory is
    measured from (Note [peak memory of isplib]), but where it lives still
    moved the peak: made with ``np.array`` (tcmalloc's heap, on 2 MiB pages
    as NumPy asks for large arrays), GIN at 16M edges peaked at 1398-1500
    MiB above the baseline against 1299-1320 without the copy (three runs
    of each, and two single in-process runs, 4-6 epochs; the baseline's
    anonymous memory 747 against 495 MiB, the copies' 252 MiB). So the
    copy is a private anonymous mapping of its own, outside the heap the
    epochs allocate from: 1303 MiB in the same probe, and in separate runs
    alternating with the code before the copy GIN 1299-1301 against
    1299-1301 and SAGE 1050 against 1048-1050 MiB. How the copy's place in
    the heap raised the epochs' peak (the tensors are the same) is not
    known; it is the allocator's share again (Note [peak memory of isplib]).
    Both views are mapped (the cache holds
    the transpose too); arrays already in memory (graphs built in the
    process, tests) are used as they are. The transposed view's edge ids
    stay where they are: only weighted paths read them.

    Where a mapped page comes from also moves between processes on this
    VM: it runs DAMON proactive reclaim (a ``pageout`` scheme over physical
    memory for regions idle 60 s, 128 MiB a second), which had paged out
    55 GiB by the 8th hour of uptime. A cached dataset idle for about a
    minute is read from disk again by the next process that maps it
    (the 64M-edge R-MAT graph, idle since the session before: 1.5 of its
    488 MiB of indices still cached); read every 8 s it stayed cached for
    150 s. So
    the map costs the first read, which the copy puts in ``prepare``, not
    the epochs.

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
