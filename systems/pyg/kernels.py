"""PyG's aggregation kernels as a gnnbench system: gather + ``scatter``, or ``utils.spmm``.

PyG's ``MessagePassing`` has two ways to aggregate, and this system runs
either (``gnnbench run --system pyg -o aggr=scatter|spmm``):

* ``scatter`` (default; what every PyG layer does with an ``edge_index``):
  lift node features to edges with ``index_select`` (``x_j = x[src]``,
  ``x_i = x[dst]``), form the messages, and reduce them per destination with
  ``torch_geometric.utils.scatter`` (``scatter_add_`` for sum and mean,
  ``scatter_reduce_(amax)`` for max). Edge softmax is
  ``torch_geometric.utils.softmax(alpha, index)``, as in ``GATConv``.
* ``spmm`` (what PyG layers do with a sparse ``adj_t``, through
  ``message_and_aggregate``): ``torch_geometric.utils.spmm`` on a
  ``torch.sparse_csr_tensor`` whose values are the edge weight of one head.
  Only ``spmm(reduce=sum|mean)`` and its input gradient take this path;
  everything else is the same as ``scatter``.

The backward kernels compute what autograd derives from those forward
calls: the transpose of a gather is a scatter-add and vice versa.

Differences from PyG, on purpose (the kernel set fixes the semantics):

* PyG's ``scatter(reduce="max")`` has no argmax without ``torch_scatter``
  (not installed here) and its autograd splits a tied maximum's gradient
  evenly among the tied edges; the kernel set gives it all to the first
  edge, so :func:`spmm_max` derives the argmax from the scattered maximum
  (the first edge whose message equals it).
* ``utils.softmax`` adds ``1e-16`` to each row's denominator; that is kept
  (relative effect ``<= 1e-16``, since every row's sum is at least one).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch
import torch_geometric
from torch_geometric.utils import scatter, softmax, spmm

from gnnbench.errors import UserError
from gnnbench.runtime.graph import GraphView

__all__ = ["PygGraph", "prepare", "configure", "report", "spmm_sum", "spmm_sum_backward",
           "spmm_weight_backward", "spmm_max", "spmm_max_backward", "spmm_max_weight_backward",
           "sddmm_dot", "sddmm_add", "edge_sum", "edge_softmax", "edge_softmax_backward"]

#: aggregation path -> what it is; chosen with ``-o aggr=...``
AGGREGATIONS = {"scatter": "index_select + torch_geometric.utils.scatter (MessagePassing with edge_index)",
                "spmm": "torch_geometric.utils.spmm on a torch.sparse CSR adjacency (MessagePassing with adj_t)"}
_OPTIONS = {"aggr": "scatter"}


@dataclass(frozen=True)
class PygGraph:
    """One orientation in PyG's terms: per stored position its row (``index``) and column (``src``).

    Attributes:
        rows: ``[E]`` int64 row of each stored position (PyG's ``index``, the destination).
        cols: ``[E]`` int64 column of each stored position (PyG's ``edge_index[0]``).
        crow: ``[R + 1]`` int64 CSR offsets, for the ``spmm`` path.
        edge_ids: ``[E]`` int64 canonical edge id per position, ``None`` on the forward view.
        row_degree, col_degree: float64 entries per row and per column.
        shape: ``(R, C)``.
    """

    rows: torch.Tensor
    cols: torch.Tensor
    crow: torch.Tensor
    edge_ids: torch.Tensor | None
    row_degree: torch.Tensor
    col_degree: torch.Tensor
    shape: tuple[int, int]
    _copies: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def num_edges(self) -> int:
        return int(self.cols.shape[0])

    def to(self, device: torch.device) -> "PygGraph":
        """This structure on ``device`` (moved once, then cached)."""
        if self.cols.device == device:
            return self
        if device not in self._copies:
            moved = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_copies"}
            self._copies[device] = PygGraph(**{k: v.to(device) if isinstance(v, torch.Tensor) else v
                                               for k, v in moved.items()})
        return self._copies[device]

    def per_position(self, edge_values: torch.Tensor) -> torch.Tensor:
        return edge_values if self.edge_ids is None else edge_values[self.edge_ids]

    def to_canonical(self, position_values: torch.Tensor, out: torch.Tensor) -> None:
        if self.edge_ids is None:
            out.copy_(position_values)
        else:
            out[self.edge_ids] = position_values

    def adjacency(self, values: torch.Tensor) -> torch.Tensor:
        """``torch.sparse_csr_tensor`` of this orientation with per-position ``values``."""
        with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state"
            warnings.simplefilter("ignore", UserWarning)
            return torch.sparse_csr_tensor(self.crow, self.cols, values, self.shape, check_invariants=False)


def prepare(view: GraphView) -> PygGraph:
    crow = torch.from_numpy(view.indptr.astype(np.int64))
    rows = torch.repeat_interleave(torch.arange(view.num_rows, dtype=torch.int64), crow.diff())
    eids = None if view.edge_ids is None else torch.from_numpy(view.edge_ids.astype(np.int64))
    return PygGraph(rows, torch.from_numpy(view.indices.astype(np.int64)), crow, eids,
                    torch.from_numpy(view.row_degree.astype(np.float64)),
                    torch.from_numpy(view.col_degree.astype(np.float64)), (view.num_rows, view.num_cols))


def configure(aggr: str = "scatter", **unknown: str) -> None:
    """Set the aggregation path (``-o aggr=scatter|spmm``)."""
    if unknown:
        raise UserError(f"system 'pyg' has no option {', '.join(sorted(unknown))}; its only option is "
                        f"aggr ({' or '.join(AGGREGATIONS)})")
    if aggr not in AGGREGATIONS:
        raise UserError(f"pyg option aggr must be one of {', '.join(AGGREGATIONS)} (got '{aggr}')")
    _OPTIONS["aggr"] = aggr


def report() -> dict[str, Any]:
    return {"aggr": _OPTIONS["aggr"], "aggregation": AGGREGATIONS[_OPTIONS["aggr"]],
            "torch_geometric": torch_geometric.__version__,
            "torch_scatter": bool(torch_geometric.typing.WITH_TORCH_SCATTER)}


def _pyg(graph: GraphView, like: torch.Tensor) -> PygGraph:
    prepared = graph.prepared if graph.prepared is not None else prepare(graph)
    return prepared.to(like.device)


def _clamped(degree: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return degree.to(like.dtype).clamp(min=1.0)[:, None, None]


# ---------------------------------------------------------------- spmm
def _aggregate(p: PygGraph, x: torch.Tensor, weight: torch.Tensor | None, reduce: str, out: torch.Tensor) -> None:
    """``out = reduce_{e into row} w[e] * x[col(e)]`` by PyG's chosen path (sum or mean)."""
    if _OPTIONS["aggr"] == "spmm":
        heads, width = x.shape[1:]
        if weight is None:
            ones = torch.ones(p.num_edges, dtype=x.dtype, device=x.device)
            out.copy_(spmm(p.adjacency(ones), x.reshape(x.shape[0], heads * width), reduce).view(out.shape))
            return
        values = p.per_position(weight).t().contiguous()
        for h in range(heads):
            out[:, h, :] = spmm(p.adjacency(values[h]), x[:, h, :], reduce)
        return
    msg = x.index_select(0, p.cols)
    if weight is not None:
        msg = msg * p.per_position(weight).unsqueeze(-1)
    out.copy_(scatter(msg, p.rows, 0, dim_size=p.shape[0], reduce=reduce))


def spmm_sum(graph, x, weight, out, *, reduce):
    _aggregate(_pyg(graph, x), x, weight, reduce, out)


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    p = _pyg(graph, grad_out)
    g = grad_out / _clamped(p.col_degree, grad_out) if reduce == "mean" else grad_out
    _aggregate(p, g, weight, "sum", grad_x)


def spmm_weight_backward(graph, x, grad_out, grad_weight, *, reduce):
    p = _pyg(graph, x)
    g = grad_out / _clamped(p.row_degree, grad_out) if reduce == "mean" else grad_out
    # autograd of msg = x_j * w: grad_w = <x_j, grad_msg>, grad_msg = grad_out[index] (scatter's backward)
    grad_weight.copy_((x.index_select(0, p.cols) * g.index_select(0, p.rows)).sum(-1))


def spmm_max(graph, x, weight, out, argmax, *, reduce):
    p = _pyg(graph, x)
    msg = x.index_select(0, p.cols)
    if weight is not None:
        msg = msg * p.per_position(weight).unsqueeze(-1)
    out.copy_(scatter(msg, p.rows, 0, dim_size=p.shape[0], reduce="max"))
    edge_id = torch.arange(p.num_edges, device=x.device) if p.edge_ids is None else p.edge_ids
    best = out.index_select(0, p.rows)   # Note [NaN policy] (gnnbench/api.py): the lowest-id NaN message wins
    winner = torch.where((msg == best) | (torch.isnan(msg) & torch.isnan(best)), edge_id[:, None, None], p.num_edges)
    argmax.copy_(scatter(winner, p.rows, 0, dim_size=p.shape[0], reduce="min") if p.num_edges else
                 torch.zeros_like(argmax))
    argmax[(argmax == p.num_edges) | (p.row_degree == 0)[:, None, None]] = -1


def _winners(p: PygGraph, argmax: torch.Tensor, like: torch.Tensor):
    edge = argmax.clamp(min=0)
    return edge, p.cols[edge], (argmax >= 0).to(like.dtype)


def spmm_max_backward(graph, grad_out, weight, argmax, grad_x):
    p = _pyg(graph, grad_out)
    if p.num_edges == 0:
        return
    edge, src, mask = _winners(p, argmax, grad_out)
    grad = grad_out * mask
    if weight is not None:
        grad = grad * weight.unsqueeze(-1).expand(-1, -1, grad_out.shape[2]).gather(0, edge)
    grad_x.scatter_add_(0, src, grad)


def spmm_max_weight_backward(graph, x, grad_out, argmax, grad_weight):
    p = _pyg(graph, x)
    if p.num_edges == 0:
        return
    edge, src, mask = _winners(p, argmax, grad_out)
    heads = grad_out.shape[1]
    head = torch.arange(heads, device=x.device).view(1, heads, 1).expand_as(edge)
    grad = x.gather(0, src) * grad_out * mask
    grad_weight.view(-1).scatter_add_(0, (edge * heads + head).reshape(-1), grad.reshape(-1))


# ---------------------------------------------------------------- sddmm
def sddmm_dot(graph, src, dst, out):
    p = _pyg(graph, src)
    p.to_canonical((src.index_select(0, p.cols) * dst.index_select(0, p.rows)).sum(-1), out)


def sddmm_add(graph, src, dst, out):
    p = _pyg(graph, src)                     # GATConv: alpha = alpha_j + alpha_i
    p.to_canonical(src.index_select(0, p.cols) + dst.index_select(0, p.rows), out)


def edge_sum(graph, values, out):
    p = _pyg(graph, values)
    out.copy_(scatter(p.per_position(values), p.rows, 0, dim_size=p.shape[0], reduce="sum"))


# ---------------------------------------------------------------- edge softmax
def edge_softmax(graph, scores, out):
    p = _pyg(graph, scores)
    p.to_canonical(softmax(p.per_position(scores), p.rows, num_nodes=p.shape[0]), out)


def edge_softmax_backward(graph, out, grad_out, grad_scores):
    p = _pyg(graph, out)
    o = p.per_position(out)
    t = o * p.per_position(grad_out)
    p.to_canonical(t - o * scatter(t, p.rows, 0, dim_size=p.shape[0], reduce="sum").index_select(0, p.rows),
                   grad_scores)
