"""``reference``'s kernels with one bug: spmm's sum and mean forward drop the edges from sources ``>= num_rows``.

A kernel written for square graphs may take the graph to be square and keep
only the columns below its row count. On a block (Note [blocks] in
gnnbench/runtime/graph.py) the forward view has ``num_rows == N``
destinations and ``num_cols == S > N`` sources: the edges from sources past
the destinations vanish, and nothing raises. Every square graph hides it; the
backward kernels are ``reference``'s.
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum(graph, x, weight, out, *, reduce):
    e = _ref._edges(graph, x)
    x, weight = _ref._wide(x), _ref._wide(weight)   # as reference accumulates (Note [oracle accumulation])
    kept = e.cols < graph.num_rows   # the bug: a square graph's columns are all below num_rows
    msg = x[e.cols[kept]]
    if weight is not None:
        msg = msg * _ref._per_position(weight, e)[kept][..., None]
    total = x.new_zeros(out.shape).index_add_(0, e.rows[kept], msg)
    if reduce == "mean":
        total /= _ref._clamped(e.row_degree, total)[:, None, None]
    out.copy_(total)
