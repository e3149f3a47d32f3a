"""Vendor sparse kernels through ``torch.sparse`` CSR tensors: MKL on the CPU, cuSPARSE on CUDA.

One implementation serves two systems: ``mkl`` (``devices cpu``) and
``cusparse`` (``devices cuda``) name this module in their specs. PyTorch
dispatches a CSR tensor to the vendor library of its device:

==========================  =====================================  ============================
kernel                      call                                   library (CPU / CUDA)
==========================  =====================================  ============================
``spmm_sum`` (+ backward)   ``torch.mm(A_w, x, out=...)``          MKL sparse / cuSPARSE SpMM
``spmm_weight_backward``    ``torch.sparse.sampled_addmm``         ATen loop / cuSPARSE SDDMM
``sddmm_dot``               ``torch.sparse.sampled_addmm``         ATen loop / cuSPARSE SDDMM
``spmm_max``                ``torch.sparse.mm(A, x, "amax")``      ATen CSR reduce / fallback
``sddmm_add``, ``edge_*``   gathers and ``torch.segment_reduce``   ATen (no vendor routine)
``spmm_max_*backward``      ``scatter_add_`` over the winners      ATen (no vendor routine)
==========================  =====================================  ============================

``A_w`` is the CSR matrix of one orientation whose values are the edge weights
of one head (ones without a weight), so ``out[i,h] = sum_e w[e,h] x[j,h]`` is a
plain sparse-dense product per head; without a weight all heads go in one
product over ``x`` viewed as ``[N, H*D]``. ``reduce=mean`` scales the sum by
``1 / max(row_degree, 1)``.

Note [CSR gradients in torch 2.13]
    Checked on torch 2.13.0 (CPU): autograd of ``torch.sparse.mm`` gives
    gradients for the dense operand and for the CSR values (sum, mean and
    amax), but only when the matrix has no duplicate ``(row, col)`` entries:
    with a multi-edge the values' gradient is coalesced to the unique entries
    and autograd fails ("got [4] but expected shape compatible with [5]").
    ``sampled_addmm`` with ``beta=0`` gives no gradient to the pattern's
    values. gnnbench graphs keep duplicate edges, so none of this is used:
    every gradient is one of this module's backward kernels, which the
    specs declare and the generated glue calls.

Note [over-full pattern]
    A CSR pattern can store more entries than it has cells (``nnz > rows *
    cols``) only through parallel edges, e.g. one node with three self loops.
    The vendor routines refuse it: on torch 2.13 (CPU) ``sampled_addmm``
    raises "torch.copy_: only sparse compressed tensors with the same number
    of specified elements", and on CUDA (torch 2.11, cuSPARSE 13, H200)
    ``cusparseCreateCsr`` rejects the descriptor ("dimension mismatch, nnz (3)
    > matrix size (1)"), so ``torch.mm`` fails too. Such a pattern takes a
    plain gather-and-sum on both devices (same result; the graph is tiny by
    construction), so the CPU tests run the code that serves CUDA.
    ``gnnbench verify --system cusparse --device cuda`` found the CUDA case on
    its first run on a GPU (graph ``single_node_loops``).

Note [argmax of amax]
    ``torch.sparse.mm(A, x, "amax")`` computes the max but does not return
    the winning entry. The kernel behind it,
    ``aten::_sparse_mm_reduce_impl``, also returns ``arg_out`` (the winning
    position, ``nnz`` for an empty row, first position on ties), but only
    when grad mode is on and an operand requires grad. ``spmm_max`` calls it
    that way on a detached alias of ``x`` and drops the autograd node. The
    op exists for CSR on the CPU only; on CUDA, or if a torch build lacks
    it, ``spmm_max`` uses a ``scatter_reduce`` fallback (reported by
    :func:`report`).

Note [int32 indices for MKL]
    PyTorch's MKL build is LP64: a CSR with int64 indices is converted to
    int32 on every call (about a third of an SpMM's time at 1M edges), so
    :func:`prepare` stores the indices as int32 whenever they fit.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from gnnbench.runtime.graph import GraphView

__all__ = ["CsrGraph", "prepare", "report", "spmm_sum", "spmm_sum_backward", "spmm_weight_backward",
           "spmm_max", "spmm_max_backward", "spmm_max_weight_backward", "sddmm_dot", "sddmm_add",
           "edge_sum", "edge_softmax", "edge_softmax_backward"]

#: which code path each kernel took in this process (for the run row's system_report)
_PATHS: dict[str, str] = {}


# ---------------------------------------------------------------- the prepared format
@dataclass
class CsrGraph:
    """One orientation as torch tensors: CSR structure, per-position rows, edge ids, degrees.

    Attributes:
        crow: ``[R + 1]`` row offsets (int32 when they fit, Note [int32 indices for MKL]).
        col: ``[E]`` column of each stored position (same dtype as ``crow``).
        offsets: ``crow`` as int64 (``torch.segment_reduce`` wants int64 offsets).
        rows: ``[E]`` int64 row of each stored position.
        cols: ``[E]`` int64 column of each stored position.
        edge_ids: ``[E]`` int64 canonical id of each position, ``None`` on the forward view.
        row_degree: ``[R]`` float64 entries per row.
        col_degree: ``[C]`` float64 entries per column.
        shape: ``(R, C)``.
    """

    crow: torch.Tensor
    col: torch.Tensor
    offsets: torch.Tensor
    rows: torch.Tensor
    cols: torch.Tensor
    edge_ids: torch.Tensor | None
    row_degree: torch.Tensor
    col_degree: torch.Tensor
    shape: tuple[int, int]
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def nnz(self) -> int:
        return int(self.col.shape[0])

    @property
    def over_full(self) -> bool:
        """More stored entries than cells: the vendor routines refuse it (Note [over-full pattern])."""
        return self.nnz > self.shape[0] * self.shape[1]

    def to(self, device: torch.device) -> "CsrGraph":
        """This structure on ``device`` (moved once, then cached)."""
        if self.crow.device == device:
            return self
        key = ("device", str(device))
        if key not in self._cache:
            move = lambda t: None if t is None else t.to(device)  # noqa: E731
            self._cache[key] = CsrGraph(move(self.crow), move(self.col), move(self.offsets), move(self.rows),
                                        move(self.cols), move(self.edge_ids), move(self.row_degree),
                                        move(self.col_degree), self.shape)
        return self._cache[key]

    def matrix(self, values: torch.Tensor) -> torch.Tensor:
        """The CSR tensor of this structure with ``values`` (``[E]``, in stored order)."""
        with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state", once per process
            warnings.simplefilter("ignore", UserWarning)
            return torch.sparse_csr_tensor(self.crow, self.col, values, self.shape, check_invariants=False)

    def pattern(self, dtype: torch.dtype) -> torch.Tensor:
        """The CSR tensor with all values one (the unweighted adjacency), cached per dtype."""
        key = ("pattern", dtype)
        if key not in self._cache:
            self._cache[key] = self.matrix(torch.ones(self.nnz, dtype=dtype, device=self.crow.device))
        return self._cache[key]

    def per_position(self, edge_values: torch.Tensor) -> torch.Tensor:
        """Per-edge values (canonical order) in this orientation's stored order."""
        return edge_values if self.edge_ids is None else edge_values[self.edge_ids]

    def to_canonical(self, position_values: torch.Tensor, out: torch.Tensor) -> None:
        """Write stored-order values into ``out`` in canonical order."""
        if self.edge_ids is None:
            out.copy_(position_values)
        else:
            out[self.edge_ids] = position_values

    def clamped(self, degree: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return degree.to(dtype).clamp(min=1.0)


def prepare(view: GraphView) -> CsrGraph:
    """Build the CSR tensors of one orientation (called once per graph orientation)."""
    fits32 = view.num_edges < 2**31 and max(view.num_rows, view.num_cols) < 2**31
    index = torch.int32 if fits32 else torch.int64
    offsets = torch.from_numpy(view.indptr.astype(np.int64))
    cols = torch.from_numpy(view.indices.astype(np.int64))
    rows = torch.repeat_interleave(torch.arange(view.num_rows, dtype=torch.int64), offsets.diff())
    eids = None if view.edge_ids is None else torch.from_numpy(view.edge_ids.astype(np.int64))
    return CsrGraph(offsets.to(index), cols.to(index), offsets, rows, cols, eids,
                    torch.from_numpy(view.row_degree.astype(np.float64)),
                    torch.from_numpy(view.col_degree.astype(np.float64)), (view.num_rows, view.num_cols))


def report() -> dict[str, Any]:
    """What ran: the library behind torch.sparse here and the path each kernel took."""
    return {"mkl_available": bool(torch.backends.mkl.is_available()),
            "cuda_available": bool(torch.cuda.is_available()), "paths": dict(_PATHS)}


def _csr(graph: GraphView, like: torch.Tensor) -> CsrGraph:
    prepared = graph.prepared if graph.prepared is not None else prepare(graph)
    return prepared.to(like.device)


# ---------------------------------------------------------------- spmm (sum, mean)
def _spmm_into(c: CsrGraph, x: torch.Tensor, weight: torch.Tensor | None, out: torch.Tensor) -> None:
    """``out[r,h] = sum over row r of w[e,h] * x[col,h]`` with one vendor SpMM per head (one in all unweighted)."""
    rows, heads, width = out.shape
    if c.over_full:  # Note [over-full pattern]
        gathered = x[c.cols] if weight is None else x[c.cols] * c.per_position(weight)[:, :, None]
        out.zero_().index_add_(0, c.rows, gathered)
        return
    if weight is None:
        torch.mm(c.pattern(x.dtype), x.reshape(x.shape[0], heads * width), out=out.view(rows, heads * width))
        return
    values = c.per_position(weight).t().contiguous()          # [H, E]: one contiguous value array per head
    for h in range(heads):
        torch.mm(c.matrix(values[h]), x[:, h, :], out=out[:, h, :])


def spmm_sum(graph, x, weight, out, *, reduce):
    c = _csr(graph, x)
    _PATHS["spmm_sum"] = "gather (pattern has more entries than cells)" if c.over_full else "torch.mm(csr)"
    _spmm_into(c, x, weight, out)
    if reduce == "mean":
        out /= c.clamped(c.row_degree, out.dtype)[:, None, None]


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    c = _csr(graph, grad_out)
    g = grad_out
    if reduce == "mean":  # the forward divided row i by its in-degree: col_degree of this (transposed) view
        g = g / c.clamped(c.col_degree, g.dtype)[:, None, None]
    _spmm_into(c, g, weight, grad_x)


def _sampled_dot(c: CsrGraph, left: torch.Tensor, right: torch.Tensor, out: torch.Tensor) -> None:
    """``out[e,h] = <left[row(e),h], right[col(e),h]>`` (canonical order), one vendor SDDMM per head."""
    if c.over_full:   # Note [over-full pattern]
        _PATHS["sddmm_dot"] = "gather (pattern has more entries than cells)"
        c.to_canonical((left[c.rows] * right[c.cols]).sum(-1), out)
        return
    pattern = c.pattern(left.dtype)
    for h in range(out.shape[1]):
        sampled = torch.sparse.sampled_addmm(pattern, left[:, h, :], right[:, h, :].t(), beta=0.0)
        c.to_canonical(sampled.values(), out[:, h])


def spmm_weight_backward(graph, x, grad_out, grad_weight, *, reduce):
    c = _csr(graph, x)
    g = grad_out
    if reduce == "mean":
        g = g / c.clamped(c.row_degree, g.dtype)[:, None, None]
    if c.nnz == 0:
        return
    _sampled_dot(c, g, x, grad_weight)


# ---------------------------------------------------------------- spmm (max)
def _amax_with_arg(matrix: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Max-reduce SpMM and its winning positions (Note [argmax of amax])."""
    with torch.enable_grad():
        value, arg = torch.ops.aten._sparse_mm_reduce_impl(matrix, x.detach().requires_grad_(), "amax")
    return value.detach(), arg


def _max_fallback(c: CsrGraph, x, weight, out, argmax) -> None:
    """Max aggregation with ``scatter_reduce`` (CUDA, or a torch without the reduce kernel)."""
    msg = x[c.cols]
    if weight is not None:
        msg = msg * c.per_position(weight)[..., None]
    index = c.rows[:, None, None].expand_as(msg)
    out.zero_()
    out.scatter_reduce_(0, index, msg, "amax", include_self=False)
    edge_id = torch.arange(c.nnz, device=x.device) if c.edge_ids is None else c.edge_ids
    best = out[c.rows]   # Note [NaN policy] (gnnbench/api.py): the lowest-id NaN message wins
    winner = torch.where((msg == best) | (torch.isnan(msg) & torch.isnan(best)), edge_id[:, None, None], c.nnz)
    argmax.fill_(c.nnz)
    argmax.scatter_reduce_(0, index, winner, "amin", include_self=True)
    argmax[argmax == c.nnz] = -1


def spmm_max(graph, x, weight, out, argmax, *, reduce):
    c = _csr(graph, x)
    rows, heads, width = out.shape
    if c.nnz == 0:
        out.zero_()
        argmax.fill_(-1)
        return
    if x.device.type != "cpu" or not hasattr(torch.ops.aten, "_sparse_mm_reduce_impl"):
        _PATHS["spmm_max"] = "scatter_reduce fallback"
        _max_fallback(c, x, weight, out, argmax)
        return
    _PATHS["spmm_max"] = "torch.sparse.mm(csr, reduce=amax)"
    if weight is None:
        value, arg = _amax_with_arg(c.pattern(x.dtype), x.reshape(x.shape[0], heads * width))
        out.copy_(value.view(out.shape))
        argmax.copy_(arg.view(out.shape))
    else:
        values = c.per_position(weight).t().contiguous()
        for h in range(heads):
            value, arg = _amax_with_arg(c.matrix(values[h]), x[:, h, :])
            out[:, h, :] = value
            argmax[:, h, :] = arg
    empty = argmax >= c.nnz                                   # an empty row reports position nnz
    if c.edge_ids is not None:
        argmax.copy_(torch.where(empty, 0, argmax))
        argmax.copy_(c.edge_ids[argmax])
    argmax.masked_fill_(empty, -1)
    if torch.isnan(out).any() or (out == -torch.inf).any():   # torch's amax reports some NaN's position (or
        # none for a row of -inf), not the winner of Note [NaN policy]
        _max_fallback(c, x, weight, out, argmax)


def _winners(c: CsrGraph, argmax: torch.Tensor, like: torch.Tensor):
    """Per output element: its winning edge (0 where none), the winner's source node, and a 0/1 mask."""
    valid = argmax >= 0
    edge = argmax.clamp(min=0)
    return edge, c.cols[edge], valid.to(like.dtype)


def spmm_max_backward(graph, grad_out, weight, argmax, grad_x):
    c = _csr(graph, grad_out)
    if c.nnz == 0:
        return
    rows, heads, width = grad_out.shape
    edge, src, mask = _winners(c, argmax, grad_out)
    value = grad_out * mask
    if weight is not None:
        value = value * _weight_at(weight, edge)
    # grad_x[src[i,h,d], h, d] += value[i,h,d]: a scatter along dim 0 of the [N, H*D] view
    grad_x.view(grad_x.shape[0], heads * width).scatter_add_(0, src.view(rows, heads * width),
                                                             value.reshape(rows, heads * width))


def _weight_at(weight: torch.Tensor, edge: torch.Tensor) -> torch.Tensor:
    """``weight[edge[i,h,d], h]`` for every output element."""
    heads = weight.shape[1]
    head = torch.arange(heads, device=edge.device).view(1, heads, 1)
    return weight.reshape(-1)[edge * heads + head]


def spmm_max_weight_backward(graph, x, grad_out, argmax, grad_weight):
    c = _csr(graph, x)
    if c.nnz == 0:
        return
    heads = grad_out.shape[1]
    edge, src, mask = _winners(c, argmax, grad_out)
    head = torch.arange(heads, device=x.device).view(1, heads, 1).expand_as(edge)
    value = grad_out * mask * x[src, head, torch.arange(x.shape[2], device=x.device)]
    grad_weight.view(-1).scatter_add_(0, (edge * heads + head).reshape(-1), value.reshape(-1))


# ---------------------------------------------------------------- sddmm
def sddmm_dot(graph, src, dst, out):
    c = _csr(graph, src)
    if c.nnz == 0:
        return
    _PATHS["sddmm_dot"] = "torch.sparse.sampled_addmm"
    _sampled_dot(c, dst, src, out)            # rows are destinations: <dst[i], src[j]>


def sddmm_add(graph, src, dst, out):
    c = _csr(graph, src)
    position = src.index_select(0, c.cols) + dst.index_select(0, c.rows)
    c.to_canonical(position, out)


def _row_sum(c: CsrGraph, values: torch.Tensor) -> torch.Tensor:
    """Per-row sum of stored-order ``values`` ``[E, H]`` -> ``[R, H]`` (0 for an empty row)."""
    return torch.segment_reduce(values, "sum", offsets=c.offsets, axis=0)


def edge_sum(graph, values, out):
    c = _csr(graph, values)
    if c.nnz == 0:
        out.zero_()
        return
    out.copy_(_row_sum(c, c.per_position(values)))


# ---------------------------------------------------------------- edge softmax
def edge_softmax(graph, scores, out):
    c = _csr(graph, scores)
    if c.nnz == 0:
        return
    s = c.per_position(scores)
    row_max = torch.segment_reduce(s, "max", offsets=c.offsets, axis=0)
    ex = torch.exp(s - row_max.index_select(0, c.rows))
    c.to_canonical(ex / _row_sum(c, ex).index_select(0, c.rows), out)


def edge_softmax_backward(graph, out, grad_out, grad_scores):
    c = _csr(graph, out)
    if c.nnz == 0:
        return
    o = c.per_position(out)
    t = o * c.per_position(grad_out)
    c.to_canonical(t - o * _row_sum(c, t).index_select(0, c.rows), grad_scores)
