"""SciPy CSR kernels of the ``extsp`` system.

Each kernel gets a GraphView (``indptr``, ``indices``, ``edge_ids``,
``row_degree``, ``col_degree``) and zero-copy NumPy views of tensors the
framework allocated; it writes its outputs in place (Note [kernel calling
convention] in gnnbench/api.py). Edge ``e = j -> i``: ``i`` is a row of the
forward view, ``j`` its column; on the transposed view the roles swap and
per-edge data sits at ``edge_ids[p]``.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _per_position(graph, weight, head: int, dtype) -> np.ndarray:
    """The weight of each stored position for one head (1 when there is no weight)."""
    if weight is None:
        return np.ones(graph.num_edges, dtype=dtype)
    w = weight[:, head]
    return w if graph.edge_ids is None else w[graph.edge_ids]


def _product(graph, weight, x, out) -> None:
    """``out[:, h] = A_h @ x[:, h]`` for each head ``h``, ``A_h`` the view's CSR matrix."""
    for h in range(x.shape[1]):
        a = sp.csr_matrix((_per_position(graph, weight, h, x.dtype), graph.indices, graph.indptr),
                          shape=(graph.num_rows, graph.num_cols))
        out[:, h, :] = a @ x[:, h, :]


def spmm_sum(graph, x, weight, out, *, reduce):
    """``out[i] = sum_{j->i} w_ji x[j]``, divided by ``max(row_degree[i], 1)`` when ``reduce == "mean"``."""
    _product(graph, weight, x, out)
    if reduce == "mean":
        out /= np.maximum(graph.row_degree, 1).astype(out.dtype)[:, None, None]


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    """On the transposed view: ``grad_x[j] = sum_{j->i} w_ji grad_out[i]`` (``/ col_degree[i]`` when mean)."""
    if reduce == "mean":
        grad_out = grad_out / np.maximum(graph.col_degree, 1).astype(grad_out.dtype)[:, None, None]
    _product(graph, weight, grad_out, grad_x)


def spmm_weight_backward(graph, x, grad_out, grad_weight, *, reduce):
    """``grad_weight[e, h] = <x[j, h], grad_out[i, h]>`` for ``e = j -> i`` (``/ row_degree[i]`` when mean)."""
    rows = np.repeat(np.arange(graph.num_rows), np.diff(graph.indptr))
    values = np.einsum("ehd,ehd->eh", x[graph.indices], grad_out[rows])
    if reduce == "mean":
        values /= np.maximum(graph.row_degree[rows], 1).astype(values.dtype)[:, None]
    if graph.edge_ids is None:
        grad_weight[...] = values
    else:
        grad_weight[graph.edge_ids] = values
