"""``reference``'s kernels with one bug: the spmm backward returns zeros.

A missing backward pass that still "runs": ``spmm_sum_backward`` fills its
output with zeros, so training silently stops updating everything below
the aggregation. The forward is correct (first-epoch losses agree); the
conformance suite catches it on ``grad x`` of ``spmm(reduce=sum|mean)``.
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    grad_x.zero_()  # the bug: no gradient flows back through the aggregation
