"""dgNN-style fused GAT attention on CUDA, as numba.cuda kernels.

The same math as :mod:`gnnbench.systems.dgnn.kernels` (Note [online softmax],
Note [fused backward], Note [attention dropout] there), laid out for a GPU in
the simplest honest way: one 32-thread block (one warp) per ``(row, head)``.

* forward: every thread walks the whole row computing the same scores and
  running max/sum (the score loads are warp broadcasts), and owns the feature
  columns ``d = t, t + 32, ...`` of ``out[i,h,:]``, which it uses as its
  accumulator. Thread 0 stores ``row_max`` and ``row_sum``.
* backward pass 1 (forward view): threads split the row's edges, each keeps
  float64 partial sums of ``a dA``, ``a dA g`` and ``a g``; a shared-memory
  tree reduces them and thread 0 writes ``row_dot`` and ``grad_score_dst``.
* backward pass 2 (transposed view, rows are sources): first threads own
  feature columns of ``grad_x[j,h,:]`` and walk the row; then they split the
  row's edges for ``grad_score_src`` and reduce as in pass 1. No atomics.

Nothing edge-sized is allocated: the kernels use 768 bytes of shared memory
per block, and the only device memory added is a copy of the graph's
``indptr``/``indices`` for each orientation, uploaded once per view.

Arrays may be anything with ``__cuda_array_interface__`` (torch CUDA tensors,
CuPy, numba device arrays); torch tensors are launched on torch's current
stream. Scalars are computed in float64 on the device; outputs keep the input
dtype.
"""
from __future__ import annotations

import math
import weakref
from typing import Any

import numba
import numpy as np
from numba import cuda

from gnnbench.runtime.graph import Graph, GraphView

from .contract import check_arguments

__all__ = ["gat_fused", "gat_fused_backward", "warm_up", "is_available"]

_THREADS = 32  # one warp per (row, head); the reductions below assume a power of two


def is_available() -> bool:
    """Whether numba.cuda sees a usable GPU (the simulator counts, for tests)."""
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver install is "not available", not a crash
        return False


# --------------------------------------------------------------------- kernels
@cuda.jit
def _forward_kernel(indptr, indices, x, score_src, score_dst, out, row_max, row_sum, slope):
    i = cuda.blockIdx.x
    h = cuda.blockIdx.y
    t = cuda.threadIdx.x
    dim = x.shape[2]
    start = indptr[i]
    end = indptr[i + 1]
    if start == end:
        for d in range(t, dim, _THREADS):
            out[i, h, d] = 0.0
        if t == 0:
            row_max[i, h] = 0.0
            row_sum[i, h] = 0.0
        return
    sd = score_dst[i, h]
    j = indices[start]
    z = score_src[j, h] + sd
    m = z if z > 0 else z * slope
    total = 1.0
    for d in range(t, dim, _THREADS):
        out[i, h, d] = x[j, h, d]
    for p in range(start + 1, end):
        j = indices[p]
        z = score_src[j, h] + sd
        s = z if z > 0 else z * slope
        if s > m:  # new row max: rescale what was accumulated (online softmax)
            scale = math.exp(numba.float64(m - s))
            for d in range(t, dim, _THREADS):
                out[i, h, d] = out[i, h, d] * scale + x[j, h, d]
            total = total * scale + 1.0
            m = s
        else:
            w = math.exp(numba.float64(s - m))
            for d in range(t, dim, _THREADS):
                out[i, h, d] += w * x[j, h, d]
            total += w
    inv = 1.0 / total
    for d in range(t, dim, _THREADS):
        out[i, h, d] *= inv
    if t == 0:
        row_max[i, h] = m
        row_sum[i, h] = total


@cuda.jit(device=True)
def _attention(z, m, total, slope):
    """(a, lrelu'(z)) of one edge from its destination row's saved stats."""
    if z > 0:
        s = numba.float64(z)
        g = 1.0
    else:
        s = numba.float64(z * slope)
        g = numba.float64(slope)
    if total > 0:
        return math.exp(s - m) / total, g
    return 0.0, g


@cuda.jit(device=True)
def _block_sum(shared, row, t):
    """Tree-reduce ``shared[row, :]`` into ``shared[row, 0]``; every thread calls it."""
    stride = _THREADS // 2
    while stride > 0:
        if t < stride:
            shared[row, t] += shared[row, t + stride]
        cuda.syncthreads()
        stride //= 2


@cuda.jit
def _backward_dst_kernel(indptr, indices, x, score_src, score_dst, row_max, row_sum,
                         grad_out, grad_score_dst, row_dot, slope):
    i = cuda.blockIdx.x
    h = cuda.blockIdx.y
    t = cuda.threadIdx.x
    dim = x.shape[2]
    shared = cuda.shared.array((3, _THREADS), numba.float64)
    sd = score_dst[i, h]
    m = numba.float64(row_max[i, h])
    total = numba.float64(row_sum[i, h])
    s_adA = 0.0
    s_adAg = 0.0
    s_ag = 0.0
    for p in range(indptr[i] + t, indptr[i + 1], _THREADS):
        j = indices[p]
        a, g = _attention(score_src[j, h] + sd, m, total, slope)
        dA = 0.0
        for d in range(dim):
            dA += grad_out[i, h, d] * x[j, h, d]
        s_adA += a * dA
        s_adAg += a * dA * g
        s_ag += a * g
    shared[0, t] = s_adA
    shared[1, t] = s_adAg
    shared[2, t] = s_ag
    cuda.syncthreads()
    for r in range(3):
        _block_sum(shared, r, t)
    if t == 0:
        row_dot[i, h] = shared[0, 0]
        grad_score_dst[i, h] = shared[1, 0] - shared[0, 0] * shared[2, 0]


@cuda.jit
def _backward_src_kernel(indptr_t, indices_t, x, score_src, score_dst, row_max, row_sum,
                         grad_out, row_dot, grad_x, grad_score_src, slope):
    j = cuda.blockIdx.x
    h = cuda.blockIdx.y
    t = cuda.threadIdx.x
    dim = x.shape[2]
    shared = cuda.shared.array((1, _THREADS), numba.float64)
    ss = score_src[j, h]
    start = indptr_t[j]
    end = indptr_t[j + 1]
    for d in range(t, dim, _THREADS):  # grad_x: threads own feature columns
        acc = 0.0
        for p in range(start, end):
            i = indices_t[p]
            a, g = _attention(ss + score_dst[i, h], row_max[i, h], row_sum[i, h], slope)
            acc += a * grad_out[i, h, d]
        grad_x[j, h, d] = acc
    part = 0.0
    for p in range(start + t, end, _THREADS):  # grad_score_src: threads split edges
        i = indices_t[p]
        a, g = _attention(ss + score_dst[i, h], row_max[i, h], row_sum[i, h], slope)
        dA = 0.0
        for d in range(dim):
            dA += grad_out[i, h, d] * x[j, h, d]
        part += a * (dA - row_dot[i, h]) * g
    shared[0, t] = part
    cuda.syncthreads()
    _block_sum(shared, 0, t)
    if t == 0:
        grad_score_src[j, h] = shared[0, 0]


# ---------------------------------------------------------------- entry points
_CSR: "weakref.WeakKeyDictionary[GraphView, tuple[Any, Any]]" = weakref.WeakKeyDictionary()


def _device_csr(view: GraphView):
    """``(indptr, indices)`` of one orientation on the GPU, uploaded once per view."""
    if view not in _CSR:
        _CSR[view] = (cuda.to_device(view.indptr), cuda.to_device(view.indices))
    return _CSR[view]


def _device(a: Any):
    return a if hasattr(a, "copy_to_host") else cuda.as_cuda_array(a)


def _stream(arrays) -> Any:
    """torch's current stream when torch tensors are passed, else the default stream."""
    for a in arrays:
        if type(a).__module__.startswith("torch"):
            import torch
            return cuda.external_stream(torch.cuda.current_stream(a.device).cuda_stream)
    return 0


def gat_fused(graph: GraphView, x, score_src, score_dst, out, row_max, row_sum, *,
              negative_slope: float = 0.2) -> None:
    """CUDA version of :func:`gnnbench.systems.dgnn.kernels.gat_fused` (same contract)."""
    stream = _stream((x,))
    x, score_src, score_dst, out, row_max, row_sum = map(
        _device, (x, score_src, score_dst, out, row_max, row_sum))
    check_arguments("gat_fused", graph, x, {"score_src": score_src, "score_dst": score_dst, "out": out,
                                            "row_max": row_max, "row_sum": row_sum})
    if graph.num_rows == 0 or x.shape[1] == 0:
        return
    indptr, indices = _device_csr(graph)
    _forward_kernel[(graph.num_rows, x.shape[1]), _THREADS, stream](
        indptr, indices, x, score_src, score_dst, out, row_max, row_sum, x.dtype.type(negative_slope))


def gat_fused_backward(graph: GraphView, x, score_src, score_dst, row_max, row_sum, grad_out,
                       grad_x, grad_score_src, grad_score_dst, row_dot, *,
                       negative_slope: float = 0.2) -> None:
    """CUDA version of :func:`gnnbench.systems.dgnn.kernels.gat_fused_backward` (same contract)."""
    stream = _stream((x,))
    arrays = (x, score_src, score_dst, row_max, row_sum, grad_out, grad_x, grad_score_src,
              grad_score_dst, row_dot)
    (x, score_src, score_dst, row_max, row_sum, grad_out, grad_x, grad_score_src, grad_score_dst,
     row_dot) = map(_device, arrays)
    check_arguments("gat_fused_backward", graph, x,
                    {"score_src": score_src, "score_dst": score_dst, "row_max": row_max, "row_sum": row_sum,
                     "grad_out": grad_out, "grad_x": grad_x, "grad_score_src": grad_score_src,
                     "grad_score_dst": grad_score_dst, "row_dot": row_dot})
    if graph.num_rows == 0 or x.shape[1] == 0:
        return
    slope = x.dtype.type(negative_slope)
    grid = (graph.num_rows, x.shape[1])
    indptr, indices = _device_csr(graph)
    _backward_dst_kernel[grid, _THREADS, stream](indptr, indices, x, score_src, score_dst, row_max,
                                                 row_sum, grad_out, grad_score_dst, row_dot, slope)
    graph_t = graph.graph.view(transposed=True)
    indptr_t, indices_t = _device_csr(graph_t)
    _backward_src_kernel[grid, _THREADS, stream](indptr_t, indices_t, x, score_src, score_dst,
                                                 row_max, row_sum, grad_out, row_dot, grad_x,
                                                 grad_score_src, slope)


def warm_up(index_dtype: Any, float_dtype: Any) -> None:
    """JIT-compile the CUDA kernels for one dtype pair on a 3-node graph."""
    fdt = np.dtype(float_dtype)
    g = Graph.from_edges(np.array([0, 1, 2, 1]), np.array([1, 1, 2, 2]), 3, index_dtype)
    x = cuda.to_device(np.ones((3, 1, 2), dtype=fdt))
    nh = lambda: cuda.to_device(np.zeros((3, 1), dtype=fdt))  # noqa: E731
    ss, sd, row_max, row_sum = nh(), nh(), nh(), nh()
    gat_fused(g.view(), x, ss, sd, cuda.device_array_like(x), row_max, row_sum)
    gat_fused_backward(g.view(), x, ss, sd, row_max, row_sum, x, cuda.device_array_like(x),
                       nh(), nh(), nh())
    cuda.synchronize()
