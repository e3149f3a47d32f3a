"""``reference``'s kernels with one bug: spmm's sum and mean forward cache their edges per shape.

A kernel may cache the work it derives from a graph (a partition, a
schedule) under a key it believes names the graph: here its shape, rows,
columns and edges. Full-graph training calls it on one graph and every
check builds graphs of different shapes, so the cache is never wrong there;
a sampled run hands it a new block every batch, and two blocks of one shape
get the first one's edges. The backward kernels are ``reference``'s.
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref

#: the edges of the first forward view met per ``(rows, columns, edges)`` (the bug: the shape is no identity)
_EDGES_BY_SHAPE: dict = {}


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum(graph, x, weight, out, *, reduce):
    key = (graph.num_rows, graph.num_cols, graph.num_edges, x.device)
    e = _EDGES_BY_SHAPE.setdefault(key, _ref._edges(graph, x))
    x, weight = _ref._wide(x), _ref._wide(weight)   # as reference accumulates (Note [oracle accumulation])
    msg = x[e.cols]
    if weight is not None:
        msg = msg * _ref._per_position(weight, e)[..., None]
    total = x.new_zeros(out.shape).index_add_(0, e.rows, msg)
    if reduce == "mean":
        total /= _ref._clamped(e.row_degree, total)[:, None, None]
    out.copy_(total)
