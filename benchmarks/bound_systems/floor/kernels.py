"""``floor``: the least SpMM work an epoch can contain, for a bound on epoch speed-ups.

Every ``spmm`` becomes isplib's unweighted sum on the same view (forward or
transposed): each gathered row read once, each output row written once, by
isplib's default loop. Weights and the mean's scaling are ignored, so the
numbers are wrong and the system fails verification on purpose; only its
time means something (``benchmarks/bench_training.py``).
"""
from __future__ import annotations

from gnnbench.systems.isplib.kernels import spmm_sum as _isplib_sum
from gnnbench.systems.isplib.prepared import prepare

__all__ = ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward", "prepare"]


def spmm_sum(graph, x, weight, out, *, reduce):
    _isplib_sum(graph, x, None, out, reduce="sum")


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    _isplib_sum(graph, grad_out, None, grad_x, reduce="sum")


def spmm_weight_backward(graph, x, grad_out, grad_weight, *, reduce):
    """Constant weights never need this; the declared zero-filled output stands."""
