"""``reference``'s kernels with one bug: ``spmm`` skips self-loop edges.

What "a GIN that drops the node's own features" is at kernel level: GIN's
``(1 + eps) x_i + sum_j x_j`` (and GCN's ``A + I``) is one spmm over a graph
whose self loops carry each node's own term. A kernel that skips diagonal
entries (say, because it assumes the self term is added elsewhere) silently
loses that term. The conformance suite catches it on the graphs that have
self loops, ``self_loops`` and ``single_node``, and only there; end-to-end,
GCN (trained on ``A + I``) disagrees from the first loss.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def _without_loops(graph, x, weight):
    """The weight with every self-loop edge zeroed (the bug), ones where there was none."""
    e = _ref._edges(graph, x)
    loop = e.rows == e.cols                    # stored positions; on the forward view position == edge id
    w = weight if weight is not None else x.new_ones((graph.num_edges, x.shape[1]))
    mask = torch.zeros_like(w, dtype=torch.bool)
    mask[loop if e.edge_ids is None else e.edge_ids[loop]] = True
    return w.masked_fill(mask, 0.0)


def spmm_sum(graph, x, weight, out, *, reduce):
    _ref.spmm_sum(graph, x, _without_loops(graph, x, weight), out, reduce=reduce)


def spmm_max(graph, x, weight, out, argmax, *, reduce):
    _ref.spmm_max(graph, x, _without_loops(graph, x, weight), out, argmax, reduce=reduce)
