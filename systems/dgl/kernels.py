"""DGL's message-passing kernels (``gspmm``, ``gsddmm``, ``edge_softmax``) as a gnnbench system.

Each kernel calls the function DGL's own autograd Functions run
(``dgl._sparse_ops._gspmm``, ``_gsddmm``, ``_edge_softmax_forward`` and
``_edge_softmax_backward``; ``dgl.ops.gspmm`` is ``GSpMM.apply`` around
``_gspmm``), so the work per call is DGL's, and gnnbench's glue supplies
autograd in place of DGL's ``GSpMM``/``GSDDMM``/``EdgeSoftmax`` Functions. The
backward kernels follow DGL's backward formulas line by line:

==============================  ===============================================================
kernel                          DGL call
==============================  ===============================================================
``spmm_sum``                    ``_gspmm(g, "copy_lhs" | "mul", "sum", x, w)``, then ``/ deg``
``spmm_sum_backward``           the same on the reversed graph (DGL: ``gspmm(g_rev, ...)``)
``spmm_weight_backward``        ``_gsddmm(g, "dot", x, grad_out)``
``spmm_max``                    ``_gspmm(g, "mul", "max", x, w)`` (``arg_e`` is the argmax)
``spmm_max*_backward``          ``scatter_add_`` over the winners, as ``GSpMM.backward`` does
``sddmm_dot`` / ``_add``        ``_gsddmm(g, "dot" | "add", src, dst, "u", "v")``
``edge_sum``                    ``_gspmm(g, "copy_rhs", "sum", None, values)``
``edge_softmax``                ``_edge_softmax_forward`` (DGL's fused CPU kernel)
``edge_softmax_backward``       ``_edge_softmax_backward`` (``sds - out * sum(sds)``)
``typed_aggregate``             ``RelGraphConv``: ``dgl.ops.gather_mm`` (``TypedLinear``) on
                                the gathered sources, times ``norm``, then
                                ``_gspmm(g, "copy_rhs", "sum")``
``typed_aggregate_backward``    ``gather_mm`` with ``W^T`` on ``grad_out[dst] * norm``,
                                summed on the reversed graph (autograd's path)
``typed_weight_backward``       per relation ``sources^T @ grad`` (``segment_mm``'s backward)
==============================  ===============================================================

Note [DGL typed aggregation]
    DGL's relational layer, ``RelGraphConv``, materialises every edge's message
    (``E x H x K``, after an ``E x H x D`` gather of the sources) and sums them
    with ``update_all``; the ``D x K`` product runs once per edge. DGL 2.1 has
    no C kernel for ``gather_mm`` or ``segment_mm`` on the CPU (libdgl raises
    "Unsupported CPU kernel for SegmentMM"): its PyTorch backend runs them in
    PyTorch, ``segment_mm`` as one ``matmul`` per relation over the rows
    sorted by relation (what ``dgl.ops.gather_mm`` does above its size
    switch, ``D`` or ``K`` above 8), and ``gather_mm`` below the switch as a
    ``bmm`` with ``W[etype[e]]`` gathered per row. The forward calls
    ``dgl.ops.gather_mm`` itself; the backward kernels compute what PyTorch's
    autograd runs back through those operations (the same sort and
    per-relation products with ``W^T``; per relation ``sources^T @ grad``
    for the weight). That is the cost this system measures, by design: the
    unfused baseline that fused typed kernels (isplib's, Note [typed
    aggregation loop] in :mod:`gnnbench.systems.isplib.typed_numba`) are
    compared with. The sort by relation runs every call, as
    ``dgl.ops.gather_mm`` does for an unsorted ``etype``.

Note [DGL edge ids]
    :func:`prepare` builds each orientation's DGL graph from its CSC arrays
    (``dgl.graph(("csc", (indptr, indices, edge_ids)))``): DGL's destinations
    are the view's rows and DGL's edge id of every stored position is the
    canonical id (the position itself on the forward view, ``edge_ids[p]`` on
    the transposed one). Per-edge tensors are therefore passed to DGL in
    canonical order on both views, with no permutation, and ``arg_e`` of a
    max reduction is already a canonical edge id. All formats (COO, CSR, CSC)
    are materialised in ``prepare`` so no epoch pays for a conversion. A
    block's views (rows != columns, Note [blocks] in gnnbench/runtime/graph.py)
    become ``dgl.create_block`` graphs, DGL's own bipartite form, with the
    same edge ids.

Differences from DGL's public functions, all on purpose:

* DGL allocates each result; the kernel copies it into the output the
  framework allocated (gnnbench's producer-only contract): one ``N x H x D``
  or ``E x H`` copy per call, part of what this system measures.
* ``gspmm(..., "max")`` in DGL 2.1.0 leaves ``-inf`` and argmax ``0`` on a
  node without in-edges; the kernel set specifies ``0`` and ``-1``, so
  :func:`spmm_max` fixes those rows (and the backward skips them, where DGL
  would add their gradient to node 0).
* An unweighted max passes an all-ones edge weight so that DGL returns
  ``arg_e`` (``copy_lhs`` returns only the source node, which is ambiguous on
  multi-edges).
* A float32 max runs with libxsmm off (Note [libxsmm ties]).

Note [libxsmm ties]
    With libxsmm enabled (DGL's default on x86), DGL's float32 max SpMM
    breaks exact ties to the *last* edge of a row, its float64 path and the
    kernel set to the first (on the conformance suite's ``hub`` graph, 111 of
    398 cases differ in float32, none with libxsmm off). :func:`spmm_max`
    turns libxsmm off for its own call only; sum aggregation keeps DGL's
    default.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from gnnbench.runtime.graph import GraphView
from gnnbench.peers.dgl_shim import dgl
from dgl._sparse_ops import _edge_softmax_backward, _edge_softmax_forward, _gsddmm, _gspmm

__all__ = ["DglGraph", "prepare", "report", "spmm_sum", "spmm_sum_backward", "spmm_weight_backward",
           "spmm_max", "spmm_max_backward", "spmm_max_weight_backward", "sddmm_dot", "sddmm_add",
           "edge_sum", "edge_softmax", "edge_softmax_backward", "typed_aggregate", "typed_aggregate_backward",
           "typed_weight_backward"]


@dataclass
class DglGraph:
    """One orientation as a DGL graph whose edge ids are canonical (Note [DGL edge ids]).

    Attributes:
        graph: the ``dgl.DGLGraph`` (destinations are the view's rows).
        cols: ``[E]`` int64 column node (DGL source) of each edge, by canonical id.
        row_degree: ``[R]`` float64 in-degree in DGL's terms (entries per row).
        col_degree: ``[C]`` float64 entries per column.
        empty_rows: ``[R]`` bool, rows without entries.
    """

    graph: Any
    cols: torch.Tensor
    row_degree: torch.Tensor
    col_degree: torch.Tensor
    empty_rows: torch.Tensor
    _ones: dict = field(default_factory=dict, repr=False)
    _rows: torch.Tensor | None = field(default=None, repr=False)

    @property
    def gidx(self):
        return self.graph._graph

    @property
    def num_edges(self) -> int:
        return int(self.cols.shape[0])

    def ones(self, dtype: torch.dtype) -> torch.Tensor:
        """An all-ones ``[E, 1, 1]`` edge weight (cached per dtype)."""
        if dtype not in self._ones:
            self._ones[dtype] = torch.ones(self.num_edges, 1, 1, dtype=dtype)
        return self._ones[dtype]

    @property
    def rows(self) -> torch.Tensor:
        """``[E]`` int64 row (DGL destination) of each edge, by canonical id: DGL's own ``edges(order="eid")``,
        built on first use (only the typed weight gradient reads it) and kept."""
        if self._rows is None:
            self._rows = self.graph.edges(order="eid")[1].to(torch.int64)
        return self._rows


def prepare(view: GraphView) -> DglGraph:
    """Build one orientation's DGL graph with canonical edge ids and all formats."""
    index = np.int32 if view.index_dtype == np.int32 else np.int64
    indptr = torch.from_numpy(view.indptr.astype(index))
    indices = torch.from_numpy(view.indices.astype(index))
    if view.edge_ids is None:
        eids = torch.arange(view.num_edges, dtype=indices.dtype)
    else:
        eids = torch.from_numpy(view.edge_ids.astype(index))
    if view.num_rows == view.num_cols:
        g = dgl.graph(("csc", (indptr, indices, eids)), num_nodes=view.num_rows)
    else:  # a sampled block's view (Note [blocks]): DGL's own block, sources = columns, destinations = rows
        g = dgl.create_block(("csc", (indptr, indices, eids)), num_src_nodes=view.num_cols,
                             num_dst_nodes=view.num_rows)
    g.create_formats_()
    cols = torch.empty(view.num_edges, dtype=torch.int64)
    cols[eids.long()] = indices.long()
    row_degree = torch.from_numpy(view.row_degree.astype(np.float64))
    return DglGraph(g, cols, row_degree, torch.from_numpy(view.col_degree.astype(np.float64)), row_degree == 0)


def report() -> dict[str, Any]:
    return {"dgl_version": dgl.__version__, "libxsmm": bool(dgl.is_libxsmm_enabled())}


def _dgl(graph: GraphView) -> DglGraph:
    return graph.prepared if graph.prepared is not None else prepare(graph)


def _clamped(degree: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return degree.to(like.dtype).clamp(min=1.0)[:, None, None]


def _aggregate(d: DglGraph, x: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    if weight is None:
        return _gspmm(d.gidx, "copy_lhs", "sum", x, None)[0]
    return _gspmm(d.gidx, "mul", "sum", x, weight.unsqueeze(-1))[0]


# ---------------------------------------------------------------- spmm
def spmm_sum(graph, x, weight, out, *, reduce):
    d = _dgl(graph)
    out.copy_(_aggregate(d, x, weight))
    if reduce == "mean":  # dgl.ops' mean: the sum over in-degrees clamped at 1
        out /= _clamped(d.row_degree, out)


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    d = _dgl(graph)                                   # the transposed view: DGL's reversed graph
    g = grad_out / _clamped(d.col_degree, grad_out) if reduce == "mean" else grad_out
    grad_x.copy_(_aggregate(d, g, weight))


def spmm_weight_backward(graph, x, grad_out, grad_weight, *, reduce):
    d = _dgl(graph)
    g = grad_out / _clamped(d.row_degree, grad_out) if reduce == "mean" else grad_out
    grad_weight.copy_(_gsddmm(d.gidx, "dot", x, g, "u", "v").squeeze(-1))


@contextmanager
def _without_libxsmm():
    """DGL's portable CPU kernels for one call (Note [libxsmm ties])."""
    enabled = dgl.is_libxsmm_enabled()
    if enabled:
        dgl.use_libxsmm(False)
    try:
        yield
    finally:
        if enabled:
            dgl.use_libxsmm(True)


def spmm_max(graph, x, weight, out, argmax, *, reduce):
    d = _dgl(graph)
    w = d.ones(x.dtype) if weight is None else weight.unsqueeze(-1)
    with _without_libxsmm():
        value, (_, arg_e) = _gspmm(d.gidx, "mul", "max", x, w)
    empty = d.empty_rows[:, None, None]
    out.copy_(value.masked_fill(empty, 0.0))
    argmax.copy_(arg_e)
    argmax.masked_fill_(empty.expand_as(argmax), -1)
    if d.num_edges and (not torch.isfinite(x).all() or (weight is not None and not torch.isfinite(weight).all())):
        _special_winners(d, x, weight, out, argmax)


def _special_winners(d: DglGraph, x, weight, out, argmax) -> None:
    """Note [DGL drops NaN]
        DGL's max (``gspmm`` with ``max``, DGL 2.1 on CPU) compares with ``>``
        from a -inf start, so a NaN message never wins: the row's maximum of
        the other messages comes back. Note [NaN policy] (gnnbench/api.py) makes
        a NaN the maximum; DGL's kernel cannot be changed here, so its result
        is corrected afterwards: where any message of a row is NaN, ``out`` is
        NaN and the winner is the lowest edge id among the NaN messages. A row
        whose messages are all ``-inf`` never beats the start either (no
        winner, so no gradient); it gets ``-inf`` and its lowest edge id.
    """
    rows = d.graph.edges(order="eid")[1].to(torch.int64)
    msg = x[d.cols] * (1.0 if weight is None else weight.unsqueeze(-1))
    index = rows[:, None, None].expand_as(msg)
    num_edges = d.num_edges
    edge_id = torch.arange(num_edges)[:, None, None].expand_as(msg)

    def lowest(where):
        return torch.full(out.shape, num_edges, dtype=torch.int64).scatter_reduce_(
            0, index, torch.where(where, edge_id, num_edges), "amin", include_self=True)

    first_nan = lowest(torch.isnan(msg))
    first_neg_inf = lowest(msg == -torch.inf)
    all_neg_inf = (first_neg_inf < num_edges) & ~d.empty_rows[:, None, None] & \
        (torch.full(out.shape, -torch.inf, dtype=msg.dtype).scatter_reduce_(0, index, msg, "amax") == -torch.inf)
    out.masked_fill_(all_neg_inf, -torch.inf)
    argmax.copy_(torch.where(all_neg_inf, first_neg_inf, argmax))
    hit = first_nan < num_edges
    out.masked_fill_(hit, float("nan"))
    argmax.copy_(torch.where(hit, first_nan, argmax))


def _winners(d: DglGraph, argmax: torch.Tensor, like: torch.Tensor):
    """Winning edge (0 where none), its source node, and a 0/1 mask, per output element."""
    edge = argmax.clamp(min=0)
    return edge, d.cols[edge], (argmax >= 0).to(like.dtype)


def spmm_max_backward(graph, grad_out, weight, argmax, grad_x):
    d = _dgl(graph)
    if d.num_edges == 0:
        return
    edge, src, mask = _winners(d, argmax, grad_out)
    grad = grad_out * mask
    if weight is not None:  # GSpMM.backward: _expand(Y).gather(0, argY) * dZ
        grad = grad * weight.unsqueeze(-1).expand(-1, -1, grad_out.shape[2]).gather(0, edge)
    grad_x.scatter_add_(0, src, grad)


def spmm_max_weight_backward(graph, x, grad_out, argmax, grad_weight):
    d = _dgl(graph)
    if d.num_edges == 0:
        return
    edge, src, mask = _winners(d, argmax, grad_out)
    grad = x.gather(0, src) * grad_out * mask            # GSpMM.backward: _expand(X).gather(0, argX) * dZ
    per_feature = torch.zeros(grad_weight.shape + (grad_out.shape[2],), dtype=grad.dtype)
    per_feature.scatter_add_(0, edge, grad)
    grad_weight += per_feature.sum(-1)                   # _reduce_grad over the broadcast feature axis


# ---------------------------------------------------------------- sddmm
def sddmm_dot(graph, src, dst, out):
    d = _dgl(graph)
    out.copy_(_gsddmm(d.gidx, "dot", src, dst, "u", "v").squeeze(-1))


def sddmm_add(graph, src, dst, out):
    d = _dgl(graph)
    out.copy_(_gsddmm(d.gidx, "add", src, dst, "u", "v"))


def edge_sum(graph, values, out):
    d = _dgl(graph)
    out.copy_(_gspmm(d.gidx, "copy_rhs", "sum", None, values)[0])


# ---------------------------------------------------------------- edge softmax
def edge_softmax(graph, scores, out):
    d = _dgl(graph)
    if d.num_edges:
        out.copy_(_edge_softmax_forward(d.gidx, scores, "copy_rhs"))


def edge_softmax_backward(graph, out, grad_out, grad_scores):
    d = _dgl(graph)
    if d.num_edges:
        grad_scores.copy_(_edge_softmax_backward(d.gidx, out, out * grad_out))


# ---------------------------------------------------------------- typed aggregation
def _uses_segments(rows: int, d_in: int, d_out: int) -> bool:
    """``dgl.ops.gather_mm``'s switch: sort by relation and run ``segment_mm`` above it, ``gather_mm`` below."""
    return rows > 1000000 or d_in > 8 or d_out > 8


def _per_head(etype: torch.Tensor, heads: int) -> torch.Tensor:
    """The relation of each row of an ``[E, H, F]`` tensor seen as ``[E * H, F]``."""
    return etype.repeat_interleave(heads)


def typed_aggregate(graph, x, weight, norm, etype, out):
    """``RelGraphConv``'s message and sum: ``m[e] = TypedLinear(x[src[e]], etype[e]) * norm[e]``, summed per row."""
    d = _dgl(graph)
    if d.num_edges == 0:
        out.zero_()
        return
    edges, heads = norm.shape
    messages = dgl.ops.gather_mm(x[d.cols].reshape(edges * heads, -1), weight, idx_b=_per_head(etype, heads))
    messages = messages.view(edges, heads, -1) * norm.unsqueeze(-1)
    out.copy_(_gspmm(d.gidx, "copy_rhs", "sum", None, messages)[0])   # update_all(..., fn.sum("m", "h"))


def typed_aggregate_backward(graph, grad_out, weight, norm, etype, grad_x):
    """What autograd runs back through ``RelGraphConv``, on the transposed view: the messages' gradient
    ``grad_out[dst[e]] * norm[e]``, through ``gather_mm`` with ``W^T`` (the same sort and per-relation
    products), summed per source."""
    d = _dgl(graph)
    if d.num_edges == 0:
        grad_x.zero_()
        return
    edges, heads = norm.shape
    grad_messages = (grad_out[d.cols] * norm.unsqueeze(-1)).reshape(edges * heads, -1)
    grad_sources = dgl.ops.gather_mm(grad_messages, weight.transpose(1, 2), idx_b=_per_head(etype, heads))
    grad_x.copy_(_gspmm(d.gidx, "copy_rhs", "sum", None, grad_sources.view(edges, heads, -1))[0])


def typed_weight_backward(graph, x, grad_out, norm, etype, weight, grad_weight):
    """What autograd computes for ``TypedLinear``'s weight on the CPU: above DGL's size switch, per relation
    ``sources[r]^T @ grad_messages[r]`` over the sorted rows (``segment_mm``'s loop of matmuls, backward);
    below it, each row's outer product added into its relation (``bmm`` on ``W[idx]``, backward). A relation
    without edges gets 0."""
    d = _dgl(graph)
    if d.num_edges == 0:
        grad_weight.zero_()
        return
    edges, heads = norm.shape
    sources = x[d.cols].reshape(edges * heads, -1)
    grad_messages = (grad_out[d.rows] * norm.unsqueeze(-1)).reshape(edges * heads, -1)
    idx = _per_head(etype, heads)
    if not _uses_segments(sources.shape[0], *weight.shape[1:]):
        grad_weight.zero_().index_add_(0, idx, torch.bmm(sources.unsqueeze(2), grad_messages.unsqueeze(1)))
        return
    sorted_idx, perm = torch.sort(idx)
    sources, grad_messages = sources.index_select(0, perm), grad_messages.index_select(0, perm)
    start = 0
    for r, length in enumerate(torch.bincount(sorted_idx, minlength=weight.shape[0]).tolist()):
        torch.matmul(sources[start:start + length].T, grad_messages[start:start + length], out=grad_weight[r])
        start += length
