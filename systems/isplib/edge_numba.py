"""Per-edge kernels of isplib in numba: SDDMM, edge sums and the edge softmax.

All of them walk the CSR view row by row in parallel, so every write of a
row's edges (``out[eid(p)]``) or of its output node lands in memory that only
that row's thread touches: no atomics, no races. ``eid(p)`` is ``p`` on the
forward view and ``eids[p]`` on the transposed view (``has_eids``).

Note [edge kernel blocks]
    The row blocks ``bounds`` are the nonzero-balanced partition of
    :class:`~gnnbench.systems.isplib.prepared.IsplibGraph`, the same one the
    tuned SpMM uses, so a hub row never stalls one thread while the others idle.
"""
from __future__ import annotations

import math

from numba import prange

from gnnbench.runtime.serial import parallel_above

from gnnbench.systems.isplib.spmm_numba import FASTMATH

__all__ = ["sddmm_dot_rows", "sddmm_add_rows", "edge_sum_rows", "edge_softmax_rows",
           "edge_softmax_backward_rows"]


# every section serial below a size (Note [serial below a size]); work is edges times width
@parallel_above(lambda indptr, indices, eids, has_eids, src, *_: indices.shape[0] * src.shape[-1],
                fastmath=FASTMATH, cache=True)
def sddmm_dot_rows(indptr, indices, eids, has_eids, src, dst, out, row_scale, has_rs, bounds, zero):
    """``out[eid, h] = row_scale[i] * <src[j, h, :], dst[i, h, :]>`` for every edge.

    Also the weight gradient of a sum/mean SpMM (``src = x``, ``dst = grad_out``).
    ``zero`` is ``0`` in the float dtype (it types the accumulator).

    Shapes:
        src ``[num_cols, H, D]``; dst ``[num_rows, H, D]``; out ``[E, H]``;
        row_scale ``[num_rows]``.
    """
    H = src.shape[1]
    D = src.shape[2]
    for b in prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                eid = eids[p] if has_eids else p
                for h in range(H):
                    acc = zero
                    for d in range(D):
                        acc += src[j, h, d] * dst[i, h, d]
                    if has_rs:
                        acc *= row_scale[i]
                    out[eid, h] = acc


@parallel_above(lambda indptr, indices, *_: indices.shape[0], fastmath=FASTMATH, cache=True)
def sddmm_add_rows(indptr, indices, eids, has_eids, src, dst, out, bounds):
    """``out[eid, h] = src[j, h] + dst[i, h]``.

    Shapes:
        src ``[num_cols, H]``; dst ``[num_rows, H]``; out ``[E, H]``.
    """
    H = src.shape[1]
    for b in prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                eid = eids[p] if has_eids else p
                for h in range(H):
                    out[eid, h] = src[j, h] + dst[i, h]


@parallel_above(lambda indptr, eids, has_eids, values, *_: values.size, fastmath=FASTMATH, cache=True)
def edge_sum_rows(indptr, eids, has_eids, values, out, bounds):
    """``out[i, h] = sum_{p in row i} values[eid(p), h]`` (0 for an empty row).

    Shapes:
        values ``[E, H]``; out ``[num_rows, H]``.
    """
    H = values.shape[1]
    for b in prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            for h in range(H):
                out[i, h] = 0
            for p in range(indptr[i], indptr[i + 1]):
                eid = eids[p] if has_eids else p
                for h in range(H):
                    out[i, h] += values[eid, h]


@parallel_above(lambda indptr, eids, has_eids, scores, *_: scores.size, cache=True)
def edge_softmax_rows(indptr, eids, has_eids, scores, out, bounds):
    """Per row ``i`` and head ``h``: ``out[e] = exp(s[e] - m) / sum_row exp(s - m)``, ``m`` the row max.

    Subtracting the row maximum keeps ``exp`` from overflowing; a row of
    ``-inf`` scores (or a NaN) yields NaN, as in PyTorch. No fastmath here:
    the max must see NaNs and infinities (Note [fastmath]).

    Shapes:
        scores, out ``[E, H]``.
    """
    H = scores.shape[1]
    for b in prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            s = indptr[i]
            e = indptr[i + 1]
            if s == e:
                continue
            for h in range(H):
                m = -math.inf
                for p in range(s, e):
                    v = scores[eids[p] if has_eids else p, h]
                    if v > m or math.isnan(v):
                        m = v
                total = 0.0
                for p in range(s, e):
                    eid = eids[p] if has_eids else p
                    ex = math.exp(scores[eid, h] - m)
                    out[eid, h] = ex
                    total += ex
                inv = 1 / total
                for p in range(s, e):
                    eid = eids[p] if has_eids else p
                    out[eid, h] *= inv


@parallel_above(lambda indptr, eids, has_eids, out, *_: out.size, fastmath=FASTMATH, cache=True)
def edge_softmax_backward_rows(indptr, eids, has_eids, out, grad_out, grad_scores, bounds):
    """``grad_scores[e] = out[e] * (grad_out[e] - sum_row out * grad_out)`` per head.

    Shapes:
        out, grad_out, grad_scores ``[E, H]``.
    """
    H = out.shape[1]
    for b in prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            s = indptr[i]
            e = indptr[i + 1]
            for h in range(H):
                dot = 0.0  # float64: the row sum cancels against grad_out
                for p in range(s, e):
                    eid = eids[p] if has_eids else p
                    dot += out[eid, h] * grad_out[eid, h]
                for p in range(s, e):
                    eid = eids[p] if has_eids else p
                    grad_scores[eid, h] = out[eid, h] * (grad_out[eid, h] - dot)
