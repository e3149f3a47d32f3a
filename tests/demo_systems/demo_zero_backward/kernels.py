"""``reference``'s kernels with one bug: the spmm backward returns zeros.

A missing backward pass that still "runs": ``spmm_sum_backward`` fills its
output with zeros, so training silently stops updating everything below
the aggregation. The forward is correct (first-epoch losses agree); the
conformance suite catches it on ``grad x`` of ``spmm(reduce=sum|mean)``.
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
    grad_x.zero_()  # the bug: no gradient flows back through the aggregation
