"""``reference``'s kernels, unchanged: this demo's bug is in its model (``model.py``).

The kernels are correct, so the operator suite passes; verify's model check,
pointed at ``demo_gcn_row_norm.model:MODELS`` (Note [model check]), must fail
on ``model gcn``.
"""
from __future__ import annotations


from gnnbench.systems.reference import kernels as _ref

prepare = _ref.prepare
spmm_sum = _ref.spmm_sum
spmm_sum_backward = _ref.spmm_sum_backward
spmm_weight_backward = _ref.spmm_weight_backward
spmm_max = _ref.spmm_max
spmm_max_backward = _ref.spmm_max_backward
spmm_max_weight_backward = _ref.spmm_max_weight_backward
sddmm_dot = _ref.sddmm_dot
sddmm_add = _ref.sddmm_add
edge_sum = _ref.edge_sum
edge_softmax = _ref.edge_softmax
edge_softmax_backward = _ref.edge_softmax_backward

