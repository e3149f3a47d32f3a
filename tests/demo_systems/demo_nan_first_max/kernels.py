"""``reference``'s kernels with one bug: ``spmm_max`` keeps a NaN only when it is the first edge of its row.

The running maximum updates with ``if value > best``, which is false for a NaN
met later (the bug the issue found in three systems): the result depends on
edge order, against Note [NaN policy] in gnnbench/api.py.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_max(graph, x, weight, out, argmax, *, reduce):
    _ref.spmm_max(graph, x, weight, out, argmax, reduce=reduce)
    e = _ref._edges(graph, x)
    msg = x[e.cols] if weight is None else x[e.cols] * _ref._per_position(weight, e)[..., None]
    first = torch.ones(len(e.rows), dtype=torch.bool)
    first[1:] = e.rows[1:] != e.rows[:-1]
    late_nan = torch.isnan(msg) & ~first[:, None, None]
    # recompute the maximum of each row ignoring NaNs that are not first (a `>` comparison drops them)
    kept = torch.where(late_nan, torch.full_like(msg, -torch.inf), msg)
    best = torch.full_like(out, -torch.inf).scatter_reduce_(0, e.rows[:, None, None].expand_as(kept), kept,
                                                             "amax", include_self=True)
    has_edges = (e.row_degree > 0)[:, None, None]
    out.copy_(torch.where(has_edges, best, torch.zeros_like(best)))
