"""Operators that stand for a composition of others, written once for every frontend, and the frontends' one
dispatch of a declared operator.

``gat_aggregate`` is ``spmm(x, edge_softmax(leaky_relu(sddmm_add(score_src, score_dst))))`` (the table in
:mod:`gnnbench.api`): a system that fuses it runs its own kernel, any other gets this composition of its
(or its fallback's) sddmm, edge_softmax and spmm, through the frontend's own calls. ``typed_aggregate`` is
one ``spmm`` per relation present, its edges' norms masked to that relation, times the relation's weight
(:func:`typed_aggregate`).

Note [declared dispatch]
    A frontend calls an operator of ``gnnbench/api.gnn`` through :func:`dispatch`: the system's kernel (or its
    fallback's, Note [fallback accounting]) when it has one, else the operator's composition in
    :data:`COMPOSITIONS` from the system's other operators. An operator with no method of the frontend's own
    (``F.typed_aggregate``) reaches it through the frontend's ``__getattr__``, which knows the declared
    operators, so a new operator needs no frontend code: only ``spmm``'s ``[N, F]`` convenience and
    ``gat_aggregate``'s recorded composition have methods. Which operators of a run ran composed is in the
    row's ``extra.composed`` (:func:`composed_operators`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["gat_aggregate", "typed_aggregate", "COMPOSITIONS", "dispatch", "declared_operator", "composed_operators"]


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


def typed_aggregate(F, graph, x, weight, norm, etype, as_input: Callable[[Any], Any] = lambda t: t):
    """Note [typed aggregation composed]
        ``out[i] = sum_{e=(j->i)} norm[e] x[j] weight[etype[e]]`` from the system's ``spmm``: for each relation
        ``r`` present in ``etype``, ``spmm(x, norm * [etype == r], reduce=sum) @ weight[r]``, summed. It costs
        one pass over all the edges per relation (a fused kernel makes one in all), which is what a system
        without the kernel pays and its row says (``extra.composed``). A graph with no edges still runs relation
        0's product, so the output depends on ``x`` and ``weight`` and both get (zero) gradients.

    Shapes:
        x ``[S, H, D]``, weight ``[R, D, K]``, norm ``[E, H]``, etype ``[E]`` -> ``[N, H, K]``.
    """
    kinds = np.asarray(F.to_numpy(etype)).astype(np.int64)
    relations = np.unique(kinds).tolist() or [0]
    heads, width = x.shape[1], weight.shape[2]
    out = None
    for r in relations:
        mask = F.tensor((kinds == r).astype(np.float64)[:, None])
        h = F.spmm(graph, x, F.mul(norm, mask), reduce="sum")
        part = F.reshape(F.matmul(F.reshape(h, (-1, h.shape[2])), F.take(weight, r)), (-1, heads, width))
        out = part if out is None else F.add(out, part)
    return out


#: operator -> its composition from the other operators, for a system without its kernel (Note [declared dispatch])
COMPOSITIONS: dict[str, Callable] = {"gat_aggregate": gat_aggregate, "typed_aggregate": typed_aggregate}


def dispatch(F, graph, operator: str, attrs: dict[str, Any], inputs, as_input: Callable[[Any], Any] = lambda t: t):
    """Operator ``operator`` of the system API on frontend ``F`` (Note [declared dispatch])."""
    composition = COMPOSITIONS.get(operator)
    if composition is not None and graph.system.find(operator, attrs) is None:
        composed = getattr(graph, "composed", None)
        if composed is not None:
            composed.add(operator)
        return composition(F, graph, *inputs, **attrs, as_input=as_input)
    return F._call(graph, operator, attrs, *(None if t is None else as_input(t) for t in inputs))


def composed_operators(graphs) -> list[str]:
    """The operators that ran composed on any of ``graphs`` (bound graphs), for the row's ``extra.composed``."""
    return sorted({op for g in graphs for op in getattr(g, "composed", ())})


def declared_operator(F, name: str) -> Callable:
    """``F.<name>`` for an operator of ``gnnbench/api.gnn`` without a frontend method of its own: a call of
    :func:`dispatch` (``F.typed_aggregate(graph, x, weight, norm, etype)``); AttributeError for any other name."""
    if not name.startswith("_"):
        from gnnbench.api import OPERATORS

        if name in OPERATORS:
            return lambda graph, *inputs, **attrs: F.operator(name, graph, *inputs, **attrs)
    raise AttributeError(f"{type(F).__name__!r} object has no attribute {name!r}")
