"""Max-SpMM of isplib in numba: the forward with its argmax, and both backwards.

Note [max ties and empty rows]
    A row keeps the *first* maximal edge in storage order (strict ``>``), which
    on the forward view is ascending canonical edge id. An empty row yields
    ``out = 0`` and ``argmax = -1``; the backwards skip ``-1``. No fastmath:
    comparisons must honour NaN and infinities. A NaN message wins over any
    number and the first NaN is kept (Note [NaN policy] in gnnbench/api.py):
    ``v > best`` alone is false for a NaN met after the first edge.

Note [race-free max backward]
    ``grad_x[indices[e]] += ...`` scatters into source rows that many
    destination rows share, so a row-parallel loop would race. The feature
    columns never interact, so :func:`spmm_max_backward_cols` gives each thread
    whole 64-byte column chunks instead: every write to ``grad_x[:, f]`` comes
    from the one thread that owns column ``f``. The weight gradient
    ``grad_weight[e]`` of a winner ``e`` of row ``i`` lies in row ``i``'s own
    edge range, so :func:`spmm_max_weight_backward_rows` can run row-parallel.
"""
from __future__ import annotations

from numba import prange

from gnnbench.runtime.serial import parallel_above

__all__ = ["spmm_max_rows", "spmm_max_backward_cols", "spmm_max_weight_backward_rows"]


# every section serial below a size (Note [serial below a size]); work is edges times width
@parallel_above(lambda indptr, indices, eids, has_eids, w, has_w, x, *_: indices.shape[0] * x.shape[1], cache=True)
def spmm_max_rows(indptr, indices, eids, has_eids, w, has_w, x, out, argmax, bounds):
    """``out[i,h,d] = max_e w[e,h] * x[j,h,d]`` and the winning canonical edge id.

    Shapes:
        w ``[E, H]``; x ``[num_cols, H, D]``; out, argmax ``[num_rows, H, D]``.
    """
    H = x.shape[1]
    D = x.shape[2]
    for b in prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            s = indptr[i]
            e = indptr[i + 1]
            if s == e:
                for h in range(H):
                    for d in range(D):
                        out[i, h, d] = 0
                        argmax[i, h, d] = -1
                continue
            j = indices[s]
            eid = eids[s] if has_eids else s
            for h in range(H):
                if has_w:
                    c = w[eid, h]
                    for d in range(D):
                        out[i, h, d] = c * x[j, h, d]
                        argmax[i, h, d] = eid
                else:
                    for d in range(D):
                        out[i, h, d] = x[j, h, d]
                        argmax[i, h, d] = eid
            for p in range(s + 1, e):
                j = indices[p]
                eid = eids[p] if has_eids else p
                for h in range(H):
                    if has_w:
                        c = w[eid, h]
                        for d in range(D):
                            v = c * x[j, h, d]
                            if v > out[i, h, d] or (v != v and out[i, h, d] == out[i, h, d]):  # NaN wins once
                                out[i, h, d] = v
                                argmax[i, h, d] = eid
                    else:
                        for d in range(D):
                            v = x[j, h, d]
                            if v > out[i, h, d] or (v != v and out[i, h, d] == out[i, h, d]):  # NaN wins once
                                out[i, h, d] = v
                                argmax[i, h, d] = eid


@parallel_above(lambda indices, w, has_w, grad_out, argmax, *_: argmax.size, cache=True)
def spmm_max_backward_cols(indices, w, has_w, grad_out, argmax, grad_x, chunk):
    """``grad_x[indices[e], h, d] += w[e, h] * grad_out[i, h, d]`` for ``e = argmax[i, h, d] >= 0``.

    ``indices`` must be the forward view's (argmax holds forward positions).
    ``grad_x`` arrives zero-filled. Columns are split into chunks of ``chunk``
    elements, one thread per chunk (Note [race-free max backward]).

    Shapes:
        grad_out, argmax ``[num_rows, H, D]``; grad_x ``[num_cols, H, D]``.
    """
    N = grad_out.shape[0]
    H = grad_out.shape[1]
    D = grad_out.shape[2]
    F = H * D
    nchunks = (F + chunk - 1) // chunk
    for c in prange(nchunks):
        f0 = c * chunk
        f1 = min(F, f0 + chunk)
        for i in range(N):
            for f in range(f0, f1):
                h = f // D
                d = f - h * D
                e = argmax[i, h, d]
                if e >= 0:
                    g = grad_out[i, h, d]
                    if has_w:
                        g = g * w[e, h]
                    grad_x[indices[e], h, d] += g


@parallel_above(lambda indptr, indices, x, grad_out, argmax, *_: argmax.size, cache=True)
def spmm_max_weight_backward_rows(indptr, indices, x, grad_out, argmax, grad_weight, bounds):
    """``grad_weight[e, h] += grad_out[i, h, d] * x[indices[e], h, d]`` for each winner ``e``.

    Row-parallel on the forward view (Note [race-free max backward]);
    ``grad_weight`` arrives zero-filled.

    Shapes:
        x ``[num_cols, H, D]``; grad_out, argmax ``[num_rows, H, D]``; grad_weight ``[E, H]``.
    """
    H = x.shape[1]
    D = x.shape[2]
    for b in prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            if indptr[i] == indptr[i + 1]:
                continue
            for h in range(H):
                for d in range(D):
                    e = argmax[i, h, d]
                    if e >= 0:
                        grad_weight[e, h] += grad_out[i, h, d] * x[indices[e], h, d]
