"""``reference``'s kernels with one bug: ``spmm(reduce=mean)`` multiplies by the in-degree.

The inverted normalisation: ``D A X`` where ``D^-1 A X`` is meant (SAGE's mean,
a row-normalised GCN). Only the forward is wrong, so the conformance suite
must catch it on the output of ``spmm(reduce=mean)`` wherever a row has more
than one edge. The backward kernels are reference's, correct for the intended
operator.
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref

prepare = _ref.prepare
spmm_sum_backward = _ref.spmm_sum_backward
spmm_weight_backward = _ref.spmm_weight_backward
spmm_max = _ref.spmm_max
spmm_max_backward = _ref.spmm_max_backward
spmm_max_weight_backward = _ref.spmm_max_weight_backward
sddmm_dot = _ref.sddmm_dot
sddmm_add = _ref.sddmm_add
edge_sum = _ref.edge_sum
edge_softmax = _ref.edge_softmax
edge_softmax_backward = _ref.edge_softmax_backward


def spmm_sum(graph, x, weight, out, *, reduce):
    _ref.spmm_sum(graph, x, weight, out, reduce="sum")
    if reduce == "mean":  # the bug: `*=` where `/=` is meant
        degree = _ref._edges(graph, x).row_degree
        out *= degree.to(out.dtype).clamp(min=1.0)[:, None, None]
