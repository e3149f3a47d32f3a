"""The kernels isplib implements: the standard set (names and arguments fixed by the spec) and the mean's own pair.

Each function is ``kernel(graph, *inputs, *outputs, **attrs)`` as in Note
[kernel calling convention] of :mod:`gnnbench.api`: ``graph`` is a
:class:`~gnnbench.runtime.graph.GraphView` whose ``prepared`` is the
:class:`~gnnbench.systems.isplib.prepared.IsplibGraph` built by
:func:`~gnnbench.systems.isplib.prepared.prepare`; arrays are C-contiguous
NumPy views; outputs are written in place and nothing is returned.

The SpMM sums use the tuned variant for ``(orientation, H*D, dtype)`` (Note
[tuning lookup]); every other kernel splits rows into the prepared
nonzero-balanced blocks. :func:`warm_up` compiles (or loads from numba's disk
cache) everything for one index/float dtype pair, so no compilation lands in
a timed epoch.
"""
from __future__ import annotations

import weakref
from typing import Any

import numba
import numpy as np

from gnnbench.runtime.graph import Graph, GraphView
from gnnbench.runtime.serial import SERIAL_BELOW
from gnnbench.systems.isplib import edge_numba as _edge
from gnnbench.systems.isplib import max_numba as _max
from gnnbench.systems.isplib import spmm_numba as _spmm
from gnnbench.systems.isplib import typed_numba as _typed
from gnnbench.systems.isplib.prepared import _as_prepared
from gnnbench.systems.isplib.variant import ThreadScope, run_variant
from gnnbench.systems.isplib.warm import tiny_graph

__all__ = ["spmm_sum", "spmm_sum_backward", "spmm_mean", "spmm_mean_backward", "spmm_weight_backward", "spmm_max", "spmm_max_backward",
           "spmm_max_weight_backward", "sddmm_dot", "sddmm_add", "edge_sum", "edge_softmax",
           "edge_softmax_backward", "typed_aggregate", "typed_aggregate_backward", "typed_weight_backward",
           "warm_up", "KERNELS"]


def _flat(a: np.ndarray) -> np.ndarray:
    """``[N, H, D]`` as ``[N, H*D]`` without a copy (outputs must stay views)."""
    if not a.flags.c_contiguous:
        raise ValueError(f"isplib kernels need C-contiguous arrays (got strides {a.strides} for shape "
                         f"{a.shape}); pass np.ascontiguousarray(...)")
    return a.reshape(a.shape[0], -1)


def _read_only(a: np.ndarray | None) -> np.ndarray | None:
    """``a`` as a read-only view (no copy), so a kernel has one numba signature per path.

    Note [one signature]
        numba compiles one specialisation per argument type, and a read-only
        array is another type than a writable one. PyTorch hands isplib
        writable inputs and TensorFlow read-only ones (Note [TensorFlow
        buffers]); the tuner's samples are its own arrays. Passing every
        gathered input (``x``, the edge weights) read-only, as the graph's
        arrays already are, gives all of them the specialisation the warm-up
        compiled, so neither a framework's first epoch nor the tuner's budget
        pays for another (a writable sample once cost 17.3 s of a 1.8 s
        budget at 4M edges).
    """
    if a is None or not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def _eids(graph: GraphView):
    return (graph.edge_ids, True) if graph.edge_ids is not None else (None, False)


def _sum(graph: GraphView, x: np.ndarray, weight: np.ndarray | None, out: np.ndarray,
         row_scale: np.ndarray | None, col_scale: np.ndarray | None, reduce: str) -> None:
    """The one SpMM-sum entry: tuned flat loop, or the per-head loop for multi-head weights."""
    p = _as_prepared(graph)
    fdt = x.dtype
    dummies = p.dummies(graph.index_dtype, fdt)
    H = x.shape[1]
    width = H * x.shape[2]
    if weight is not None and H > 1:
        variant = p.variant(width, fdt, "heads", reduce, record=False)  # not tuned: prefetch and threads only
        bounds = p.bounds_for(variant)
        eids, has_eids = _eids(graph)
        with ThreadScope(variant):
            _spmm.spmm_heads(*p.csr(graph), dummies.index if eids is None else eids, has_eids,
                             weight, x, out,
                             dummies.vector if row_scale is None else row_scale, row_scale is not None,
                             dummies.vector if col_scale is None else col_scale, col_scale is not None,
                             bounds, variant.prefetch, 64 // fdt.itemsize, dummies.one)
        return
    weighting = "unweighted" if weight is None else "weighted"
    if (weight is not None and graph.transposed and row_scale is None and col_scale is None
            and fdt == np.float32):
        factors = p.gcn_factors(weight)  # Note [factorised weights]
        if factors is not None:
            weight, row_scale, col_scale, weighting = None, factors.row, factors.col, "gcn"
    variant = p.variant(width, fdt, weighting, reduce)  # Note [tuning key]
    # without a weight the edge ids are never read
    eids = graph.edge_ids if weight is not None else None
    run_variant(variant, p.bounds_for(variant), *p.csr(graph), eids, _read_only(weight),
                _read_only(_flat(x)), _flat(out), row_scale, col_scale, dummies)  # Note [one signature]


def spmm_sum(graph: GraphView, x: np.ndarray, weight: np.ndarray | None, out: np.ndarray, *,
             reduce: str = "sum") -> None:
    """``out[i,h,:] = sum_{e=j->i} w[e,h] x[j,h,:]``, divided by ``max(deg(i), 1)`` for a mean.

    Shapes:
        x ``[num_cols, H, D]``; weight ``[E, H]`` or None; out ``[num_rows, H, D]``.
    """
    p = _as_prepared(graph)
    _sum(graph, x, weight, out, p.inv_row_degree(x.dtype) if reduce == "mean" else None, None, reduce)


def spmm_sum_backward(graphT: GraphView, grad_out: np.ndarray, weight: np.ndarray | None,
                      grad_x: np.ndarray, *, reduce: str = "sum") -> None:
    """``grad_x[j] = sum_{p in row j of graphT} w[edge_ids[p]] grad_out[i] (/ max(deg_in(i), 1))``.

    Runs the tuned SpMM on the transposed view; the mean's ``1/deg`` becomes a
    per-gathered-row factor (``col_degree`` of the transposed view).

    Shapes:
        grad_out ``[N, H, D]``; weight ``[E, H]`` or None; grad_x ``[N, H, D]``.
    """
    p = _as_prepared(graphT)
    _sum(graphT, grad_out, weight, grad_x, None, p.inv_col_degree(grad_out.dtype) if reduce == "mean" else None,
         reduce)


def spmm_mean(graph: GraphView, x: np.ndarray, weight: np.ndarray | None, out: np.ndarray, *,
              reduce: str = "mean") -> None:
    """``out[i,h,:] = sum_{e=j->i} w[e,h] x[j,h,:] / max(deg(i), 1)``: :func:`spmm_sum`'s loop, each row scaled once.

    Shapes:
        as :func:`spmm_sum`.
    """
    spmm_sum(graph, x, weight, out, reduce="mean")


def spmm_mean_backward(graphT: GraphView, grad_out: np.ndarray, weight: np.ndarray | None,
                       grad_x: np.ndarray, scaled: np.ndarray, *, reduce: str = "mean") -> None:
    """``grad_x[j] = sum_{p in row j of graphT} w[edge_ids[p]] grad_out[i] / max(deg_in(i), 1)``.

    Note [mean backward]
        The mean's ``1/deg(i)`` belongs to the gathered row ``i`` on the
        transposed view. Multiplying every gathered row by a gathered scale
        (:func:`spmm_sum_backward`'s way, Note [gathered scales]) made the
        backward a quarter slower than the forward; scaling ``grad_out`` once per row into
        ``scaled`` (a workspace the framework allocates, one row per destination) and
        then running the plain sum costs one pass over ``N`` rows instead of a
        load and a multiply per edge, and measured within a few percent of the plain sum
        itself (``results/studies/isplib-kernels.md``). The sum runs under the transposed view's
        ``sum`` tuning key: it is that loop.

    Shapes:
        grad_out, scaled ``[num_cols, H, D]``; weight ``[E, H]`` or None; grad_x ``[num_rows, H, D]``
        (on a block's transposed view: ``[N, ...]`` destinations and ``[S, ...]`` sources).
    """
    p = _as_prepared(graphT)
    _spmm.scale_rows(_flat(grad_out), p.inv_col_degree(grad_out.dtype), _flat(scaled))
    _sum(graphT, scaled, weight, grad_x, None, None, "sum")


def spmm_weight_backward(graph: GraphView, x: np.ndarray, grad_out: np.ndarray, grad_weight: np.ndarray, *,
                         reduce: str = "sum") -> None:
    """``grad_weight[e,h] = <x[j,h,:], grad_out[i,h,:]>`` (``/ max(deg(i), 1)`` for a mean).

    Shapes:
        x, grad_out ``[N, H, D]``; grad_weight ``[E, H]``.
    """
    p = _as_prepared(graph)
    eids, has_eids = _eids(graph)
    d = p.dummies(graph.index_dtype, x.dtype)
    rs = p.inv_row_degree(x.dtype) if reduce == "mean" else None
    _edge.sddmm_dot_rows(*p.csr(graph), d.index if eids is None else eids, has_eids, x, grad_out,
                         grad_weight, d.vector if rs is None else rs, rs is not None, p.default_bounds(),
                         x.dtype.type(0))


def spmm_max(graph: GraphView, x: np.ndarray, weight: np.ndarray | None, out: np.ndarray, argmax: np.ndarray, *,
             reduce: str = "max") -> None:
    """``out[i,h,d] = max_e w[e,h] x[j,h,d]``; ``argmax`` the first winning edge id, -1 and 0 for empty rows.

    Shapes:
        x ``[num_cols, H, D]``; weight ``[E, H]`` or None; out, argmax ``[num_rows, H, D]``.
    """
    p = _as_prepared(graph)
    eids, has_eids = _eids(graph)
    d = p.dummies(graph.index_dtype, x.dtype)
    _max.spmm_max_rows(*p.csr(graph), d.index if eids is None else eids, has_eids,
                       d.weight if weight is None else weight, weight is not None, x, out, argmax,
                       p.default_bounds())


def spmm_max_backward(graph: GraphView, grad_out: np.ndarray, weight: np.ndarray | None, argmax: np.ndarray,
                      grad_x: np.ndarray) -> None:
    """``grad_x[indices[e],h,d] += w[e,h] grad_out[i,h,d]`` for ``e = argmax[i,h,d] >= 0`` (forward view).

    ``grad_x`` arrives zero-filled; threads own column chunks (Note [race-free max backward]).
    """
    p = _as_prepared(graph)
    d = p.dummies(graph.index_dtype, grad_out.dtype)
    _max.spmm_max_backward_cols(p.csr(graph)[1], d.weight if weight is None else weight, weight is not None,
                                grad_out, argmax, grad_x, 64 // grad_out.dtype.itemsize)


def spmm_max_weight_backward(graph: GraphView, x: np.ndarray, grad_out: np.ndarray, argmax: np.ndarray,
                             grad_weight: np.ndarray) -> None:
    """``grad_weight[e,h] += grad_out[i,h,d] x[indices[e],h,d]`` for each winner ``e`` (zero-filled output)."""
    p = _as_prepared(graph)
    _max.spmm_max_weight_backward_rows(*p.csr(graph), x, grad_out, argmax, grad_weight,
                                       p.default_bounds())


def sddmm_dot(graph: GraphView, src: np.ndarray, dst: np.ndarray, out: np.ndarray) -> None:
    """``out[e,h] = sum_d src[j,h,d] dst[i,h,d]``.

    Shapes:
        src, dst ``[N, H, D]``; out ``[E, H]``.
    """
    p = _as_prepared(graph)
    eids, has_eids = _eids(graph)
    d = p.dummies(graph.index_dtype, src.dtype)
    _edge.sddmm_dot_rows(*p.csr(graph), d.index if eids is None else eids, has_eids, src, dst, out,
                         d.vector, False, p.default_bounds(), src.dtype.type(0))


def sddmm_add(graph: GraphView, src: np.ndarray, dst: np.ndarray, out: np.ndarray) -> None:
    """``out[e,h] = src[j,h] + dst[i,h]``.

    Shapes:
        src, dst ``[N, H]``; out ``[E, H]``.
    """
    p = _as_prepared(graph)
    eids, has_eids = _eids(graph)
    d = p.dummies(graph.index_dtype, src.dtype)
    _edge.sddmm_add_rows(*p.csr(graph), d.index if eids is None else eids, has_eids, src, dst, out,
                         p.default_bounds())


def edge_sum(graph: GraphView, values: np.ndarray, out: np.ndarray) -> None:
    """``out[i,h] = sum_{p in row i} values[eid(p), h]`` on either view.

    Shapes:
        values ``[E, H]``; out ``[num_rows, H]``.
    """
    p = _as_prepared(graph)
    eids, has_eids = _eids(graph)
    d = p.dummies(graph.index_dtype, values.dtype)
    _edge.edge_sum_rows(graph.indptr, d.index if eids is None else eids, has_eids, values, out, p.default_bounds())


def edge_softmax(graph: GraphView, scores: np.ndarray, out: np.ndarray) -> None:
    """Softmax of ``scores`` over each row's edges, per head, max-subtracted.

    Shapes:
        scores, out ``[E, H]``.
    """
    p = _as_prepared(graph)
    eids, has_eids = _eids(graph)
    d = p.dummies(graph.index_dtype, scores.dtype)
    _edge.edge_softmax_rows(graph.indptr, d.index if eids is None else eids, has_eids, scores, out,
                            p.default_bounds())


def edge_softmax_backward(graph: GraphView, out: np.ndarray, grad_out: np.ndarray, grad_scores: np.ndarray) -> None:
    """``grad_scores[e] = out[e] (grad_out[e] - sum_row out * grad_out)``.

    Shapes:
        out, grad_out, grad_scores ``[E, H]``.
    """
    p = _as_prepared(graph)
    eids, has_eids = _eids(graph)
    d = p.dummies(graph.index_dtype, out.dtype)
    _edge.edge_softmax_backward_rows(graph.indptr, d.index if eids is None else eids, has_eids, out, grad_out,
                                     grad_scores, p.default_bounds())


# ---------------------------------------------------------------- typed aggregation
def _run_typed(graph: GraphView, x: np.ndarray, mats: np.ndarray, norm: np.ndarray, etype: np.ndarray,
               out: np.ndarray) -> None:
    p = _as_prepared(graph)
    eids, has_eids = _eids(graph)
    d = p.dummies(graph.index_dtype, x.dtype)
    _typed.typed_rows(*p.csr(graph), d.index if eids is None else eids, has_eids, _read_only(etype),
                      _read_only(norm), _read_only(x), _read_only(mats), out, p.default_bounds(),
                      x.dtype.type(0))  # Note [one signature]: every input read-only


def typed_aggregate(graph: GraphView, x: np.ndarray, weight: np.ndarray, norm: np.ndarray, etype: np.ndarray,
                    out: np.ndarray) -> None:
    """``out[i,h,:] = sum_{e=j->i} norm[e,h] x[j,h,:] @ weight[etype[e]]``, fused over relations.

    Sums each relation's rows per destination, then one product with ``W[r]`` per (row, relation)
    (Note [typed aggregation loop] in :mod:`~gnnbench.systems.isplib.typed_numba`); not tuned
    (Note [typed kernel untuned]).

    Shapes:
        x ``[num_cols, H, D]``; weight ``[R, D, K]``; norm ``[E, H]``; etype ``[E]``; out ``[num_rows, H, K]``.
    """
    _run_typed(graph, x, np.ascontiguousarray(weight.transpose(0, 2, 1)), norm, etype, out)  # rows of W[r]^T


def typed_aggregate_backward(graphT: GraphView, grad_out: np.ndarray, weight: np.ndarray, norm: np.ndarray,
                             etype: np.ndarray, grad_x: np.ndarray) -> None:
    """On the transposed view: ``grad_x[j,h,:] = sum_{e=j->i} norm[e,h] grad_out[i,h,:] @ weight[etype[e]]^T``.

    The forward's loop with ``W[r]`` in place of ``W[r]^T`` (Note [typed aggregation loop]).

    Shapes:
        grad_out ``[num_cols, H, K]``; weight ``[R, D, K]``; norm ``[E, H]``; etype ``[E]``;
        grad_x ``[num_rows, H, D]``.
    """
    _run_typed(graphT, grad_out, weight, norm, etype, grad_x)   # rows of W[r]


def typed_weight_backward(graph: GraphView, x: np.ndarray, grad_out: np.ndarray, norm: np.ndarray,
                          etype: np.ndarray, weight: np.ndarray, grad_weight: np.ndarray) -> None:
    """``grad_weight[r] = sum_{e=j->i of relation r} sum_h norm[e,h] x[j,h,:]^T grad_out[i,h,:]``; zero for a
    relation without edges. ``weight`` only gives ``R`` (the declaration's); it is not read.

    Threads own slices of the input features (Note [weight gradient by feature slices]).

    Shapes:
        x ``[num_cols, H, D]``; grad_out ``[num_rows, H, K]``; norm ``[E, H]``; etype ``[E]``;
        grad_weight ``[R, D, K]``.
    """
    p = _as_prepared(graph)
    eids, has_eids = _eids(graph)
    d = p.dummies(graph.index_dtype, x.dtype)
    indices = p.csr(graph)[1]
    # one slice where the serial twin runs (Note [serial below a size]): it would only walk the rows again
    threads = numba.get_num_threads() if _typed.weight_work(indices, x, grad_out) >= SERIAL_BELOW else 1
    slices = _typed.feature_slices(x.shape[2], threads, 64 // x.dtype.itemsize)
    _typed.typed_weight_rows(*p.csr(graph), d.index if eids is None else eids, has_eids, _read_only(etype),
                             _read_only(norm), _read_only(x), _read_only(grad_out), grad_weight, slices)


#: name -> kernel: the standard set in spec order, then the mean's own (Note [mean backward]).
KERNELS = {f.__name__: f for f in (spmm_sum, spmm_sum_backward, spmm_weight_backward, spmm_max, spmm_max_backward,
                                   spmm_max_weight_backward, sddmm_dot, sddmm_add, edge_sum, edge_softmax,
                                   edge_softmax_backward, typed_aggregate, typed_aggregate_backward,
                                   typed_weight_backward, spmm_mean, spmm_mean_backward)}


def warm_up(index_dtype: Any = np.int64, float_dtype: Any = np.float32) -> None:
    """Compile (or load from numba's disk cache) every isplib kernel for one dtype pair.

    Call it from ``prepare``; afterwards no kernel call compiles. Each
    signature compiles once per machine (tens of seconds the first time, then
    well under a second from the cache).

    Args:
        index_dtype: int32 or int64.
        float_dtype: float32 or float64.
    """
    fdt = np.dtype(float_dtype)
    g = tiny_graph(index_dtype)
    fwd, bwd = g.view(), g.view(transposed=True)
    n, e = g.num_nodes, g.num_edges
    rng = np.random.default_rng(0)
    for H, D in ((1, 3), (2, 2)):
        x = rng.standard_normal((n, H, D)).astype(fdt)
        w = rng.standard_normal((e, H)).astype(fdt)
        out = np.empty_like(x)
        for weight in (None, w):
            for reduce in ("sum", "mean"):
                spmm_sum(fwd, x, weight, out, reduce=reduce)
                spmm_sum_backward(bwd, x, weight, out, reduce=reduce)
            spmm_mean_backward(bwd, x, weight, out, np.empty_like(x))
            argmax = np.empty(x.shape, dtype=np.int64)
            spmm_max(fwd, x, weight, out, argmax)
            spmm_max_backward(fwd, x, weight, argmax, np.zeros_like(x))
        spmm_weight_backward(fwd, x, x, np.empty((e, H), fdt), reduce="mean")
        spmm_max_weight_backward(fwd, x, x, argmax, np.zeros((e, H), fdt))
        for view in (fwd, bwd):
            sddmm_dot(view, x, x, np.empty((e, H), fdt))
            sddmm_add(view, x[:, :, 0].copy(), x[:, :, 0].copy(), np.empty((e, H), fdt))
            edge_sum(view, w, np.empty((n, H), fdt))
        soft = np.empty_like(w)
        edge_softmax(fwd, w, soft)
        edge_softmax_backward(fwd, soft, w, np.empty_like(w))
    _warm_typed(fwd, bwd, fdt, rng)


def _warm_typed(fwd: GraphView, bwd: GraphView, fdt: np.dtype, rng: np.random.Generator) -> None:
    """The typed aggregation's two compiled functions (forward and the gradient of x share one)."""
    relations, heads, d_in, d_out = 3, 2, 2, 3
    x = rng.standard_normal((fwd.num_cols, heads, d_in)).astype(fdt)
    weight = rng.standard_normal((relations, d_in, d_out)).astype(fdt)
    norm = rng.standard_normal((fwd.num_edges, heads)).astype(fdt)
    etype = np.arange(fwd.num_edges, dtype=np.int64) % relations
    out = np.empty((fwd.num_rows, heads, d_out), dtype=fdt)
    typed_aggregate(fwd, x, weight, norm, etype, out)
    typed_aggregate_backward(bwd, out, weight, norm, etype, np.empty_like(x))
    typed_weight_backward(fwd, x, out, norm, etype, weight, np.empty_like(weight))


# ---------------------------------------------------------------- hooks the spec names
# The graphs this process prepared, by orientation: report() describes them after the epochs, when it is
# known which kernel paths the run used. Weak references: a report must not keep a graph's arrays alive
# past its run (an in-process run, verify's many graphs).
_PREPARED: dict[str, Any] = {}
#: (index dtype, float dtype) pairs warm_up has run for in this process
_WARMED: set[tuple[str, str]] = set()


def prepare(view: GraphView):
    """The spec's ``prepare`` hook: partitions and tuning lookup, then compilation, all outside epochs."""
    from gnnbench.systems.isplib.prepared import prepare as build

    prepared = build(view)
    key = (np.dtype(view.index_dtype).name, "float32")
    if not view.transposed and key not in _WARMED:  # once per process: a sampled run prepares every block
        warm_up(view.index_dtype, np.float32)       # (0.44 s a block when it ran each time, issue 34)
        _WARMED.add(key)
    _PREPARED["transposed" if view.transposed else "forward"] = weakref.ref(prepared)
    return prepared


def report() -> dict:
    """The spec's ``report`` hook: which SpMM variants the run used (tuned, or the default and why)."""
    from gnnbench.systems.isplib.prepared import describe_tuning

    alive = {orientation: ref() for orientation, ref in sorted(_PREPARED.items())}
    tuning = {orientation: describe_tuning(prepared, after_run=True)
              for orientation, prepared in alive.items() if prepared is not None}
    return {"tuning": tuning, "summary": [f"{orientation}: {line}" for orientation, line in tuning.items()]}


def tune(graph: Graph, widths=None, dtype: Any = np.float32, *, views=None, budget_s: float | None = None,
         progress=None, starting=None):
    """The spec's ``tune`` hook.

    ``gnnbench tune --system isplib`` passes ``widths``: both orientations,
    unweighted and weighted, are tuned for them. A run passes its prepared
    ``views`` and a budget (Note [tune on first use] in :mod:`gnnbench.run.harness`):
    the paths its first epoch ran untuned are tuned and installed, after
    one call of ``starting``, and None is returned when there were none.
    """
    if views is not None:
        from gnnbench.systems.isplib.first_use import tune_pending

        return tune_pending(views, budget_s=budget_s, progress=progress, starting=starting)
    from gnnbench.systems.isplib.tuning import tune as run_tuning

    return run_tuning(graph, widths, dtype, budget_s=budget_s, progress=progress)
