"""The transposed CSR of a graph in one pass (a counting sort by source), for ``Graph.view(transposed=True)``.

Note [linear transpose]
    The transposed view (rows are sources) was built with a stable
    ``argsort`` of the sources: ``O(E log E)`` comparisons on one core plus
    four ``E``-long int64 temporaries (sources, order, repeated
    destinations, permuted destinations). At 64M edges that sort was most
    of isplib's 6.6 s ``prepare`` (DGL's own CSC build takes 1.25 s) and the
    temporaries 2 GiB. The CSR by destination is already sorted by
    destination, so a counting sort by source is stable for free: walk the
    rows in order and drop each edge at its source's next free slot. One
    pass, ``O(E + N)``, no temporary but the ``N``-long cursor; the result is
    identical to the stable sort's (within a source row, destinations and
    edge ids ascend).
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["transpose_csr"]


@njit(cache=True)
def _scatter(indptr, indices, cursor, indices_t, edge_ids):
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            q = cursor[j]
            indices_t[q] = i
            edge_ids[q] = p
            cursor[j] = q + 1


def transpose_csr(indptr: np.ndarray, indices: np.ndarray,
                  num_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr_t, indices_t, edge_ids)`` of the transpose, in the index dtype of ``indices`` (Note [linear transpose]).

    Shapes:
        indptr ``[N + 1]``, indices ``[E]``; returns ``[N + 1]``, ``[E]``, ``[E]``.
    """
    idt = indices.dtype
    counts = np.bincount(indices, minlength=num_nodes)
    indptr_t = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr_t[1:])
    del counts
    indices_t = np.empty(indices.shape[0], dtype=idt)
    edge_ids = np.empty(indices.shape[0], dtype=idt)
    _scatter(indptr, indices, indptr_t[:-1].copy(), indices_t, edge_ids)
    return (indptr_t.astype(idt) if idt == np.int32 else indptr_t), indices_t, edge_ids
