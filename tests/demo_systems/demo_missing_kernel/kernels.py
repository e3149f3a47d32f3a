"""``reference``'s kernels with one bug: ``spmm_max``, which the spec names, is not defined.

verify must fail (not skip) and say which function is missing and where the
spec names it, not "run gnnbench gen".
"""
from __future__ import annotations


from gnnbench.systems.reference import kernels as _ref

prepare = _ref.prepare
spmm_sum = _ref.spmm_sum
spmm_sum_backward = _ref.spmm_sum_backward
spmm_weight_backward = _ref.spmm_weight_backward
spmm_max_backward = _ref.spmm_max_backward
spmm_max_weight_backward = _ref.spmm_max_weight_backward
sddmm_dot = _ref.sddmm_dot
sddmm_add = _ref.sddmm_add
edge_sum = _ref.edge_sum
edge_softmax = _ref.edge_softmax
edge_softmax_backward = _ref.edge_softmax_backward
