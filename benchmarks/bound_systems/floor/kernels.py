"""``floor``: the least SpMM work an epoch can contain, for a bound on epoch speed-ups.

Every ``spmm`` becomes isplib's unweighted mean over the rows of the same
view (forward or transposed): each gathered row read once, each output row
written once and scaled once, by isplib's loop. Weights are ignored and
the backward averages where it should sum, so the numbers are wrong and the
system fails verification on purpose; only its time means something
(``campaigns/bench_training.toml``; Note [values in the framework share] in
gnnbench/campaign/columns.py). The mean (a free per-row scale) keeps
activations at the scale of the inputs: unnormalised sums grow with the
degree at every layer, and the framework's share of the epoch then slows
down on the overflowing values, which would muddy the bound.

It tunes on first use as isplib does, with isplib's ``tune`` hook, so that
its mean paths (which isplib's own models seldom run at every width) get the
tuned loop rather than the default one. Tuned or not, its SpMMs took longer
than DGL's ``GSpMM`` over the same graph in one process
(``results/studies/study-notes.md``, from the configurations of
``results/studies/bench_loop_share.md``), and longer than isplib's own GCN sums: it bounds gnnbench's loop
with isplib's row loop, not what any kernel could reach.
"""
from __future__ import annotations

from gnnbench.systems.isplib.kernels import spmm_sum as _isplib_sum, tune
from gnnbench.systems.isplib.prepared import prepare

__all__ = ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward", "prepare", "tune"]


def spmm_sum(graph, x, weight, out, *, reduce):
    _isplib_sum(graph, x, None, out, reduce="mean")


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    _isplib_sum(graph, grad_out, None, grad_x, reduce="mean")  # rows of the transposed view: a row scale


def spmm_weight_backward(graph, x, grad_out, grad_weight, *, reduce):
    """Constant weights never need this; the declared zero-filled output stands."""
