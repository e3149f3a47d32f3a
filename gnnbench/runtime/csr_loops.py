"""A graph's CSR with a self loop on every destination that lacks one, in one pass, for ``Graph.with_self_loops``.

Note [self loops in one pass]
    ``with_self_loops`` rebuilt the graph with ``Graph.from_edges``: every
    edge and the new loops through a lexicographic sort by (destination,
    source), ``O(E log E)``. On a sampled batch's blocks that sort was most
    of what GCN's and GAT's block preparation cost, for every system alike,
    where SAGE, which takes no loops, prepared its blocks in a fraction of
    the time. The destinations are already in order;
    only each row needs its loop. One pass copies every row into its place
    in the longer arrays, inserts the loop where the row's order puts it
    (a sorted row stays sorted: a full graph's rows are), and sorts a row
    only when it was not sorted (a sampled block's rows come in draw order).
    The result is ``from_edges``'s exactly: the same rows, each sorted by
    source, duplicates kept.

    An unsorted row is sorted in place: by insertion up to
    :data:`INSERTION_LIMIT` entries (a sampled row is a fanout long), by
    ``ndarray.sort`` above it. ``np.sort`` copied every row it sorted, and
    ogbn-products' shape has outer blocks of tens of thousands of short
    rows: sorting in place was about three times as fast on those and no
    slower on long rows. Measured: ``results/studies/runtime-notes.md``.
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["add_self_loops", "INSERTION_LIMIT"]

#: longest unsorted row sorted by insertion; longer ones use ``ndarray.sort`` (Note [self loops in one pass])
INSERTION_LIMIT = 32


@numba.njit(cache=True)
def _fill(indptr, indices, missing, out_indptr, out_indices):
    for i in range(indptr.shape[0] - 1):
        a, b, o = indptr[i], indptr[i + 1], out_indptr[i]
        ordered = True
        for k in range(a, b):
            out_indices[o + k - a] = indices[k]
            if k > a and indices[k] < indices[k - 1]:
                ordered = False
        end = o + (b - a)
        if missing[i]:
            p = end
            if ordered:  # shift the larger sources right: the row stays sorted
                while p > o and out_indices[p - 1] > i:
                    out_indices[p] = out_indices[p - 1]
                    p -= 1
            out_indices[p] = i
            end += 1
        if not ordered and end - o <= INSERTION_LIMIT:
            for k in range(o + 1, end):
                value, j = out_indices[k], k - 1
                while j >= o and out_indices[j] > value:
                    out_indices[j + 1] = out_indices[j]
                    j -= 1
                out_indices[j + 1] = value
        elif not ordered:
            out_indices[o:end].sort()  # in place: np.sort would copy the row


def add_self_loops(indptr: np.ndarray, indices: np.ndarray, num_dst: int) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, indices)`` of the CSR with the loop ``i -> i`` added to each row ``i`` that has none, every row
    sorted by source (Note [self loops in one pass]); ``indptr`` int64, ``indices`` in their own dtype."""
    indptr = np.asarray(indptr, dtype=np.int64)
    counts = np.diff(indptr)
    rows = np.repeat(np.arange(num_dst, dtype=np.int64), counts)
    missing = np.ones(num_dst, dtype=np.bool_)
    missing[rows[indices == rows]] = False
    out_indptr = np.zeros(num_dst + 1, dtype=np.int64)
    np.cumsum(counts + missing, out=out_indptr[1:])
    out_indices = np.empty(int(out_indptr[-1]), dtype=indices.dtype)
    _fill(indptr, indices, missing, out_indptr, out_indices)
    return out_indptr, out_indices
