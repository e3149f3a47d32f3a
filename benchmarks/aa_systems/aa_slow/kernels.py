"""``mkl``'s SpMM, then :data:`EXTRA_PASSES` in-place passes over the output: a known slowdown made of work.

Each pass multiplies the output by one in place (``out.mul_(1.0)``): a read and a write of every output
element, the memory traffic of a cheap epilogue, which no allocation and no sleep would reproduce (a sleep
idles the core, so a busy neighbour would slow it less than a real kernel). Multiplying by one leaves every
value bit for bit as ``mkl`` computed it, so the system passes ``gnnbench verify``. :data:`EXTRA_PASSES` was
chosen so that a GCN epoch on the A/A campaign's graph is about 10 % slower than ``aa_one``'s;
``results/studies/aa.md`` states the slowdown actually measured, pooled over every process of the campaign.
"""
from gnnbench.systems.mkl.kernels import prepare, spmm_weight_backward
from gnnbench.systems.mkl.kernels import spmm_sum as _spmm_sum
from gnnbench.systems.mkl.kernels import spmm_sum_backward as _spmm_sum_backward

__all__ = ["prepare", "spmm_sum", "spmm_sum_backward", "spmm_weight_backward", "EXTRA_PASSES"]

#: in-place passes over each SpMM output (forward and backward), about 10 % of the campaign's GCN epoch
EXTRA_PASSES = 20


def _extra_work(out) -> None:
    for _ in range(EXTRA_PASSES):
        out.mul_(1.0)


def spmm_sum(graph, x, weight, out, *, reduce):
    _spmm_sum(graph, x, weight, out, reduce=reduce)
    _extra_work(out)


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    _spmm_sum_backward(graph, grad_out, weight, grad_x, reduce=reduce)
    _extra_work(grad_x)
