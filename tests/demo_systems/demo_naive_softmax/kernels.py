"""``reference``'s kernels with one bug: ``edge_softmax`` does not subtract the row maximum.

``exp(score)`` overflows once scores pass ~88 (float32) or ~709 (float64):
verify's "large scores" cases (scores near 4096) must catch it, while the
ordinary grid (scores within +-4) cannot.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref

prepare = _ref.prepare
spmm_sum = _ref.spmm_sum
spmm_sum_backward = _ref.spmm_sum_backward
spmm_weight_backward = _ref.spmm_weight_backward
spmm_max = _ref.spmm_max
spmm_max_backward = _ref.spmm_max_backward
spmm_max_weight_backward = _ref.spmm_max_weight_backward
sddmm_dot = _ref.sddmm_dot
sddmm_add = _ref.sddmm_add
edge_sum = _ref.edge_sum
edge_softmax_backward = _ref.edge_softmax_backward


def edge_softmax(graph, scores, out):
    e = _ref._edges(graph, scores)
    ex = torch.exp(scores)   # the bug: no `- row_max[e.rows]`
    out.copy_(ex / _ref._row_sum(e, ex, graph.num_rows)[e.rows])
