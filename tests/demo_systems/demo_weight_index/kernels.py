"""``reference``'s kernels with one bug: the transposed backward reads ``weight[p]``, not ``weight[edge_ids[p]]``.

On the transposed view stored position ``p`` holds canonical edge
``edge_ids[p]``; reading the weight at ``p`` gives ``grad x`` the weights of
other edges. Symmetric weights on a symmetric graph hide it (GCN on an
undirected dataset); random asymmetric weights show it.
"""
from __future__ import annotations


from gnnbench.systems.reference import kernels as _ref

prepare = _ref.prepare
spmm_sum = _ref.spmm_sum
spmm_weight_backward = _ref.spmm_weight_backward
spmm_max = _ref.spmm_max
spmm_max_backward = _ref.spmm_max_backward
spmm_max_weight_backward = _ref.spmm_max_weight_backward
sddmm_dot = _ref.sddmm_dot
sddmm_add = _ref.sddmm_add
edge_sum = _ref.edge_sum
edge_softmax = _ref.edge_softmax
edge_softmax_backward = _ref.edge_softmax_backward


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
