"""``reference``'s kernels with one bug: the transposed backward reads ``weight[p]``, not ``weight[edge_ids[p]]``.

On the transposed view stored position ``p`` holds canonical edge
``edge_ids[p]``; reading the weight at ``p`` gives ``grad x`` the weights of
other edges. Symmetric weights on a symmetric graph hide it (GCN on an
undirected dataset); random asymmetric weights show it.
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    e = _ref._edges(graph, grad_out)
    g = grad_out
    if reduce == "mean":
        g = g / _ref._clamped(e.col_degree, g)[:, None, None]
    msg = g[e.cols]
    if weight is not None:
        msg = msg * weight[..., None]   # the bug: `weight[e.edge_ids]` on the transposed view
    grad_x.zero_()
    grad_x.index_add_(0, e.rows, msg)
