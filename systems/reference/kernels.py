"""The oracle's kernels: each operator in plain PyTorch index ops.

Written for clarity, not speed: every edge message is materialised
(``[E, H, D]``). Arguments follow Note [kernel calling convention] in
:mod:`gnnbench.api`; arrays are torch tensors (the spec says ``arrays torch``)
viewing framework-allocated memory, and results are written in place.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from gnnbench.runtime.graph import GraphView


@dataclass(frozen=True)
class Edges:
    """Per stored position: row node, column node, canonical edge id (or None)."""

    rows: torch.Tensor
    cols: torch.Tensor
    edge_ids: torch.Tensor | None
    row_degree: torch.Tensor
    col_degree: torch.Tensor

    def to(self, device: torch.device) -> "Edges":
        if self.rows.device == device:
            return self
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return Edges(*(move(t) for t in (self.rows, self.cols, self.edge_ids, self.row_degree, self.col_degree)))


def prepare(view: GraphView) -> Edges:
    counts = np.diff(view.indptr.astype(np.int64))
    rows = torch.from_numpy(np.repeat(np.arange(view.num_rows, dtype=np.int64), counts))
    cols = torch.from_numpy(view.indices.astype(np.int64))
    eids = None if view.edge_ids is None else torch.from_numpy(view.edge_ids.astype(np.int64))
    return Edges(rows, cols, eids, torch.from_numpy(view.row_degree.copy()), torch.from_numpy(view.col_degree.copy()))


def _edges(graph: GraphView, like: torch.Tensor) -> Edges:
    prepared = graph.prepared if graph.prepared is not None else prepare(graph)
    return prepared.to(like.device)


def _per_position(values: torch.Tensor, e: Edges) -> torch.Tensor:
    """Per-edge values in stored order (canonical order permuted on the transposed view)."""
    return values if e.edge_ids is None else values[e.edge_ids]


def _clamped(degree: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return degree.to(like.dtype).clamp(min=1.0)


def _wide(t: torch.Tensor | None) -> torch.Tensor | None:
    """Note [oracle accumulation]
        Reductions (sums, softmax denominators, dot products) accumulate in
        float64 whatever the input dtype, then round once into the output:
        ``reference`` run in float32 is then at least as accurate as any
        system (isplib, dgnn and pim also accumulate in float64), and on a
        50,000-edge row it agrees with the float64 oracle to ~1e-7.
    """
    return None if t is None else t.to(torch.float64)


# ---------------------------------------------------------------- spmm
def spmm_sum(graph, x, weight, out, *, reduce):
    e = _edges(graph, x)
    x, weight = _wide(x), _wide(weight)   # Note [oracle accumulation]
    msg = x[e.cols]
    if weight is not None:
        msg = msg * _per_position(weight, e)[..., None]
    total = x.new_zeros(out.shape).index_add_(0, e.rows, msg)
    if reduce == "mean":
        total /= _clamped(e.row_degree, total)[:, None, None]
    out.copy_(total)


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    e = _edges(graph, grad_out)
    g, weight = _wide(grad_out), _wide(weight)
    if reduce == "mean":  # the forward divided row i by its in-degree: col_degree of this view
        g = g / _clamped(e.col_degree, g)[:, None, None]
    msg = g[e.cols]
    if weight is not None:
        msg = msg * _per_position(weight, e)[..., None]
    grad_x.copy_(g.new_zeros(grad_x.shape).index_add_(0, e.rows, msg))


def spmm_weight_backward(graph, x, grad_out, grad_weight, *, reduce):
    e = _edges(graph, x)
    x, g = _wide(x), _wide(grad_out)
    if reduce == "mean":
        g = g / _clamped(e.row_degree, g)[:, None, None]
    grad_weight.copy_((x[e.cols] * g[e.rows]).sum(-1))


def spmm_max(graph, x, weight, out, argmax, *, reduce):
    e = _edges(graph, x)
    msg = x[e.cols]
    if weight is not None:
        msg = msg * _per_position(weight, e)[..., None]
    index = e.rows[:, None, None].expand_as(msg)
    out.zero_()
    out.scatter_reduce_(0, index, msg, "amax", include_self=False)
    num_edges = msg.shape[0]
    edge_id = torch.arange(num_edges, device=x.device) if e.edge_ids is None else e.edge_ids
    # Note [NaN policy] (gnnbench.api): a NaN message is the maximum, and the lowest edge id among
    # a row's NaN messages (or its exact ties) receives the gradient
    best = out[e.rows]
    won = (msg == best) | (torch.isnan(msg) & torch.isnan(best))
    winner = torch.where(won, edge_id[:, None, None], num_edges)
    argmax.fill_(num_edges)
    argmax.scatter_reduce_(0, index, winner, "amin", include_self=True)
    argmax[argmax == num_edges] = -1


def _winners(graph, argmax, like):
    e = _edges(graph, like)
    valid = argmax >= 0
    node, head, feat = valid.nonzero(as_tuple=True)
    edge = argmax[valid]
    return e, node, head, feat, edge


def spmm_max_backward(graph, grad_out, weight, argmax, grad_x):
    e, node, head, feat, edge = _winners(graph, argmax, grad_out)
    # canonical edge id -> its source: the forward view stores edge e at position e
    src = e.cols[edge]
    value = grad_out[node, head, feat]
    if weight is not None:
        value = value * weight[edge, head]
    grad_x.index_put_((src, head, feat), value, accumulate=True)


def spmm_max_weight_backward(graph, x, grad_out, argmax, grad_weight):
    e, node, head, feat, edge = _winners(graph, argmax, x)
    value = grad_out[node, head, feat] * x[e.cols[edge], head, feat]
    grad_weight.index_put_((edge, head), value, accumulate=True)


# ---------------------------------------------------------------- sddmm
def sddmm_dot(graph, src, dst, out):
    e = _edges(graph, src)
    src, dst = _wide(src), _wide(dst)
    out.copy_((src[e.cols] * dst[e.rows]).sum(-1))


def sddmm_add(graph, src, dst, out):
    e = _edges(graph, src)
    out.copy_(src[e.cols] + dst[e.rows])


def edge_sum(graph, values, out):
    e = _edges(graph, values)
    values = _wide(values)
    out.copy_(values.new_zeros(out.shape).index_add_(0, e.rows, _per_position(values, e)))


# ---------------------------------------------------------------- edge softmax
def _row_sum(e: Edges, values: torch.Tensor, num_rows: int) -> torch.Tensor:
    total = values.new_zeros((num_rows,) + values.shape[1:])
    return total.index_add_(0, e.rows, values)


def edge_softmax(graph, scores, out):
    e = _edges(graph, scores)
    scores = _wide(scores)
    index = e.rows[:, None].expand_as(scores)
    row_max = scores.new_full((graph.num_rows, scores.shape[1]), -torch.inf)
    row_max.scatter_reduce_(0, index, scores, "amax", include_self=True)
    ex = torch.exp(scores - row_max[e.rows])
    out.copy_(ex / _row_sum(e, ex, graph.num_rows)[e.rows])


def edge_softmax_backward(graph, out, grad_out, grad_scores):
    e = _edges(graph, out)
    out, grad_out = _wide(out), _wide(grad_out)
    t = out * grad_out
    grad_scores.copy_(t - out * _row_sum(e, t, graph.num_rows)[e.rows])


# ---------------------------------------------------------------- typed aggregation
def _relation_products(values: torch.Tensor, weight: torch.Tensor, etype: torch.Tensor) -> torch.Tensor:
    """``values[p] @ weight[etype[p]]`` for every stored position ``p``: ``[P, H, D] x [R, D, K] -> [P, H, K]``,
    one product per relation present (the messages are materialised, the ``[P, D, K]`` weights per edge not)."""
    out = values.new_zeros((values.shape[0], values.shape[1], weight.shape[2]))
    for r in torch.unique(etype).tolist():
        at = (etype == r).nonzero(as_tuple=True)[0]
        out[at] = values[at] @ weight[r]
    return out


def typed_aggregate(graph, x, weight, norm, etype, out):
    """``out[i] = sum_{e=(j->i)} norm[e] * x[j] @ weight[etype[e]]`` (Note [typed aggregation] in gnnbench.api)."""
    e = _edges(graph, x)
    x, weight, norm = _wide(x), _wide(weight), _wide(norm)   # Note [oracle accumulation]
    kinds = _per_position(etype, e).to(torch.int64)
    msg = _relation_products(x[e.cols], weight, kinds) * _per_position(norm, e)[..., None]
    out.copy_(x.new_zeros(out.shape).index_add_(0, e.rows, msg))


def typed_aggregate_backward(graph, grad_out, weight, norm, etype, grad_x):
    """On the transposed view: ``grad_x[j] = sum_{e=(j->i)} norm[e] * grad_out[i] @ weight[etype[e]]^T``."""
    e = _edges(graph, grad_out)
    g, weight, norm = _wide(grad_out), _wide(weight), _wide(norm)
    kinds = _per_position(etype, e).to(torch.int64)
    msg = _relation_products(g[e.cols], weight.transpose(1, 2), kinds) * _per_position(norm, e)[..., None]
    grad_x.copy_(g.new_zeros(grad_x.shape).index_add_(0, e.rows, msg))


def typed_weight_backward(graph, x, grad_out, norm, etype, weight, grad_weight):
    """``grad_weight[r] = sum_{e of relation r} sum_h norm[e, h] * outer(x[j, h], grad_out[i, h])``; ``weight``
    only gives ``R`` (a relation without edges gets zeros). One ``[D, P_r H] x [P_r H, K]`` product per relation
    present, as the forward's :func:`_relation_products`: the per-edge outer products ``[P, D, K]`` are never
    materialised (at ogbn-mag's shape, scale 0.005, they would be 12 GB in float64)."""
    e = _edges(graph, x)
    x, g, norm = _wide(x), _wide(grad_out), _wide(norm)
    kinds = _per_position(etype, e).to(torch.int64)
    scaled, rows = x[e.cols] * _per_position(norm, e)[..., None], g[e.rows]
    out = x.new_zeros(grad_weight.shape)
    for r in torch.unique(kinds).tolist():
        at = (kinds == r).nonzero(as_tuple=True)[0]
        out[r] = torch.einsum("phd,phk->dk", scaled[at], rows[at])
    grad_weight.copy_(out)

