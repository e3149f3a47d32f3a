"""``hanger``: an spmm kernel that never returns, as a deadlocked kernel would.

The backward kernels are the reference ones; the forward never returns.
"""
from __future__ import annotations

import time

from gnnbench.systems.reference.kernels import spmm_sum_backward, spmm_weight_backward

__all__ = ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward"]


def spmm_sum(graph, x, weight, out, *, reduce):
    while True:  # only the sweep's time limit ends this
        time.sleep(3600)
