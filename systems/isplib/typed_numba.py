"""isplib's fused typed aggregation, in numba: ``out[i] = sum_{e=(j->i)} c[e] x[j] W[etype[e]]`` in one pass.

The operator is ``typed_aggregate`` of ``gnnbench/api.gnn`` (the relational sum of R-GCN: Note [typed
aggregation] in :mod:`gnnbench.api`). Per head ``h`` the weight ``W[r]`` (``D x K``) is shared and the edge
coefficient ``c[e, h]`` is not::

    out[i, h, :] = sum_{e = j -> i} c[e, h] * x[j, h, :] @ W[etype[e]]

Note [typed aggregation loop]
    Three ways to compute it, counted in multiply-adds per layer for ``E``
    edges, ``H`` heads, ``D`` input and ``K`` output features, ``R``
    relations, ``P`` distinct (destination row, relation) pairs and ``Q``
    distinct (source, relation) pairs (``P, Q <= E``):

    * per-edge small matmuls (``x[j] W[r]`` for every edge): ``E H D K``;
    * transform, then gather (``x W[r]`` precomputed, the messages gathered
      and summed): ``Q H D K + E H K``, and an ``S x R x H x K`` buffer (or
      ``R`` passes over the graph) that only the framework may allocate
      (producer-only boundary); with ``x W[r]`` for every source and relation
      it is ``S R H D K``, ``R`` times a plain linear layer, which is what the
      many-relation shape (AIFB's 90 relations) cannot afford;
    * gather, then transform (this module): per destination row, sum each
      relation's coefficients times source rows into a ``D``-row
      accumulator, then multiply each touched relation's accumulator by
      ``W[r]`` once: ``E H D + P H D K``, and per thread an ``R x H x D``
      scratch of its own (128 KiB at ``R = 64``, ``D = 512``, float32).

    The third never does more multiply-adds than the first (``P <= E``) and
    it pays the ``D x K`` product once per (row, relation) instead of once per
    edge: R-GCN's mean per relation gives every such pair all of the row's
    edges of that relation, so on a graph with ``d`` edges per (row,
    relation) it does ``1/d`` of the per-edge work. Against the second, ``P``
    and ``Q`` are the same count seen from the other end of the edges (equal
    on a symmetric typed graph), and it needs no ``S x R`` buffer. It is the
    loop of Hector's and Seastar's fused relational kernels (aggregate per
    relation in registers, one GEMM per tile) on a CPU row.

    Where it may lose: each (row, relation) product is a vector-matrix
    product that reads all of ``W[r]`` (from L1 or L2) for ``D K``
    multiply-adds, two loads per multiply-add, where a GEMM over many rows
    of one relation reuses each loaded block of ``W[r]`` from registers.
    When most rows meet a relation once (``P`` near ``E``: many relations,
    low degree) the multiply-adds are as many as DGL's per-edge
    ``segment_mm`` (Note [DGL typed aggregation]) and run slower per
    multiply-add, so the fusion's gain is then only the ``E x D`` gather
    and ``E x K`` messages it does not write. The next step there is
    Hector's: collect a tile of rows' accumulators by relation and run one
    small GEMM per relation and tile. ``benchmarks/studies/bench_typed.py``
    measures the three phases against DGL's and the composed form at 1, 3
    and 64 relations.

    An edge's relation is read from ``etype`` per call; a row's edges are not
    sorted by relation, so the row keeps a list of the relations it touched
    (``stamp[r] == i`` marks relation ``r`` as seen in row ``i``), each
    accumulator is zeroed on first touch and flushed at the row's end: each
    output element is one sum, over the touched relations, of dot products
    of an accumulator with a row of ``W[r]^T``, kept in a register and
    written once. The rows of ``W[r]^T`` are contiguous in a transposed copy
    of ``W`` the forward makes per call (``R D K`` numbers, against the
    ``P D K`` multiply-adds that read it); summing into ``out[i]`` along the
    rows of ``W[r]`` instead would load and store ``out`` per multiply-add
    unless the compiler kept ``out[i]`` in registers, which it cannot
    assume (``out`` and ``W`` might overlap). Rows are split over threads in the nonzero-balanced blocks
    every isplib kernel other than the tuned SpMM uses (Note [edge kernel
    blocks] in :mod:`~gnnbench.systems.isplib.edge_numba`); every thread
    writes only its own rows, so no atomics.

    The gradient of ``x`` is the same loop on the transposed view with the
    rows of ``W[r]`` (``W`` itself, no copy): a row of the transposed view is
    a source ``j``, its edges gather ``grad_out[i]`` (``K`` wide), and
    ``grad_x[j, h, d]`` is the sum of dot products with ``W[r, d, :]``. One
    numba function serves both, so the typed operator costs two compiled
    functions per (index dtype, float dtype) pair, not three (issue 59: the
    cold compile is CI's cost).

Note [typed kernel untuned]
    isplib's tuner times SpMM variants (loop unroll, prefetch distance,
    width-specialised loop, streaming stores, partition and threads: Note
    [tuning search] in :mod:`~gnnbench.systems.isplib.tuning`) and keys its
    cache by the SpMM path. None of those knobs exists in this loop, whose
    time goes to the ``P`` vector-matrix products, not to the gathers the
    SpMM knobs hide; tuning it would mean a candidate space and a cache key
    of its own. So it is not tuned: it runs at all threads in the default
    blocks, as isplib's edge kernels and the multi-head SpMM do, and isplib's
    report says nothing about it.

Note [weight gradient by feature slices]
    ``grad_W[r] = sum_{e of relation r} sum_h c[e, h] x[j, h, :]^T grad_out[i, h, :]``
    is a sum into ``R x D x K`` numbers from every edge: split over rows, two
    threads would add into the same ``W[r]``. Private copies per thread cost
    ``threads x R x D x K`` (64 MiB a thread at ``R = 64``, ``D = K = 512``).
    Instead each thread owns a slice of the ``D`` input features, at least a
    cache line wide: it walks every row, sums its slice of the touched
    relations' accumulators as the forward does, and adds their outer
    products with ``grad_out[i]`` into its own ``grad_W[:, slice, :]``. The
    work is the forward's (``E H D + P H D K``) and nothing is shared; the
    price is that each thread reads the whole CSR and ``etype`` once. Each
    element is summed in the same order whatever the slices, so the result
    is the same bit for bit at any thread count.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from gnnbench.runtime.serial import parallel_above
from gnnbench.systems.isplib.spmm_numba import FASTMATH

__all__ = ["typed_rows", "typed_weight_rows", "feature_slices", "weight_work"]


@njit(fastmath=FASTMATH, inline="always")
def _accumulate_row(i, indptr, indices, eids, has_eids, etype, norm, x, d0, acc, stamp, touched):
    """Row ``i``'s sum per relation: ``acc[r, h, f] = sum_{p in row i, etype[e] = r} norm[e, h] x[j, h, d0 + f]``
    for ``f < acc.shape[2]``, each touched relation's accumulator zeroed on first touch (``stamp[r] == i``) and
    listed in ``touched``; returns how many relations the row touched (Note [typed aggregation loop]).

    The forward and the gradient of ``x`` (:func:`typed_rows`, ``d0 = 0``, every feature) and the weight
    gradient (:func:`typed_weight_rows`, a slice from ``d0``) share it; inlined into each, so every one keeps
    its own loop nest and parallel structure."""
    H = acc.shape[1]
    width = acc.shape[2]
    n_touched = 0
    for p in range(indptr[i], indptr[i + 1]):
        e = eids[p] if has_eids else p
        r = etype[e]
        j = indices[p]
        if stamp[r] != i:
            stamp[r] = i
            touched[n_touched] = r
            n_touched += 1
            for h in range(H):
                for f in range(width):
                    acc[r, h, f] = 0
        for h in range(H):
            c = norm[e, h]
            for f in range(width):
                acc[r, h, f] += c * x[j, h, d0 + f]
    return n_touched


def _typed_work(indptr, indices, eids, has_eids, etype, norm, x, mats, out, *_):
    """Edges times heads times (gathered plus written width): the gathers and a bound on the products' rows."""
    return indices.shape[0] * x.shape[1] * (x.shape[2] + out.shape[2])


@parallel_above(_typed_work, fastmath=FASTMATH, cache=True)
def typed_rows(indptr, indices, eids, has_eids, etype, norm, x, mats, out, bounds, zero):
    """``out[i,h,g] = sum_{p in row i} norm[e,h] <x[j,h,:], mats[etype[e],g,:]>``, summed per relation first.

    ``e`` is ``p`` on the forward view and ``eids[p]`` on the transposed one; ``j = indices[p]``
    (Note [typed aggregation loop]). ``mats`` is ``W^T`` for the forward and ``W`` for the gradient of
    ``x``, so both are dot products along contiguous rows. Every row of ``out`` is written; an empty
    row is 0.

    Args:
        indptr, indices: the CSR view (int32 or int64).
        eids: canonical edge id per position (a dummy when ``has_eids`` is False).
        etype: ``[E]`` int64 relation of each canonical edge, in ``[0, R)``.
        norm: ``[E, H]`` coefficient of each canonical edge.
        x: ``[num_cols, H, F]``.
        mats: ``[R, G, F]``: ``W^T`` (``[R, K, D]``) or ``W`` (``[R, D, K]``).
        out: ``[num_rows, H, G]``.
        bounds: ``[B + 1]`` row block boundaries.
        zero: ``0`` in the float dtype (types the sums).
    """
    R = mats.shape[0]
    H = x.shape[1]
    F = x.shape[2]
    G = out.shape[2]
    for b in prange(bounds.shape[0] - 1):
        acc = np.empty((R, H, F), dtype=x.dtype)   # one relation's sum per head, this block's own
        stamp = np.full(R, -1, dtype=np.int64)    # the row that last touched relation r
        touched = np.empty(R, dtype=np.int64)
        for i in range(bounds[b], bounds[b + 1]):
            n_touched = _accumulate_row(i, indptr, indices, eids, has_eids, etype, norm, x, 0, acc, stamp, touched)
            for h in range(H):
                for g in range(G):
                    s = zero   # in a register: out[i] is written once
                    for t in range(n_touched):
                        r = touched[t]
                        for f in range(F):
                            s += acc[r, h, f] * mats[r, g, f]
                    out[i, h, g] = s


def weight_work(indices, x, grad_out) -> int:
    """The weight gradient's work, counted as :func:`typed_rows`'s (Note [serial below a size])."""
    return indices.shape[0] * x.shape[1] * (x.shape[2] + grad_out.shape[2])


@parallel_above(lambda indptr, indices, eids, has_eids, etype, norm, x, grad_out, *_: weight_work(indices, x, grad_out),
                fastmath=FASTMATH, cache=True)
def typed_weight_rows(indptr, indices, eids, has_eids, etype, norm, x, grad_out, grad_weight, slices):
    """``grad_weight[r] = sum_{e of relation r} sum_h norm[e,h] x[j,h,:]^T grad_out[i,h,:]``, fully written.

    Slice ``s`` owns input features ``slices[s] .. slices[s+1]-1`` of every ``grad_weight[r]``
    (Note [weight gradient by feature slices]); it walks all rows of the view.

    Shapes:
        x ``[num_cols, H, D]``; grad_out ``[num_rows, H, K]``; grad_weight ``[R, D, K]``;
        norm ``[E, H]``; etype ``[E]``; slices ``[n + 1]`` with ``slices[n] == D``.
    """
    R = grad_weight.shape[0]
    H = x.shape[1]
    K = grad_out.shape[2]
    num_rows = indptr.shape[0] - 1
    for s in prange(slices.shape[0] - 1):
        d0 = slices[s]
        width = slices[s + 1] - d0
        for r in range(R):
            for d in range(d0, d0 + width):
                for k in range(K):
                    grad_weight[r, d, k] = 0
        acc = np.empty((R, H, width), dtype=x.dtype)
        stamp = np.full(R, -1, dtype=np.int64)
        touched = np.empty(R, dtype=np.int64)
        for i in range(num_rows):
            n_touched = _accumulate_row(i, indptr, indices, eids, has_eids, etype, norm, x, d0, acc, stamp, touched)
            for t in range(n_touched):
                r = touched[t]
                for h in range(H):
                    for f in range(width):
                        a = acc[r, h, f]
                        for k in range(K):
                            grad_weight[r, d0 + f, k] += a * grad_out[i, h, k]


def feature_slices(D: int, threads: int, line: int) -> np.ndarray:
    """Boundaries of ``min(threads, D // line)`` (at least one) near-equal slices of ``range(D)``.

    Each slice is at least ``line`` features (a 64-byte cache line) unless ``D`` is smaller
    (Note [weight gradient by feature slices]).
    """
    n = max(1, min(int(threads), D // max(int(line), 1)))
    return np.linspace(0, D, n + 1).round().astype(np.int64)
