"""``reference``'s kernels with one bug: spmm's sum and mean read ``x`` as ``[num_rows, H, D]``.

A kernel written for square graphs may take the row count for the number of
``x``'s rows. On a block (Note [blocks] in gnnbench/runtime/graph.py) the
forward view has ``num_rows == N`` destinations but ``x`` has ``num_cols == S
> N`` rows, and sources past the destinations are out of reach. Every square
graph hides it.
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum(graph, x, weight, out, *, reduce):
    e = _ref._edges(graph, x)
    x = x[:graph.num_rows]   # the bug: x has graph.num_cols rows
    msg = x[e.cols]
    if weight is not None:
        msg = msg * weight[..., None]
    total = x.new_zeros(out.shape).index_add_(0, e.rows, msg)
    if reduce == "mean":
        total /= _ref._clamped(e.row_degree, total)[:, None, None]
    out.copy_(total)
