"""``reference``'s kernels with one bug: ``spmm(reduce=mean)`` multiplies by the in-degree.

The inverted normalisation: ``D A X`` where ``D^-1 A X`` is meant (SAGE's mean,
a row-normalised GCN). Only the forward is wrong, so the conformance suite
must catch it on the output of ``spmm(reduce=mean)`` wherever a row has more
than one edge. The backward kernels are reference's, correct for the intended
operator.
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum(graph, x, weight, out, *, reduce):
    _ref.spmm_sum(graph, x, weight, out, reduce="sum")
    if reduce == "mean":  # the bug: `*=` where `/=` is meant
        degree = _ref._edges(graph, x).row_degree
        out *= degree.to(out.dtype).clamp(min=1.0)[:, None, None]
