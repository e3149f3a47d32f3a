"""``reference``'s kernels with one bug: ``edge_softmax`` does not subtract the row maximum.

``exp(score)`` overflows once scores pass ~88 (float32) or ~709 (float64):
verify's "large scores" cases (scores near 4096) must catch it, while the
ordinary grid (scores within +-4) cannot.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def edge_softmax(graph, scores, out):
    e = _ref._edges(graph, scores)
    ex = torch.exp(scores)   # the bug: no `- row_max[e.rows]`
    out.copy_(ex / _ref._row_sum(e, ex, graph.num_rows)[e.rows])
