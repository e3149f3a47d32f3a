"""An A/A twin: ``mkl``'s SpMM kernels unchanged under another name (benchmarks/aa_systems/README.md)."""
from gnnbench.systems.mkl.kernels import prepare, spmm_sum, spmm_sum_backward, spmm_weight_backward

__all__ = ["prepare", "spmm_sum", "spmm_sum_backward", "spmm_weight_backward"]
