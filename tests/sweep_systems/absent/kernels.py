"""``absent``: never available (it requires a package that does not exist), so a sweep stores it as ``skipped``.

Its kernels are the reference ones; they are never loaded.
"""
from __future__ import annotations

from gnnbench.systems.reference.kernels import spmm_sum, spmm_sum_backward, spmm_weight_backward

__all__ = ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward"]
