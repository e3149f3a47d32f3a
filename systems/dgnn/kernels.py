"""dgNN-style fused GAT attention on the CPU: one pass per row, recompute in backward.

dgNN (Zhang et al., MLSys 2022) fuses GAT's whole attention block -- score
addition, leaky ReLU, edge softmax and weighted aggregation -- into one loop per
destination node, and keeps only each row's softmax max and sum. The backward
pass recomputes the attention coefficients from those two ``N x H`` arrays
instead of storing the ``E x H`` coefficients. Memory, not speed, is the point.

For edge ``e = j -> i`` and head ``h``::

    s_e     = leaky_relu(score_src[j,h] + score_dst[i,h])
    a_e     = exp(s_e - row_max[i,h]) / row_sum[i,h]
    out[i,h,:] = sum_{e into i} a_e * x[j,h,:]

Note [online softmax]
    The forward pass visits each row once, like flash attention: it keeps a
    running max ``m``, a running sum ``l`` of ``exp(s - m)`` and the running
    weighted sum in ``out[i,h,:]`` itself. When a score beats ``m`` the sum and
    the partial output are rescaled by ``exp(m_old - m_new)``. At the end
    ``out /= l`` and ``(m, l)`` are stored as ``row_max``, ``row_sum``. Empty
    rows give ``out = 0``, ``row_max = 0`` and ``row_sum = 0``.

Note [fused backward]
    With ``dA_e = <grad_out[i,h], x[j,h]>``, ``c_i = sum_e a_e dA_e`` and
    ``g_e = lrelu'(score_src[j,h] + score_dst[i,h])`` (1 above 0, else the
    negative slope)::

        grad_score_dst[i] = sum_{e into i}   a_e (dA_e - c_i) g_e
        grad_score_src[j] = sum_{e out of j} a_e (dA_e - c_i) g_e
        grad_x[j]         = sum_{e out of j} a_e grad_out[i]

    Pass 1 walks the forward view (rows are destinations) and stores ``c_i``
    in the ``row_dot`` workspace; ``grad_score_dst`` uses the expansion
    ``sum a dA g - c sum a g`` with float64 row accumulators, so one walk
    suffices. Pass 2 walks the transposed view (rows are sources), so every
    row writes only its own outputs and no atomics are needed. Neither pass
    reads or writes a per-edge array, so ``edge_ids`` is never used.

Note [attention dropout]
    Attention dropout is off in gnnbench's GAT for every system, so the fused
    kernels and the composed ``sddmm -> edge_softmax -> spmm`` path compute the
    same function. Input-feature dropout stays (the model applies it before
    these kernels). A fused kernel with dropout would have to regenerate the
    mask from a seed in both passes; that is not needed here.

Note [no edge-sized memory]
    The kernels allocate nothing proportional to ``E`` or ``N``: the only
    allocation is a ``[chunks + 1]`` array of row bounds for load balancing
    (``chunks`` is 8 per thread), made in Python. The framework allocates
    the outputs, the two ``N x H`` saves and the ``N x H`` workspace.
    ``tests/systems/dgnn/test_dgnn_kernels.py`` checks both with NRT statistics and
    ``tracemalloc``.

Note [dgnn on typed graphs]
    R-GAT (MLPerf's layer: one GATConv per relation, summed) calls
    ``gat_aggregate`` once per relation on that relation's bipartite view
    (Note [relations on the existing operators] in gnnbench/runtime/hetero.py),
    so its attention already runs in this module's fused kernels, one
    relation at a time, with ``N x H`` saves per relation and no ``E x H``
    tensor. Fusing the relations into one pass as well would need a typed
    attention operator (scores and a softmax per relation within a row) that
    gnnbench/api.gnn does not declare. R-GCN's typed aggregation
    (``typed_aggregate``) is isplib's fused kernel, re-exported below.

Parallelism: rows are split into chunks of about equal ``edges + rows`` cost,
so a power-law graph's hubs do not serialise one thread's static share.
"""
from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from gnnbench.runtime.graph import Graph, GraphView

from .contract import check_arguments

__all__ = ["gat_fused", "gat_fused_backward", "prepare", "warm_up"]

_CHUNKS_PER_THREAD = 8
_FASTMATH = {"reassoc", "contract"}


# ------------------------------------------------------------------ scheduling
@njit(cache=True)
def _balanced_bounds(indptr, bounds):
    """Split rows into ``len(bounds) - 1`` chunks of equal ``indptr[i] + i`` cost."""
    n = indptr.shape[0] - 1
    k = bounds.shape[0] - 1
    total = np.int64(indptr[n]) + n
    bounds[0] = 0
    bounds[k] = n
    for c in range(1, k):
        target = total * c // k
        lo = bounds[c - 1]
        hi = n
        while lo < hi:  # first row whose cumulative cost reaches target
            mid = (lo + hi) // 2
            if np.int64(indptr[mid]) + mid < target:
                lo = mid + 1
            else:
                hi = mid
        bounds[c] = lo


def _bounds(view: GraphView) -> np.ndarray:
    chunks = max(1, min(view.num_rows, _CHUNKS_PER_THREAD * numba.get_num_threads()))
    bounds = np.empty(chunks + 1, dtype=np.int64)
    _balanced_bounds(view.indptr, bounds)
    return bounds


# --------------------------------------------------------------------- forward
@njit(parallel=True, cache=True, error_model="numpy", fastmath=_FASTMATH)
def _forward(indptr, indices, bounds, x, score_src, score_dst, out, row_max, row_sum, slope):
    num_heads = x.shape[1]
    dim = x.shape[2]
    for c in prange(bounds.shape[0] - 1):
        for i in range(bounds[c], bounds[c + 1]):
            start = indptr[i]
            end = indptr[i + 1]
            for h in range(num_heads):
                if start == end:
                    for d in range(dim):
                        out[i, h, d] = 0
                    row_max[i, h] = 0
                    row_sum[i, h] = 0
                    continue
                sd = score_dst[i, h]
                # first edge initialises the running state (Note [online softmax])
                j = indices[start]
                z = score_src[j, h] + sd
                m = z if z > 0 else z * slope
                total = 1.0
                for d in range(dim):
                    out[i, h, d] = x[j, h, d]
                for p in range(start + 1, end):
                    j = indices[p]
                    z = score_src[j, h] + sd
                    s = z if z > 0 else z * slope
                    if s > m:
                        scale = math.exp(m - s)
                        for d in range(dim):
                            out[i, h, d] = out[i, h, d] * scale + x[j, h, d]
                        total = total * scale + 1.0
                        m = s
                    else:
                        w = math.exp(s - m)
                        for d in range(dim):
                            out[i, h, d] += w * x[j, h, d]
                        total += w
                inv = 1.0 / total
                for d in range(dim):
                    out[i, h, d] *= inv
                row_max[i, h] = m
                row_sum[i, h] = total


# -------------------------------------------------------------------- backward
@njit(parallel=True, cache=True, error_model="numpy", fastmath=_FASTMATH)
def _backward_dst(indptr, indices, bounds, x, score_src, score_dst, row_max, row_sum,
                  grad_out, grad_score_dst, row_dot, slope):
    """Pass 1 (forward view): ``row_dot = c_i`` and ``grad_score_dst``."""
    num_heads = x.shape[1]
    dim = x.shape[2]
    for c in prange(bounds.shape[0] - 1):
        for i in range(bounds[c], bounds[c + 1]):
            start = indptr[i]
            end = indptr[i + 1]
            for h in range(num_heads):
                sd = score_dst[i, h]
                m = row_max[i, h]
                total = row_sum[i, h]
                inv = 1.0 / total if total > 0 else 0.0
                s_adA = 0.0  # sum a dA      (= c_i)
                s_adAg = 0.0  # sum a dA g
                s_ag = 0.0  # sum a g
                for p in range(start, end):
                    j = indices[p]
                    z = score_src[j, h] + sd
                    if z > 0:
                        s = z
                        g = 1.0
                    else:
                        s = z * slope
                        g = slope
                    a = math.exp(s - m) * inv
                    dA = grad_out[i, h, 0] * x[j, h, 0]
                    for d in range(1, dim):
                        dA += grad_out[i, h, d] * x[j, h, d]
                    ad = a * dA
                    s_adA += ad
                    s_adAg += ad * g
                    s_ag += a * g
                row_dot[i, h] = s_adA
                grad_score_dst[i, h] = s_adAg - s_adA * s_ag


@njit(parallel=True, cache=True, error_model="numpy", fastmath=_FASTMATH)
def _backward_src(indptr_t, indices_t, bounds, x, score_src, score_dst, row_max, row_sum,
                  grad_out, row_dot, grad_x, grad_score_src, slope):
    """Pass 2 (transposed view, rows are sources): ``grad_x`` and ``grad_score_src``."""
    num_heads = x.shape[1]
    dim = x.shape[2]
    for c in prange(bounds.shape[0] - 1):
        for j in range(bounds[c], bounds[c + 1]):
            start = indptr_t[j]
            end = indptr_t[j + 1]
            for h in range(num_heads):
                for d in range(dim):
                    grad_x[j, h, d] = 0
                ss = score_src[j, h]
                acc = 0.0
                for p in range(start, end):
                    i = indices_t[p]
                    z = ss + score_dst[i, h]
                    if z > 0:
                        s = z
                        g = 1.0
                    else:
                        s = z * slope
                        g = slope
                    total = row_sum[i, h]
                    # total >= 1 for a row that holds this edge; guard NaN-free anyway
                    a = math.exp(s - row_max[i, h]) / total if total > 0 else 0.0
                    dA = grad_out[i, h, 0] * x[j, h, 0]
                    for d in range(1, dim):
                        dA += grad_out[i, h, d] * x[j, h, d]
                    for d in range(dim):
                        grad_x[j, h, d] += a * grad_out[i, h, d]
                    acc += a * (dA - row_dot[i, h]) * g
                grad_score_src[j, h] = acc


# ---------------------------------------------------------------- entry points
def _is_cuda(a: Any) -> bool:
    return hasattr(a, "__cuda_array_interface__")


def _numpy(*arrays: Any) -> list[np.ndarray]:
    """Zero-copy NumPy views (CPU torch tensors pass through ``__array__``)."""
    return [a if isinstance(a, np.ndarray) else np.asarray(a) for a in arrays]


def gat_fused(graph: GraphView, x, score_src, score_dst, out, row_max, row_sum, *,
              negative_slope: float = 0.2) -> None:
    """Fused GAT attention and aggregation in one pass per destination row.

    ``out[i,h,:] = sum_{e=j->i} softmax_i(leaky_relu(score_src[j,h] +
    score_dst[i,h])) * x[j,h,:]`` computed with an online softmax
    (Note [online softmax]); only ``row_max`` and ``row_sum`` are kept.

    Args:
        graph: the forward view (rows are destinations).
        x: source features.
        score_src, score_dst: per-node attention halves.
        out: written in full (arrives uninitialised).
        row_max, row_sum: saves for the backward pass; 0 on empty rows.
        negative_slope (float): leaky ReLU slope. (default: ``0.2``)

    Shapes:
        x ``[S, H, D]``, out ``[N, H, D]``; score_src ``[S, H]``; score_dst, row_max, row_sum ``[N, H]``
        (S == N but on a sampled block).
    """
    if _is_cuda(x):
        from . import cuda
        return cuda.gat_fused(graph, x, score_src, score_dst, out, row_max, row_sum,
                              negative_slope=negative_slope)
    x, score_src, score_dst, out, row_max, row_sum = _numpy(x, score_src, score_dst, out, row_max, row_sum)
    check_arguments("gat_fused", graph, x, {"score_src": score_src, "score_dst": score_dst, "out": out,
                                            "row_max": row_max, "row_sum": row_sum})
    _forward(graph.indptr, graph.indices, _bounds(graph), x, score_src, score_dst, out,
             row_max, row_sum, x.dtype.type(negative_slope))


def gat_fused_backward(graph: GraphView, x, score_src, score_dst, row_max, row_sum, grad_out,
                       grad_x, grad_score_src, grad_score_dst, row_dot, *,
                       negative_slope: float = 0.2) -> None:
    """Gradients of :func:`gat_fused`, recomputing attention from the saved row stats.

    See Note [fused backward] for the math: pass 1 over the forward view fills
    ``row_dot`` (``c_i``) and ``grad_score_dst``; pass 2 over the transposed
    view (``graph.graph.view(transposed=True)``) fills ``grad_x`` and
    ``grad_score_src`` without atomics.

    Args:
        graph: the forward view.
        x, score_src, score_dst: the forward inputs.
        row_max, row_sum: the forward saves.
        grad_out: gradient of ``out``.
        grad_x, grad_score_src, grad_score_dst: written in full.
        row_dot: ``[N, H]`` workspace, uninitialised on entry.
        negative_slope (float): as in the forward call. (default: ``0.2``)

    Shapes:
        x, grad_x ``[S, H, D]``; grad_out ``[N, H, D]``; score_src, grad_score_src ``[S, H]``; all
        others ``[N, H]``.
    """
    if _is_cuda(x):
        from . import cuda
        return cuda.gat_fused_backward(graph, x, score_src, score_dst, row_max, row_sum, grad_out,
                                       grad_x, grad_score_src, grad_score_dst, row_dot,
                                       negative_slope=negative_slope)
    (x, score_src, score_dst, row_max, row_sum, grad_out, grad_x, grad_score_src, grad_score_dst,
     row_dot) = _numpy(x, score_src, score_dst, row_max, row_sum, grad_out, grad_x, grad_score_src,
                       grad_score_dst, row_dot)
    check_arguments("gat_fused_backward", graph, x,
                    {"score_src": score_src, "score_dst": score_dst, "row_max": row_max, "row_sum": row_sum,
                     "grad_out": grad_out, "grad_x": grad_x, "grad_score_src": grad_score_src,
                     "grad_score_dst": grad_score_dst, "row_dot": row_dot})
    slope = x.dtype.type(negative_slope)
    _backward_dst(graph.indptr, graph.indices, _bounds(graph), x, score_src, score_dst,
                  row_max, row_sum, grad_out, grad_score_dst, row_dot, slope)
    graph_t = graph.graph.view(transposed=True)
    _backward_src(graph_t.indptr, graph_t.indices, _bounds(graph_t), x, score_src, score_dst,
                  row_max, row_sum, grad_out, row_dot, grad_x, grad_score_src, slope)


def prepare(view: GraphView):
    """Compile (or load) the fused kernels, so compile time is preparation, and prepare isplib's.

    The fused kernels need nothing else (the transposed view is cached by the
    :class:`Graph`); the other operators reuse isplib's kernels (see the spec),
    whose prepared partitions this returns.
    """
    from gnnbench.systems.isplib import kernels as isplib

    if not view.transposed:
        warm_up(view.index_dtype, np.float32)
    return isplib.prepare(view)


# The other operators of the system API: isplib's kernels, so that GCN, GIN, GraphSAGE and R-GCN's typed
# aggregation run on dgnn too and only GAT differs from isplib (see dgnn.gnn, Note [dgnn on typed graphs]).
from gnnbench.systems.isplib.kernels import (  # noqa: E402, F401 - re-exported: dgnn.gnn names them
    edge_softmax, edge_softmax_backward, edge_sum, sddmm_add, sddmm_dot, spmm_max, spmm_max_backward,
    spmm_max_weight_backward, spmm_sum, spmm_sum_backward, spmm_weight_backward, typed_aggregate,
    typed_aggregate_backward, typed_weight_backward,
)


def warm_up(index_dtype: Any, float_dtype: Any, device: str = "cpu") -> None:
    """Compile (or load from numba's cache) every kernel for one dtype pair.

    Runs both kernels on a 3-node graph with an empty row, so the compile
    time stays out of timed epochs.

    Args:
        index_dtype: ``int32`` or ``int64``.
        float_dtype: ``float32`` or ``float64``.
        device (str): ``"cpu"`` or ``"cuda"`` (the numba.cuda kernels).
            (default: ``"cpu"``)
    """
    if device == "cuda":
        from . import cuda
        return cuda.warm_up(index_dtype, float_dtype)
    if device != "cpu":
        raise ValueError(f"dgnn.warm_up: device must be 'cpu' or 'cuda' (got {device!r})")
    fdt = np.dtype(float_dtype)
    g = Graph.from_edges(np.array([0, 1, 2, 1]), np.array([1, 1, 2, 2]), 3, index_dtype)
    view = g.view()
    x = np.ones((3, 1, 2), dtype=fdt)
    nh = lambda: np.zeros((3, 1), dtype=fdt)  # noqa: E731
    ss, sd, row_max, row_sum = nh(), nh(), nh(), nh()
    out = np.empty_like(x)
    gat_fused(view, x, ss, sd, out, row_max, row_sum, negative_slope=0.2)
    gat_fused_backward(view, x, ss, sd, row_max, row_sum, x, np.empty_like(x), nh(), nh(), nh(),
                       negative_slope=0.2)
