"""Operators that stand for a composition of others, written once for every frontend.

``gat_aggregate`` is ``spmm(x, edge_softmax(leaky_relu(sddmm_add(score_src, score_dst))))`` (the table in
:mod:`gnnbench.api`): a system that fuses it runs its own kernel, any other gets this composition of its
(or its fallback's) sddmm, edge_softmax and spmm, through the frontend's own calls.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["gat_aggregate"]


def gat_aggregate(F, graph, x, score_src, score_dst, negative_slope: float = 0.2,
                  as_input: Callable[[Any], Any] = lambda t: t):
    """Softmax-attention aggregation on frontend ``F``; composed from sddmm/edge_softmax/spmm unless the
    system fuses it.

    Args:
        as_input (callable): what the frontend does to a tensor it hands a kernel (torch: ``contiguous``).

    Shapes:
        x ``[N, H, D]``, score_src and score_dst ``[N, H]`` -> ``[N, H, D]``.
    """
    attrs = {"negative_slope": float(negative_slope)}
    impl = graph.system.find("gat_aggregate", attrs)
    if impl is not None:
        return impl.apply(graph, attrs, as_input(x), as_input(score_src), as_input(score_dst))
    scores = F.leaky_relu(F.sddmm(graph, score_src, score_dst, op="add"), negative_slope)
    alpha = F.edge_softmax(graph, scores)
    return F.spmm(graph, x, alpha, reduce="sum")
