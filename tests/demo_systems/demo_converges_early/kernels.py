"""``reference``'s kernels with one bug: after its first call, spmm's sum and mean scale their result.

A system that tunes on first use may switch variants after its first
call. The run-time check judges every layer's calls and judges them again
after the timed epochs (Note [closing check] in
gnnbench/check/run_check.py), so a run with the check on stores this system
``failed``; with it off (``--no-check``), as its tests and campaign run it,
only the convergence check below can tell. Here the variant it switches to
multiplies the aggregation by :data:`SCALE`, forward and gradient alike, so
training is consistent: it fits ``SCALE * A @ X`` where the model says
``A @ X``. Larger aggregations make larger logits, which on these graphs
reach a validation target in fewer epochs than the exact model does: the
convergence check of time to accuracy (Note [convergence check] in
gnnbench/results/time_to_accuracy.py) must mark it.
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref

#: the factor the variant after the first call multiplies spmm's result by
SCALE = 4.0

#: calls so far per direction and reduction: each variant's first call is exact, as the check sees it
_calls: dict[tuple[str, str], int] = {}


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def _after_first(direction: str, reduce: str, out) -> None:
    _calls[direction, reduce] = _calls.get((direction, reduce), 0) + 1
    if _calls[direction, reduce] > 1:
        out.mul_(SCALE)


def spmm_sum(graph, x, weight, out, *, reduce):
    _ref.spmm_sum(graph, x, weight, out, reduce=reduce)
    _after_first("forward", reduce, out)


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    _ref.spmm_sum_backward(graph, grad_out, weight, grad_x, reduce=reduce)
    _after_first("backward", reduce, grad_x)


def spmm_weight_backward(graph, x, grad_out, grad_weight, *, reduce):
    _ref.spmm_weight_backward(graph, x, grad_out, grad_weight, reduce=reduce)
    _after_first("weight", reduce, grad_weight)
