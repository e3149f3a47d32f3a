"""reference's SpMM kernels unchanged: one of the A/A twins of benchmarks/bench_aa.py."""
from gnnbench.systems.reference.kernels import spmm_sum, spmm_sum_backward, spmm_weight_backward

__all__ = ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward"]
