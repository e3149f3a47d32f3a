"""The tunable SpMM-sum kernels of isplib, in numba.

One row of the CSR view is one output row::

    out[i, :] = row_scale[i] * sum_{p in row i} w[eid(p)] * col_scale[j] * x[j, :],   j = indices[p]

where every factor is optional (``row_scale`` is ``1/max(deg, 1)`` for a mean,
``col_scale`` the same for the backward of a mean, ``eid(p)`` is ``p`` on the
forward view and ``eids[p]`` on the transposed one).

Note [variant knobs]
    Every knob of :class:`~gnnbench.systems.isplib.variant.Variant` except the
    width specialisation is a *runtime* argument of one compiled function, so
    each (index dtype, float dtype) pair costs one compilation and the tuner
    can switch variants for free:

    * ``unroll`` (1, 4 or 8): edges consumed per inner iteration. Summing
      4 gathered rows before touching ``out`` quarters the load/store traffic
      on the output row and gives the core 4 independent gathers to overlap.
    * ``dist``: software prefetch distance in edges (Note [software prefetch]),
      for every edge, a row's last ``< unroll`` edges included, so that
      every label means what it says (once those edges did not prefetch, and
      ``u1/pf16`` ran as ``u1/pf0``; prefetching them changed no cell of
      ``benchmarks/bench_spmm.py`` beyond its spread:
      ``results/studies/isplib-variants.md``).
    * ``bounds``: the row blocks that ``prange`` distributes, equal rows or
      equal nonzeros (see :mod:`~gnnbench.systems.isplib.prepared`).
    * ``stream``: the fixed kernel writes its output rows past the caches
      (Note [streaming stores] in :mod:`~gnnbench.systems.isplib.row_ops`);
      the generic one ignores it.

    The width specialisation (``fixed``) compiles the same loop with the
    feature width as a compile-time constant (a closure constant), and each
    row operation as one ``F``-element vector (Note [explicit row vectors] in
    :mod:`~gnnbench.systems.isplib.row_ops`): LLVM emits exactly ``F // V``
    vector operations per gathered row and an exact remainder. The generic
    loop, with ``F`` known only at run time, is a
    16-float vector body, a 4-float epilogue and a scalar tail behind
    trip-count tests on every group of edges (iSpLib instead falls back to
    a scalar loop whenever ``F`` is not a multiple of its vector width).

Note [stack accumulator]
    A row is summed into ``acc`` and written to ``out`` once at the end. In
    the width-specialised kernel ``acc`` is ``F`` elements on the stack
    (:func:`~gnnbench.systems.isplib.intrinsics.stack_row`), only ever read
    and written as one vector: it cannot alias ``x``, so LLVM keeps the whole
    row in vector registers across the edge loop instead of loading and
    storing ``out[i]`` every group of edges, which it must do for ``out``
    since ``out`` and ``x`` might overlap. Against the same loop summing into a heap
    row (before Note [explicit row vectors]) it was faster at every width
    measured on the 4M-edge R-MAT graph (``results/studies/isplib-kernels.md``). The generic
    kernel, whose ``F`` is a run-time value, passes the output row itself as
    ``acc`` (the final write is then a copy onto itself), so no kernel
    allocates anything.

Note [gathered scales]
    The backward of GCN (node scales, Note [factorised weights]) and of a
    mean multiplies each gathered row by ``col_scale[indices[p]]``: a
    4-byte read at a random place of an ``N``-float vector, one more cache
    miss per edge once that vector outgrows L2 (524k nodes and up: 2 MiB).
    It is prefetched with the rows, the same distance ahead, as the
    transposed view's weights are (Note [permuted weights]).

Note [permuted weights]
    The transposed view (the backward's SpMM) walks the edges in the order of
    its own rows, but the edge weights are stored once, in the forward view's
    edge order: the transposed view reaches the weight of its position ``q``
    through ``eids[q]``, the forward id of that edge, so each weight read
    ``w[eids[q]]`` lands at a scattered place of the ``E``-float weight
    vector instead of the next one. The kernel prefetches those weights with
    the gathered rows, the same distance ahead (``_prefetch_weights``).

Note [backward against forward]
    The backward's SpMM (the transposed view) ran slower than the forward
    (issue 19 item 4), and not because of the view: on R-MAT the in- and
    out-degrees have the same distribution and a plain sum ran level on
    both. A mean costs more on the transposed view because its ``1/deg``
    becomes a gathered scale (Note [gathered scales]): one multiply per
    gathered element instead of one per output element, as slow on the
    forward view when given the same scale. Dropping the scale's prefetch
    did not repay itself either. The measurements:
    ``results/studies/isplib-variants.md``.

    Removing the per-edge scale needs ``grad_out / deg`` materialised, an
    ``[N, F]`` buffer that only the framework may allocate (producer-only
    boundary): the mean's own backward declares it as a workspace and runs
    the plain sum (Note [mean backward] in :mod:`~gnnbench.systems.isplib.kernels`).
    The gathered scale remains for the edge-form GCN's factorised weights
    (Note [factorised weights]) and for ``spmm_sum_backward`` with
    ``reduce="mean"`` in systems that reuse isplib's standard kernels (dgnn).

Note [fastmath]
    The sums use ``reassoc``/``contract``/``nsz`` only: reordering a sum and
    fusing multiply-adds are what make it vectorise, while the ``nnan``/``ninf``
    flags of full fastmath could silently drop NaNs that must reach the loss.
"""
from __future__ import annotations

from numba import njit, prange

from gnnbench.runtime.serial import parallel_above

from gnnbench.systems.isplib.intrinsics import prefetch_item, prefetch_row, stack_row
from gnnbench.systems.isplib.row_ops import (add_rows, add_scaled_rows, store_row, store_scaled_row, stream_fence,
                                             stream_row, stream_scaled_row, zero_row)

__all__ = ["spmm_rows", "spmm_rows_fixed", "spmm_heads", "FASTMATH"]

#: Note [fastmath]
FASTMATH = {"reassoc", "contract", "nsz"}


@njit(fastmath=FASTMATH, inline="always")
def _coef(p, indices, eids, has_eids, w, has_w, col_scale, has_cs, one):
    """``w[eid(p), 0] * col_scale[indices[p]]`` with absent factors equal to one."""
    c = one
    if has_w:
        c = w[eids[p] if has_eids else p, 0]
    if has_cs:
        c = c * col_scale[indices[p]]
    return c


@njit(fastmath=FASTMATH, inline="always")
def _prefetch_rows(indices, q, k, x, F, line):
    """Prefetch the rows gathered by edges ``q .. q+k-1`` (Note [software prefetch])."""
    for u in range(k):
        jj = indices[q + u]
        for c in range(0, F, line):
            prefetch_row(x, jj, c)


@njit(fastmath=FASTMATH, inline="always")
def _prefetch_weights(eids, q, k, w):
    """Prefetch the weights ``w[eids[q .. q+k-1]]`` of the transposed view (Note [permuted weights])."""
    for u in range(k):
        prefetch_row(w, eids[q + u], 0)


@njit(fastmath=FASTMATH, inline="always")
def _prefetch_scales(indices, q, k, col_scale):
    """Prefetch the gathered-row scales ``col_scale[indices[q .. q+k-1]]`` (Note [gathered scales])."""
    for u in range(k):
        prefetch_item(col_scale, indices[q + u])


@njit(fastmath=FASTMATH, inline="always")
def _plain_row(i, F, indptr, indices, x, acc, unroll, dist, line):
    """``acc = sum_{p in row i} x[indices[p]]``: adds only, 8, 4 or 1 edges at a time."""
    E = indices.shape[0]
    p = indptr[i]
    e = indptr[i + 1]
    zero_row(acc, F)
    if unroll >= 8:
        while p + 8 <= e:
            if dist > 0 and p + dist + 8 <= E:
                _prefetch_rows(indices, p + dist, 8, x, F, line)
            add_rows(acc, x, (indices[p], indices[p + 1], indices[p + 2], indices[p + 3],
                              indices[p + 4], indices[p + 5], indices[p + 6], indices[p + 7]), F)
            p += 8
    if unroll >= 4:
        while p + 4 <= e:
            if dist > 0 and p + dist + 4 <= E:
                _prefetch_rows(indices, p + dist, 4, x, F, line)
            add_rows(acc, x, (indices[p], indices[p + 1], indices[p + 2], indices[p + 3]), F)
            p += 4
    while p < e:  # the row's last edges: still prefetching, so the next row's gathers are in flight
        if dist > 0 and p + dist < E:
            _prefetch_rows(indices, p + dist, 1, x, F, line)
        add_rows(acc, x, (indices[p],), F)
        p += 1


@njit(fastmath=FASTMATH, inline="always")
def _scaled_row(i, F, indptr, indices, eids, has_eids, w, has_w, x, acc, col_scale, has_cs, unroll, dist, line, one):
    """``acc = sum_{p in row i} coef(p) x[indices[p]]`` (edge weight, gathered-row scale), 8, 4 or 1 edges at a time."""
    E = indices.shape[0]
    p = indptr[i]
    e = indptr[i + 1]
    zero_row(acc, F)
    if unroll >= 8:
        while p + 8 <= e:
            if dist > 0 and p + dist + 8 <= E:
                _prefetch_rows(indices, p + dist, 8, x, F, line)
                if has_w and has_eids:
                    _prefetch_weights(eids, p + dist, 8, w)
                if has_cs:
                    _prefetch_scales(indices, p + dist, 8, col_scale)
            add_scaled_rows(acc, x,
                            (indices[p], indices[p + 1], indices[p + 2], indices[p + 3],
                             indices[p + 4], indices[p + 5], indices[p + 6], indices[p + 7]),
                            (_coef(p, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 1, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 2, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 3, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 4, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 5, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 6, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 7, indices, eids, has_eids, w, has_w, col_scale, has_cs, one)), F)
            p += 8
    if unroll >= 4:
        while p + 4 <= e:
            if dist > 0 and p + dist + 4 <= E:
                _prefetch_rows(indices, p + dist, 4, x, F, line)
                if has_w and has_eids:
                    _prefetch_weights(eids, p + dist, 4, w)
                if has_cs:
                    _prefetch_scales(indices, p + dist, 4, col_scale)
            add_scaled_rows(acc, x, (indices[p], indices[p + 1], indices[p + 2], indices[p + 3]),
                            (_coef(p, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 1, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 2, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),
                             _coef(p + 3, indices, eids, has_eids, w, has_w, col_scale, has_cs, one)), F)
            p += 4
    while p < e:  # the row's last edges: still prefetching (see _plain_row)
        if dist > 0 and p + dist < E:
            _prefetch_rows(indices, p + dist, 1, x, F, line)
            if has_w and has_eids:
                _prefetch_weights(eids, p + dist, 1, w)
            if has_cs:
                _prefetch_scales(indices, p + dist, 1, col_scale)
        add_scaled_rows(acc, x, (indices[p],), (_coef(p, indices, eids, has_eids, w, has_w, col_scale, has_cs, one),), F)
        p += 1


@njit(fastmath=FASTMATH, inline="always")
def _row(i, F, indptr, indices, eids, has_eids, w, has_w, x, out, acc, row_scale, has_rs,
         col_scale, has_cs, unroll, dist, line, one, stream):
    """Output row ``i``, summed in ``acc`` and written once (the body of the generic and fixed kernels).

    ``stream``: write it past the caches (Note [streaming stores]); only the fixed kernel passes True.
    """
    if has_w or has_cs:
        _scaled_row(i, F, indptr, indices, eids, has_eids, w, has_w, x, acc, col_scale, has_cs, unroll, dist, line,
                    one)
    else:
        _plain_row(i, F, indptr, indices, x, acc, unroll, dist, line)
    if has_rs:
        if stream:
            stream_scaled_row(out, i, acc, row_scale[i], F)
        else:
            store_scaled_row(out, i, acc, row_scale[i], F)
    elif stream:
        stream_row(out, i, acc, F)
    else:
        store_row(out, i, acc, F)


#: a SpMM section's work, edges times width: serial below a size (Note [serial below a size])
_SPMM_WORK = lambda indptr, indices, eids, has_eids, w, has_w, x, *_: indices.shape[0] * x.shape[1]


@parallel_above(_SPMM_WORK, fastmath=FASTMATH, cache=True)
def spmm_rows(indptr, indices, eids, has_eids, w, has_w, x, out, row_scale, has_rs,
              col_scale, has_cs, bounds, unroll, dist, line, one, stream):
    """SpMM sum over row blocks, feature width known at run time.

    Args:
        indptr, indices: the CSR view (int32 or int64).
        eids: canonical edge id per position (a dummy when ``has_eids`` is False).
        w: ``[E, >=1]`` edge weights, column 0 used (a dummy when ``has_w`` is False).
        x: ``[num_cols, F]`` features; out: ``[num_rows, F]``, fully written.
        row_scale: ``[num_rows]`` factor per output row (mean).
        col_scale: ``[num_cols]`` factor per gathered row (mean backward).
        bounds: ``[B + 1]`` row block boundaries; block ``b`` is rows
            ``bounds[b] .. bounds[b+1]-1``.
        unroll: 1, 4 or 8 (Note [variant knobs]).
        dist: prefetch distance in edges, 0 for none.
        line: elements per 64-byte cache line (16 for float32, 8 for float64).
        one: ``1`` in the float dtype (fixes the type of the coefficients).
        stream: ignored here (the output row is the accumulator); the fixed twin
            streams its rows when True (Note [streaming stores]).
    """
    F = x.shape[1]
    for b in prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            # F is a run-time value here, so no stack row: the output row is its own accumulator
            _row(i, F, indptr, indices, eids, has_eids, w, has_w, x, out, out[i], row_scale, has_rs,
                 col_scale, has_cs, unroll, dist, line, one, False)


_FIXED: dict[tuple[int, int], object] = {}


def spmm_rows_fixed(F: int, line: int = 16):
    """:func:`spmm_rows` compiled with the feature width ``F`` and the cache line ``line`` constants.

    Returns a kernel with the signature of :func:`spmm_rows` (its ``line``
    argument is ignored). ``F`` and ``line`` (elements per 64-byte line) are
    closure constants, so each pair compiles once per process and numba's
    disk cache keys the machine code on them (Note [variant knobs]); a
    ``numba.literally`` argument would re-run type inference on every call.
    A constant ``line`` turns each prefetched row into ``F / line`` straight
    prefetches instead of a loop with a run-time step, a few percent faster
    (``results/studies/isplib-kernels.md``).
    """
    F, LINE = int(F), int(line)
    kernel = _FIXED.get((F, LINE))
    if kernel is None:
        @parallel_above(_SPMM_WORK, fastmath=FASTMATH, cache=True)
        def spmm_fixed(indptr, indices, eids, has_eids, w, has_w, x, out, row_scale, has_rs,
                       col_scale, has_cs, bounds, unroll, dist, line, one, stream):
            for b in prange(bounds.shape[0] - 1):
                acc = stack_row(x, F)  # Note [stack accumulator]
                for i in range(bounds[b], bounds[b + 1]):
                    _row(i, F, indptr, indices, eids, has_eids, w, has_w, x, out, acc, row_scale, has_rs,
                         col_scale, has_cs, unroll, dist, LINE, one, stream)
                if stream:
                    stream_fence()  # the streamed rows are visible before this block counts as done

        kernel = _FIXED[(F, LINE)] = spmm_fixed
    return kernel


@parallel_above(lambda indptr, indices, eids, has_eids, w, x, *_: indices.shape[0] * x.shape[1] * x.shape[2],
                fastmath=FASTMATH, cache=True)
def spmm_heads(indptr, indices, eids, has_eids, w, x, out, row_scale, has_rs,
               col_scale, has_cs, bounds, dist, line, one):
    """SpMM sum with one weight per (edge, head): ``out[i,h,:] = sum w[e,h] x[j,h,:]``.

    Used when ``H > 1`` and a weight is given (attention aggregation); the
    other cases flatten ``[N, H, D]`` to ``[N, H*D]`` and use :func:`spmm_rows`.

    Shapes:
        w ``[E, H]``; x ``[num_cols, H, D]``; out ``[num_rows, H, D]``.
    """
    H = x.shape[1]
    D = x.shape[2]
    E = indices.shape[0]
    for b in prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            for h in range(H):
                for d in range(D):
                    out[i, h, d] = 0
            for p in range(indptr[i], indptr[i + 1]):
                if dist > 0 and p + dist < E:
                    jj = indices[p + dist]
                    for h in range(H):
                        for c in range(0, D, line):
                            prefetch_row(x[jj], h, c)
                j = indices[p]
                eid = eids[p] if has_eids else p
                cs = col_scale[j] if has_cs else one
                for h in range(H):
                    c = w[eid, h] * cs
                    for d in range(D):
                        out[i, h, d] += c * x[j, h, d]
            if has_rs:
                r = row_scale[i]
                for h in range(H):
                    for d in range(D):
                        out[i, h, d] *= r


@parallel_above(lambda x, *_: x.size, fastmath=FASTMATH, cache=True)
def scale_rows(x, scale, out):
    """``out[i, :] = x[i, :] * scale[i]`` for ``[N, F]`` arrays, rows split over threads (Note [mean backward])."""
    for i in prange(x.shape[0]):
        s = scale[i]
        for c in range(x.shape[1]):
            out[i, c] = x[i, c] * s
