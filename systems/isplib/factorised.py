"""Edge weights that are GCN's normalisation, recognised and turned into node scales.

Note [factorised weights]
    GCN's weight on edge ``j -> i`` is ``1 / sqrt(deg_in(i) deg_out(j))``
    (:meth:`gnnbench.runtime.graph.Graph.gcn_norm`): a row factor times a column
    factor. On the transposed view of the backward pass the weights are
    read as ``w[eids[p]]``, a random gather per edge that made the weighted
    backward SpMM about twice the unweighted one. iSpLib keeps the
    normalised transpose prepared; here the weight arrives as a framework
    tensor on every call, so on the transposed view isplib checks it,
    exactly and in one streaming pass (:meth:`GcnFactors.matches`, a small
    share of the call), against the normalisation its graph holds
    (``Graph.gcn_norm()``), and when every edge matches runs the loop with
    the two factors as per-row and per-gathered-row scales instead: the
    per-row scale is free, the per-edge one a gather from an ``N``-float
    vector that stays in cache, faster than the weighted loop at every
    width measured. The forward view reads its weights in
    order, which is cheaper than that per-edge scale, so it keeps them.
    Any other weight fails the check at its first differing block and takes
    the weighted path. Only float32 is factorised: the stored normalisation
    is rounded to float32 and the factors' product differs from it by an
    ulp, within the float32 tolerance of the conformance suite but not the
    float64 one. Measured: ``results/studies/isplib-kernels.md``.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from gnnbench.runtime.serial import parallel_above

__all__ = ["GcnFactors"]


@parallel_above(lambda a, *_: a.size, cache=True)  # Note [serial below a size]
def _chunks_equal(a, b, chunks, ok):
    """``ok[c]``: whether ``a`` and ``b`` agree on chunk ``c``.

    Counted 1024 elements at a time, a loop LLVM vectorises, and a chunk
    stops after the first 1024 that hold a difference.
    """
    n = a.shape[0]
    for c in prange(chunks):
        end = (c + 1) * n // chunks
        k = c * n // chunks
        good = True
        while good and k < end:
            stop = min(k + 1024, end)
            differ = 0
            for q in range(k, stop):
                differ += a[q] != b[q]
            good = differ == 0
            k = stop
        ok[c] = good


class GcnFactors:
    """What one view needs to recognise and factorise GCN's normalisation, built in ``prepare``.

    ``row`` scales output rows and ``col`` gathered rows: on the forward
    view (rows are destinations) ``deg_in^-1/2`` and ``deg_out^-1/2``, on the
    transposed view the other way round. The normalisation itself is the
    Graph's own cached array (``Graph.gcn_norm()``), fetched at the first
    check: by then the model has asked the Graph for it, and a model that
    never passes weights never makes the Graph compute it.
    """

    __slots__ = ("graph", "row", "col", "_ok")

    def __init__(self, graph, transposed: bool, chunks: int):
        self.graph = graph
        din = 1.0 / np.sqrt(np.maximum(np.asarray(graph.in_degree, dtype=np.float64), 1.0))
        dout = 1.0 / np.sqrt(np.maximum(np.asarray(graph.out_degree, dtype=np.float64), 1.0))
        din, dout = din.astype(np.float32), dout.astype(np.float32)
        self.row, self.col = (dout, din) if transposed else (din, dout)
        self._ok = np.zeros(chunks, dtype=np.bool_)  # one flag per parallel chunk of the check

    def matches(self, w: np.ndarray) -> bool:
        """Whether ``w`` (``[E, 1]`` float32, canonical edge order) is ``graph.gcn_norm()``, edge for edge."""
        if w.dtype != np.float32 or w.shape != (self.graph.num_edges, 1) or not w.flags.c_contiguous:
            return False
        _chunks_equal(w.reshape(-1), self.graph.gcn_norm(), self._ok.shape[0], self._ok)
        return bool(self._ok.all())
