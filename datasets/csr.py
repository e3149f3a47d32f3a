"""Bounded-memory CSR building for graphs of 100M+ edges: edge chunks in, symmetric CSR out.

:func:`symmetric_graph` in :mod:`.dataset` builds a graph from whole edge
arrays; that holds several int64 copies of every edge at once (about 6 GB
more than needed at Reddit's 114.6M edges). The converters of the large
datasets use :class:`SymmetricCSRBuilder` instead.

Note [bounded conversion]
    One int64 key ``dst * N + src`` per directed edge is written into a single
    preallocated array while the source is read chunk by chunk (both
    directions, self loops dropped). The array is sorted in place, duplicates
    are squeezed out in place (chunk by chunk, never a second full array) and
    the indices are computed chunk by chunk. Peak: 8 bytes per directed edge
    for the keys plus 8 per distinct edge for the indices, i.e. 16 bytes per
    edge, 3.7 GB for Reddit, against about 40 for the whole-array path.

Note [reverse edge ids]
    Every dataset graph is symmetric (Note [dataset graph conventions]), so
    its CSR by source has the same ``indptr`` and ``indices`` as its CSR by
    destination; only ``edge_ids`` (the canonical id of the edge stored at
    each transposed position) is new. It is the stable order of the edges by
    source, which one counting-sort pass finds in O(E) (numba; 114M edges in
    about a second, where ``Graph._transpose``'s stable argsort takes tens of
    seconds and binary search per edge minutes). :func:`attach_transpose`
    hands the three arrays to :class:`Graph` so that neither the harness nor a
    system sorts 114M edges again.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gnnbench.runtime.graph import Graph

__all__ = ["SymmetricCSRBuilder", "reverse_edge_ids", "add_self_loops", "attach_transpose", "link_self_loops",
           "with_index_dtype", "CHUNK"]

#: Edges per chunk: 8M int64 temporaries are 64 MB each.
CHUNK = 1 << 23


class SymmetricCSRBuilder:
    """Collects edges chunk by chunk and builds a symmetric, duplicate-free, loop-free CSR.

    Args:
        num_nodes: ``N``.
        capacity: upper bound on the undirected edges that will be added
            (each takes two keys); the key array is allocated once.
    """

    def __init__(self, num_nodes: int, capacity: int):
        self.num_nodes = int(num_nodes)
        self._keys = np.empty(2 * int(capacity), dtype=np.int64)
        self._size = 0

    def add(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Add edges ``src[k] -- dst[k]`` (either orientation; both are stored)."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        keep = src != dst
        if not keep.all():
            src, dst = src[keep], dst[keep]
        m = src.shape[0]
        if self._size + 2 * m > self._keys.shape[0]:
            raise ValueError(f"more edges than the capacity of {self._keys.shape[0] // 2} given to the builder")
        n = self.num_nodes
        out = self._keys[self._size:self._size + 2 * m]
        np.multiply(dst, n, out=out[:m])
        out[:m] += src
        np.multiply(src, n, out=out[m:])
        out[m:] += dst
        self._size += 2 * m

    def build(self, index_dtype: Any = np.int64) -> Graph:
        """The graph (Note [bounded conversion]); the builder is spent."""
        keys = self._keys[:self._size]
        self._keys = None  # type: ignore[assignment]
        keys.sort()
        size = _squeeze_duplicates(keys)
        keys = keys[:size]
        n = self.num_nodes
        indptr = np.searchsorted(keys, np.arange(n + 1, dtype=np.int64) * n).astype(np.int64)
        indices = np.empty(size, dtype=index_dtype)
        for a in range(0, size, CHUNK):
            np.remainder(keys[a:a + CHUNK], n, out=indices[a:a + CHUNK], casting="unsafe")
        del keys
        return Graph(indptr, indices, n)


def _squeeze_duplicates(keys: np.ndarray) -> int:
    """Move the distinct values of sorted ``keys`` to its front, chunk by chunk; return their count."""
    if keys.size == 0:
        return 0
    write = 0
    previous = None
    for a in range(0, keys.shape[0], CHUNK):
        chunk = keys[a:a + CHUNK]
        first = np.empty(chunk.shape, dtype=np.bool_)
        first[0] = previous is None or chunk[0] != previous
        np.not_equal(chunk[1:], chunk[:-1], out=first[1:])
        previous = chunk[-1]  # read before this chunk's positions may be overwritten below
        kept = chunk[first]  # a copy, so writing into the prefix cannot disturb it
        keys[write:write + kept.shape[0]] = kept
        write += kept.shape[0]
    return write


def reverse_edge_ids(graph: Graph) -> np.ndarray:
    """The transpose's ``edge_ids``: canonical edge ids in order of (source, destination) (Note [reverse edge ids])."""
    counts = np.bincount(graph.indices, minlength=graph.num_nodes)
    start = np.zeros(graph.num_nodes, dtype=np.int64)
    np.cumsum(counts[:-1], out=start[1:])
    out = np.empty(graph.num_edges, dtype=graph.index_dtype)
    _counting_sort()(graph.indices, start, out)
    return out


_KERNEL: list[Any] = []


def _counting_sort() -> Any:
    """``out[next[s]++] = p`` for each position ``p`` with source ``s``, compiled once per process."""
    if not _KERNEL:
        import numba

        @numba.njit(nogil=True, cache=False)
        def place(indices, next_slot, out):  # pragma: no cover - compiled
            for p in range(indices.shape[0]):
                s = indices[p]
                out[next_slot[s]] = p
                next_slot[s] += 1

        _KERNEL.append(place)
    return _KERNEL[0]


def add_self_loops(graph: Graph) -> Graph:
    """``graph`` plus a self loop on every node, built row-wise (the same CSR as ``Graph.with_self_loops``).

    ``graph`` must have no self loops.
    """
    n, e = graph.num_nodes, graph.num_edges
    indptr = graph.indptr.astype(np.int64)
    # in each row, the loop goes after the neighbours smaller than the row's own id
    smaller = np.zeros(n, dtype=np.int64)
    for a in range(0, e, CHUNK):
        b = min(a + CHUNK, e)
        rows = np.searchsorted(indptr, np.arange(a, b), side="right") - 1
        smaller += np.bincount(rows[graph.indices[a:b] < rows], minlength=n)
    loop_at = indptr[:-1] + np.arange(n) + smaller
    is_loop = np.zeros(e + n, dtype=np.bool_)
    is_loop[loop_at] = True
    indices = np.empty(e + n, dtype=graph.index_dtype)
    indices[loop_at] = np.arange(n)
    indices[~is_loop] = graph.indices
    del is_loop
    new_indptr = indptr + np.arange(n + 1)
    return Graph(new_indptr, indices, n)


def attach_transpose(graph: Graph, edge_ids: np.ndarray) -> Graph:
    """Give symmetric ``graph`` its transpose without sorting (Note [reverse edge ids]).

    This fills the cache that :meth:`Graph.view` reads (``_cache["transpose"]``:
    ``indptr``, ``indices``, ``edge_ids`` by source); the arrays are exactly
    what ``Graph._transpose`` would compute.
    """
    idt = graph.index_dtype
    ids = edge_ids if edge_ids.dtype == idt else edge_ids.astype(idt)
    if ids.flags.writeable:
        ids.setflags(write=False)
    graph._cache["transpose"] = (graph.indptr, graph.indices, ids)
    return graph


def link_self_loops(graph: Graph, looped: Graph) -> None:
    """Make ``graph.with_self_loops()`` return ``looped`` (its own self-loop graph is itself)."""
    graph._cache["self_loops"] = looped
    looped._cache["self_loops"] = looped


def with_index_dtype(graph: Graph, dtype: Any) -> Graph:
    """``graph`` in ``dtype``, keeping a transpose and self-loop graph attached by this module."""
    out = graph.to_index_dtype(dtype)
    if out is graph:
        return out
    if "transpose" in graph._cache:
        attach_transpose(out, graph._cache["transpose"][2])
    looped = graph._cache.get("self_loops")
    if looped is not None and looped is not graph:
        converted = looped.to_index_dtype(dtype)
        if "transpose" in looped._cache:
            attach_transpose(converted, looped._cache["transpose"][2])
        link_self_loops(out, converted)
    return out
