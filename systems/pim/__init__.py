"""``pim``: a PyGim-style processing-in-memory system, simulated with a calibrated UPMEM cost model.

Aggregations run functionally on simulated DPUs (each from its own slice of the
data) while the cost model predicts what the machine in ``machine.toml`` would
take; edge-wise kernels run on the host. See ``kernels`` for the entry points.
"""
from .costmodel import Cost, Violation, estimate
from .errors import PimInfeasibleError, PimOverflowError
from .kernels import (configure, edge_softmax, edge_softmax_backward, edge_sum, prepare, report,
                      reset_report, sddmm_add, sddmm_dot, spmm_max, spmm_max_backward,
                      spmm_max_weight_backward, spmm_sum, spmm_sum_backward, spmm_weight_backward)
from .machine import Machine, load_machine

__all__ = ["configure", "prepare", "report", "reset_report", "spmm_sum", "spmm_sum_backward",
           "spmm_weight_backward", "spmm_max", "spmm_max_backward", "spmm_max_weight_backward",
           "sddmm_dot", "sddmm_add", "edge_sum", "edge_softmax", "edge_softmax_backward",
           "Machine", "load_machine", "Cost", "Violation", "estimate", "PimInfeasibleError",
           "PimOverflowError"]
