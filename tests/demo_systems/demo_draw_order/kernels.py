"""``reference``'s kernels with one bug: spmm's sum and mean end a row at its first descending source.

A kernel written for rows sorted by source (a merge, a binary search, a
run-length of repeated sources) may take a smaller source for the next row's
start. gnnbench's full graphs, typed relations included, are sorted by
destination then source, so every full-graph case passes; a sampled block
keeps its sources in draw order (Note [without replacement] in
gnnbench/sampling/neighbor.py), and the edges past a row's first descent are
dropped. Only a sampled block tells it apart.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def _sorted_prefix(rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Each row's positions before its first descent (a column smaller than the one before it in the row)."""
    n = rows.shape[0]
    same = torch.zeros(n, dtype=torch.bool, device=rows.device)
    same[1:] = rows[1:] == rows[:-1]
    descent = torch.zeros_like(same)
    descent[1:] = same[1:] & (cols[1:] < cols[:-1])
    seen = torch.cumsum(descent.to(torch.int64), 0)
    start = torch.cummax(torch.where(same, 0, torch.arange(n, device=rows.device)), 0).values
    return seen == seen[start]


def spmm_sum(graph, x, weight, out, *, reduce):
    e = _ref._edges(graph, x)
    keep = _sorted_prefix(e.rows, e.cols)   # the bug: a draw-ordered row ends at its first descent
    x, weight = _ref._wide(x), _ref._wide(weight)
    msg = x[e.cols[keep]]
    if weight is not None:
        msg = msg * _ref._per_position(weight, e)[keep][..., None]
    total = x.new_zeros(out.shape).index_add_(0, e.rows[keep], msg)
    if reduce == "mean":
        total /= _ref._clamped(e.row_degree, total)[:, None, None]
    out.copy_(total)
