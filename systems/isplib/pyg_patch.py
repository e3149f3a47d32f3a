"""PyG in two lines: route ``torch_geometric.utils.spmm`` on sparse adjacencies to isplib.

    from gnnbench.systems import isplib
    isplib.patch_pyg()

PyG's convs aggregate a sparse ``adj_t`` through ``message_and_aggregate``,
which calls ``spmm(adj_t, x, reduce=self.aggr)`` bound in each conv module
(``gcn_conv``, ``sage_conv``, ``gin_conv``, ...). :func:`patch_pyg` rebinds
that name, in every loaded ``torch_geometric`` module holding the original, to
:func:`isplib_spmm`, which runs a ``torch.autograd.Function`` over isplib's
tuned kernels and falls back to the original for anything it does not cover.

Note [pyg patch coverage]
    Handled: a CPU ``torch.sparse`` CSR, CSC or COO tensor that does not
    require grad, a 2-D float32/float64 ``x``, ``reduce`` in sum/add/mean.
    Everything else (``SparseTensor``, ``EdgeIndex``, max/min, CUDA, a
    differentiable adjacency) goes to PyG's own ``spmm`` unchanged. The
    gradient flows to ``x`` through the cached transpose (iSpLib's trick):
    ``grad_x = A^T grad_out``, with the mean's ``1/deg`` folded in.

Note [adjacency cache]
    Building the transpose and the row blocks costs ``O(E log E)``. An
    adjacency *object* (held by weak reference) maps to its prepared state
    until its values change in place (tensor version counter). A new object
    with a recently seen sparsity pattern -- ``GCNConv(cached=False)``
    renormalises into a fresh tensor every forward -- is matched by content
    (``torch.equal`` on the CSR indices, ``O(E)``) against the last four
    patterns and reuses their transpose; only its values are taken anew.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import sys
import warnings
import weakref
from typing import Any, Callable, Iterator

import numpy as np
import torch

__all__ = ["patch_pyg", "unpatch_pyg", "pyg_patched", "isplib_spmm", "is_patched"]

_ORIGINAL: Callable | None = None
_PATCHED_MODULES: list[str] = []


# ----------------------------------------------------------- cached adjacency
class _Structure:
    """A CSR sparsity pattern's views for both directions, prepared for isplib (Note [adjacency cache])."""

    def __init__(self, crow: torch.Tensor, col: torch.Tensor, shape: tuple[int, int]):
        from gnnbench.runtime.graph import GraphView
        from gnnbench.systems.isplib import tuning_cache
        from gnnbench.systems.isplib.prepared import IsplibGraph

        self.crow, self.col, self.shape = crow, col, shape
        m, k = shape
        idt = np.int32 if col.dtype == torch.int32 else np.int64
        indptr = _readonly(crow.numpy().astype(idt))
        indices = _readonly(col.numpy().astype(idt))
        order = np.argsort(indices, kind="stable")
        counts = np.bincount(indices, minlength=k)
        indptr_t = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr_t[1:])
        rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
        indptr_t = _readonly(indptr_t.astype(idt))
        indices_t = _readonly(rows[order].astype(idt))
        edge_ids = _readonly(order.astype(idt))
        deg_row = np.diff(indptr).astype(np.float32)
        deg_col = counts.astype(np.float32)

        sig = _signature(indptr, indices, m, k)
        path = tuning_cache.cache_file()
        views = []
        for orient, ip, ix, eids, nr, nc, dr, dc in (
                ("forward", indptr, indices, None, m, k, deg_row, deg_col),
                ("transposed", indptr_t, indices_t, edge_ids, k, m, deg_col, deg_row)):
            entries = tuning_cache.lookup(sig, orient, path)
            prep = IsplibGraph(orient, sig, nr, ip, variants=entries, tuned=bool(entries), cache_path=str(path),
                               row_degree=dr, col_degree=dc)
            views.append(GraphView(ip, ix, eids, dr, dc, nr, nc, orient == "transposed", None, prep))
        self.forward, self.backward = views

    def same_pattern(self, crow: torch.Tensor, col: torch.Tensor, shape: tuple[int, int]) -> bool:
        return (shape == self.shape and col.shape == self.col.shape and col.dtype == self.col.dtype
                and torch.equal(crow, self.crow) and torch.equal(col, self.col))


class _Adjacency:
    """A sparse adjacency as isplib sees it: a shared :class:`_Structure` plus this tensor's values."""

    def __init__(self, structure: _Structure, values: torch.Tensor, version: int):
        self.structure, self.values, self.version = structure, values, version
        self.forward, self.backward = structure.forward, structure.backward
        self.num_rows, self.num_cols = structure.shape
        self.unit = bool((values == 1).all()) if values.numel() else True
        self._weights: dict[torch.dtype, np.ndarray] = {}

    def weight(self, dtype: torch.dtype) -> np.ndarray | None:
        """Edge values as ``[E, 1]`` in ``dtype``, or None when all are one (the unweighted loop)."""
        if self.unit:
            return None
        w = self._weights.get(dtype)
        if w is None:
            w = self._weights[dtype] = self.values.to(dtype).reshape(-1, 1).contiguous().numpy()
        return w


def _readonly(a: np.ndarray) -> np.ndarray:
    # graph arrays are read-only everywhere in gnnbench, so numba sees one signature
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _signature(indptr: np.ndarray, indices: np.ndarray, m: int, k: int) -> str:
    """``Graph.signature()`` of the same CSR when square, so tuned entries apply to PyG runs too."""
    h = hashlib.sha256()
    if m == k:
        h.update(str((m, int(indices.shape[0]), str(indices.dtype))).encode())
    else:
        h.update(str((m, k, int(indices.shape[0]), str(indices.dtype))).encode())
    h.update(indptr.tobytes())
    h.update(indices.tobytes())
    return h.hexdigest()[:16]


def _version(adj: torch.Tensor) -> int:
    return adj._values()._version if adj.layout == torch.sparse_coo else adj._version


_CACHE: dict[int, tuple[weakref.ref, _Adjacency]] = {}
#: the last few sparsity patterns, matched by content (Note [adjacency cache])
_RECENT: collections.deque[_Structure] = collections.deque(maxlen=4)


def _adjacency(adj: torch.Tensor) -> _Adjacency:
    key = id(adj)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is adj and hit[1].version == _version(adj):
        return hit[1]
    if adj.layout == torch.sparse_csr:
        csr = adj
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyG warns on the same conversion; this one is cached
            csr = adj.coalesce().to_sparse_csr() if adj.layout == torch.sparse_coo else adj.to_sparse_csr()
    crow, col, shape = csr.crow_indices(), csr.col_indices(), tuple(csr.shape)
    structure = next((s for s in _RECENT if s.same_pattern(crow, col, shape)), None)
    if structure is None:
        structure = _Structure(crow, col, shape)
        _RECENT.append(structure)
    a = _Adjacency(structure, csr.values().detach(), _version(adj))
    _CACHE[key] = (weakref.ref(adj, lambda _r, key=key: _CACHE.pop(key, None)), a)
    return a


# ------------------------------------------------------------- the operator
class _IsplibSpMM(torch.autograd.Function):
    """``out = A x`` (or its row mean) with ``grad_x = A^T grad_out`` on the cached transpose."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, adj: _Adjacency, reduce: str) -> torch.Tensor:
        from gnnbench.systems.isplib import kernels

        x = x.detach().contiguous()
        out = torch.empty((adj.num_rows, x.shape[1]), dtype=x.dtype)
        kernels.spmm_sum(adj.forward, _heads1(x), adj.weight(x.dtype), _heads1(out),
                         reduce=reduce)
        ctx.adj, ctx.reduce = adj, reduce
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor):
        from gnnbench.systems.isplib import kernels

        adj = ctx.adj
        g = grad_out.detach().contiguous()
        grad_x = torch.empty((adj.num_cols, g.shape[1]), dtype=g.dtype)
        kernels.spmm_sum_backward(adj.backward, _heads1(g), adj.weight(g.dtype),
                                  _heads1(grad_x), reduce=ctx.reduce)
        return grad_x, None, None


def _heads1(t: torch.Tensor) -> np.ndarray:
    """A contiguous ``[N, F]`` tensor as the ``[N, 1, F]`` NumPy view the kernels take."""
    return t.numpy().reshape(t.shape[0], 1, t.shape[1])


def _handled(src: Any, other: Any, reduce: str) -> bool:
    """Whether isplib covers this call (Note [pyg patch coverage])."""
    return (isinstance(src, torch.Tensor) and src.layout in (torch.sparse_csr, torch.sparse_csc, torch.sparse_coo)
            and not src.is_cuda and not src.requires_grad and src.dim() == 2
            and isinstance(other, torch.Tensor) and other.dim() == 2 and not other.is_cuda
            and other.dtype in (torch.float32, torch.float64) and reduce in ("sum", "add", "mean")
            and other.shape[0] == src.shape[1])


def isplib_spmm(src: Any, other: torch.Tensor, reduce: str = "sum") -> torch.Tensor:
    """Drop-in for ``torch_geometric.utils.spmm``: isplib when covered, PyG otherwise.

    Args:
        src: the sparse adjacency ``[M, K]`` (rows aggregate).
        other: dense features ``[K, F]``.
        reduce: ``"sum"``/``"add"`` or ``"mean"`` run on isplib; others fall back.

    Shapes:
        returns ``[M, F]``.
    """
    if _ORIGINAL is None or not _handled(src, other, reduce):
        return (_ORIGINAL or _pyg_spmm())(src, other, reduce)
    return _IsplibSpMM.apply(other, _adjacency(src), "mean" if reduce == "mean" else "sum")


# ------------------------------------------------------------ patch / unpatch
def _pyg_spmm() -> Callable:
    from torch_geometric.utils import _spmm

    return _spmm.spmm


def patch_pyg() -> None:
    """Make PyG's convs (GCNConv, SAGEConv, GINConv, ...) aggregate sparse adjacencies with isplib.

    Rebinds ``spmm`` in ``torch_geometric.utils`` and every loaded
    ``torch_geometric`` module that imported it. Idempotent; undo with
    :func:`unpatch_pyg`.
    """
    global _ORIGINAL
    import torch_geometric.nn  # noqa: F401  (load the conv modules so they get patched)

    if _ORIGINAL is not None:
        return
    _ORIGINAL = _pyg_spmm()
    for name, module in list(sys.modules.items()):
        if (name == "torch_geometric" or name.startswith("torch_geometric.")) and \
                getattr(module, "spmm", None) is _ORIGINAL:
            setattr(module, "spmm", isplib_spmm)
            _PATCHED_MODULES.append(name)


def unpatch_pyg() -> None:
    """Restore PyG's own ``spmm`` everywhere :func:`patch_pyg` replaced it."""
    global _ORIGINAL
    if _ORIGINAL is None:
        return
    for name in _PATCHED_MODULES:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "spmm", None) is isplib_spmm:
            setattr(module, "spmm", _ORIGINAL)
    _PATCHED_MODULES.clear()
    _ORIGINAL = None
    _CACHE.clear()
    _RECENT.clear()


def is_patched() -> bool:
    return _ORIGINAL is not None


@contextlib.contextmanager
def pyg_patched() -> Iterator[None]:
    """``with isplib.pyg_patched(): ...`` patches PyG inside the block; nesting is safe."""
    was = is_patched()
    patch_pyg()
    try:
        yield
    finally:
        if not was:
            unpatch_pyg()
