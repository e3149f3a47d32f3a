"""reference's SpMM kernels, the forward one followed by extra work: the slower system of benchmarks/bench_aa.py.

The extra work is a second gather of the messages of the first :data:`EXTRA` share of the
edges and their sum into scratch, thrown away: real memory traffic of the kind the kernel
does, so its cost moves with the machine's load as the kernel's does (a sleep would not).
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref
from gnnbench.systems.reference.kernels import spmm_sum_backward, spmm_weight_backward

__all__ = ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward", "EXTRA"]

#: share of the edges gathered a second time; sized so that GCN on the embedded sbm runs about 10 % slower
EXTRA = 0.4


def spmm_sum(graph, x, weight, out, *, reduce):
    _ref.spmm_sum(graph, x, weight, out, reduce=reduce)
    edges = _ref._edges(graph, x)
    extra = edges.cols[: int(len(edges.cols) * EXTRA)]
    x[extra].sum(0)
