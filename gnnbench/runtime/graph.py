"""Graphs as every system sees them: CSR by destination, its transpose, degrees.

A :class:`Graph` is built once per dataset and never changes. Its canonical edge
order is the CSR order by destination: edge ``e`` is position ``e`` of
``indices``, so per-edge tensors (weights, attention scores) of shape ``[E, ...]``
are laid out in that order everywhere in gnnbench.

Kernels never see a :class:`Graph`; they get a :class:`GraphView`, one orientation
of it:

* ``graph.view()`` -- rows are destinations, ``indices`` are sources, and
  ``edge_ids`` is ``None`` (position == edge id);
* ``graph.view(transposed=True)`` -- rows are sources, ``indices`` are
  destinations, and ``edge_ids[p]`` is the canonical id of the edge stored at
  position ``p``, so a kernel reads per-edge data as ``w[edge_ids[p]]``.

Note [blocks]
    A *block* (a sampled layer, as DGL's blocks and PyG's relabelled
    subgraphs) has ``N = num_dst`` destination rows and ``S = num_src >= N``
    source columns; destination ``i`` is source ``i`` (the destinations are a
    prefix of the sources). Its forward view has ``num_rows == N`` and
    ``num_cols == S``, so ``x`` is ``[S, ...]`` and ``out`` is ``[N, ...]``;
    its transposed view has ``num_rows == S`` and ``num_cols == N``, so the
    gradient with respect to ``x`` is ``[S, ...]``. ``in_degree`` is ``[N]``
    and ``out_degree`` is ``[S]``. A square graph is the block with ``S == N``.

Note [bipartite relations]
    A relation of a heterogeneous graph (paper -> author) joins two node sets
    that share no ids: ``S`` sources of one type and ``N`` destinations of
    another, either may be larger, and no destination is a source. It is a
    :class:`Graph` built with ``bipartite=True``: the same CSR by destination,
    the same views, so every kernel (which reads only ``num_rows`` and
    ``num_cols`` of its view) runs on it unchanged. What assumes the block's
    prefix does not apply: ``is_block`` is False (no ``x[:N]`` slice of the
    destinations, Note [layers on blocks] in models/base.py) and
    :meth:`Graph.with_self_loops` refuses, since a destination has no source
    of its own id. :mod:`gnnbench.runtime.hetero` holds the typed graph whose
    relations these are.

Note [message direction]
    ``out[i] = reduce_{e=(j->i)} w[e] * x[j]``: a row of the forward view
    aggregates over the in-edges of node ``i``. The backward pass with respect
    to ``x`` runs the same loop on the transposed view.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Graph", "GraphView", "GraphError"]


class GraphError(ValueError):
    """An edge list that cannot form a graph (index out of range, bad shape)."""


@dataclass(frozen=True, eq=False)
class GraphView:
    """One orientation of a :class:`Graph`, as NumPy arrays (read-only views).

    Attributes:
        indptr: ``[num_rows + 1]`` row offsets.
        indices: ``[num_edges]`` column node of each stored edge.
        edge_ids: ``[num_edges]`` canonical edge id of each stored position, or
            ``None`` when positions are the canonical order (forward view).
        row_degree: ``[num_rows]`` entries per row, as float32 and never zero
            clipped; ``row_degree[i] == indptr[i+1] - indptr[i]``.
        col_degree: ``[num_cols]`` entries per column.
        transposed: whether rows are sources (backward pass).
        prepared: what the system's ``prepare`` step built for this
            orientation, or ``None``.
    """

    indptr: np.ndarray
    indices: np.ndarray
    edge_ids: np.ndarray | None
    row_degree: np.ndarray
    col_degree: np.ndarray
    num_rows: int
    num_cols: int
    transposed: bool
    graph: "Graph" = field(repr=False)
    prepared: Any = None

    @property
    def num_edges(self) -> int:
        return int(self.indices.shape[0])

    @property
    def index_dtype(self) -> np.dtype:
        return self.indices.dtype

    def with_prepared(self, prepared: Any) -> "GraphView":
        return GraphView(self.indptr, self.indices, self.edge_ids, self.row_degree,
                         self.col_degree, self.num_rows, self.num_cols, self.transposed,
                         self.graph, prepared)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


class Graph:
    """A directed graph of ``num_nodes`` nodes in CSR-by-destination form, or a block.

    Build it with :meth:`from_edges`. Undirected datasets store both directions.

    Args:
        indptr: ``[N + 1]`` offsets of each destination's in-edges.
        indices: ``[E]`` source node of each edge, in ``[0, S)``.
        num_nodes: ``N``, the destination rows.
        num_src: ``S``, the source columns (default: ``N``); a block
            (Note [blocks]) has ``S >= N``.
        bipartite: sources and destinations are different node sets, so any
            ``S`` is allowed (Note [bipartite relations]).

    The transpose (CSR by source) and degrees are computed once, lazily.
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, num_nodes: int, *,
                 num_src: int | None = None, bipartite: bool = False):
        index_dtype = np.dtype(indices.dtype)
        if index_dtype not in (np.int32, np.int64):
            raise GraphError(f"graph indices must be int32 or int64 (got {index_dtype})")
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        indices = np.ascontiguousarray(indices)
        if indptr.shape != (num_nodes + 1,) or indptr[0] != 0 or indptr[-1] != indices.shape[0]:
            raise GraphError(f"indptr must have shape ({num_nodes + 1},), start at 0 and end at "
                             f"E={indices.shape[0]} (got shape {indptr.shape})")
        if np.any(np.diff(indptr) < 0):
            raise GraphError("indptr must be non-decreasing")
        num_src = int(num_nodes) if num_src is None else int(num_src)
        if num_src < num_nodes and not bipartite:
            raise GraphError(f"a block's sources include its destinations, so num_src must be at least "
                             f"num_nodes={num_nodes} (got num_src={num_src})")
        if indices.size and (indices.min() < 0 or indices.max() >= num_src):
            raise GraphError(f"edge endpoints must lie in [0, {num_src}) "
                             f"(got range [{indices.min()}, {indices.max()}])")
        if index_dtype == np.int32 and indices.shape[0] >= 2**31:
            raise GraphError("more than 2^31 edges need int64 indices")
        self.num_nodes = int(num_nodes)
        self._num_src = num_src
        self.bipartite = bool(bipartite)
        self.indptr = _readonly(indptr.astype(index_dtype) if index_dtype == np.int32 else indptr)
        self.indices = _readonly(indices)
        self._cache: dict[str, Any] = {}

    # ----------------------------------------------------------------- builders
    @classmethod
    def from_edges(cls, src: np.ndarray, dst: np.ndarray, num_nodes: int,
                   index_dtype: Any = np.int64, *, num_src: int | None = None,
                   bipartite: bool = False) -> "Graph":
        """Build from parallel source/destination arrays (duplicates kept).

        Edges are sorted by destination, then source, so the result does not
        depend on the order of the input. ``dst`` lies in ``[0, num_nodes)`` and
        ``src`` in ``[0, num_src)`` (default ``num_nodes``; Note [blocks]).
        """
        src = np.asarray(src).astype(np.int64, copy=False).ravel()
        dst = np.asarray(dst).astype(np.int64, copy=False).ravel()
        if src.shape != dst.shape:
            raise GraphError(f"src and dst must have the same length (got {src.shape[0]} and {dst.shape[0]})")
        num_cols = num_nodes if num_src is None else num_src
        for name, arr, n in (("src", src, num_cols), ("dst", dst, num_nodes)):
            if arr.size and (arr.min() < 0 or arr.max() >= n):
                raise GraphError(f"{name} node ids must lie in [0, {n}) "
                                 f"(got range [{arr.min()}, {arr.max()}])")
        order = np.lexsort((src, dst))
        counts = np.bincount(dst, minlength=num_nodes)
        indptr = np.zeros(num_nodes + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(indptr, src[order].astype(index_dtype), num_nodes, num_src=num_src, bipartite=bipartite)

    def to_index_dtype(self, index_dtype: Any) -> "Graph":
        if np.dtype(index_dtype) == self.index_dtype:
            return self
        return Graph(self.indptr.astype(np.int64), self.indices.astype(index_dtype), self.num_nodes,
                     num_src=self.num_src, bipartite=self.bipartite)

    def with_self_loops(self) -> "Graph":
        """This graph plus one self loop on every node that lacks one (cached).

        On a block, every destination ``i`` gets ``i -> i`` (destination ``i``
        is source ``i``, Note [blocks]); sources past the destinations get none.
        """
        if self.bipartite:
            raise GraphError("a bipartite relation has no self loops: its destinations are not among its sources "
                             "(Note [bipartite relations])")
        if "self_loops" not in self._cache:
            from gnnbench.runtime.csr_loops import add_self_loops  # Note [self loops in one pass]

            indptr, indices = add_self_loops(self.indptr, self.indices, self.num_nodes)
            g = Graph(indptr, indices, self.num_nodes, num_src=self.num_src)
            g._cache["self_loops"] = g
            self._cache["self_loops"] = g
        return self._cache["self_loops"]

    # ---------------------------------------------------------------- accessors
    @property
    def num_edges(self) -> int:
        return int(self.indices.shape[0])

    @property
    def num_src(self) -> int:
        """``S``: the source columns (``num_nodes`` unless this is a block)."""
        return self._num_src

    @property
    def num_dst(self) -> int:
        """``N``: the destination rows, ``num_nodes``."""
        return self.num_nodes

    @property
    def is_block(self) -> bool:
        """Whether this is a sampled block: sources and destinations differ in number, the destinations a
        prefix of the sources (Note [blocks]); a bipartite relation is not (Note [bipartite relations])."""
        return self._num_src != self.num_nodes and not self.bipartite

    @property
    def index_dtype(self) -> np.dtype:
        return self.indices.dtype

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """``(src, dst)`` as int64 arrays in canonical edge order."""
        dst = np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(self.indptr.astype(np.int64)))
        return self.indices.astype(np.int64), dst

    @property
    def in_degree(self) -> np.ndarray:
        if "in_degree" not in self._cache:
            self._cache["in_degree"] = _readonly(np.diff(self.indptr.astype(np.int64)).astype(np.float32))
        return self._cache["in_degree"]

    @property
    def out_degree(self) -> np.ndarray:
        if "out_degree" not in self._cache:
            from gnnbench.runtime.csr_transpose import column_counts  # Note [parallel transpose]

            if "transpose" in self._cache:  # the transpose's row lengths are the out-degrees
                counts = np.diff(self._cache["transpose"][0].astype(np.int64))
            else:
                counts = column_counts(self.indices, self.num_src)
            self._cache["out_degree"] = _readonly(counts.astype(np.float32))
        return self._cache["out_degree"]

    def gcn_norm(self) -> np.ndarray:
        """Per-edge ``1 / sqrt(deg_in(i) * deg_out(j))`` for edge ``j -> i``, float32 ``[E]``.

        On a symmetric graph with self loops this is Kipf & Welling's
        ``D^-1/2 (A + I) D^-1/2``.
        """
        if "gcn_norm" not in self._cache:
            # in chunks of rows, so no E-long temporaries (Note [linear transpose]); the same float32 ops
            din, dout = self.in_degree, self.out_degree
            indptr = self.indptr.astype(np.int64)
            w = np.empty(self.num_edges, dtype=np.float32)
            step = max(1, (1 << 20) * self.num_nodes // max(self.num_edges, 1))
            for r0 in range(0, self.num_nodes, step):
                r1 = min(self.num_nodes, r0 + step)
                a, b = indptr[r0], indptr[r1]
                dst = np.repeat(np.arange(r0, r1, dtype=np.int64), np.diff(indptr[r0:r1 + 1]))
                w[a:b] = 1.0 / np.sqrt(np.maximum(din[dst], 1.0) * np.maximum(dout[self.indices[a:b]], 1.0))
            self._cache["gcn_norm"] = _readonly(w)
        return self._cache["gcn_norm"]

    def gcn_scales(self) -> tuple[np.ndarray, np.ndarray]:
        """GCN's normalisation as node scales: ``(1 / sqrt(deg_in), 1 / sqrt(deg_out))``, float32 ``[N]`` and ``[S]``.

        ``gcn_norm()[e] == dst_scale[dst(e)] * src_scale[src(e)]`` up to float32
        rounding: the same degrees, each clamped to at least 1 as ``gcn_norm``
        does, so ``D_in^-1/2 A D_out^-1/2 X`` can be computed as
        ``dst_scale * spmm(A, src_scale * X)`` with no per-edge weight
        (Note [GCN as node scales] in models/gcn.py).
        """
        if "gcn_scales" not in self._cache:
            # N- and S-long, so no chunking is needed (gcn_norm chunks because it is E-long)
            dst_scale = (1.0 / np.sqrt(np.maximum(self.in_degree, np.float32(1.0)))).astype(np.float32)
            src_scale = (1.0 / np.sqrt(np.maximum(self.out_degree, np.float32(1.0)))).astype(np.float32)
            self._cache["gcn_scales"] = (_readonly(dst_scale), _readonly(src_scale))
        return self._cache["gcn_scales"]

    def _transpose(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if "transpose" not in self._cache:
            from gnnbench.runtime.csr_transpose import transpose_csr  # Note [linear transpose]

            indptr_t, indices_t, edge_ids = transpose_csr(self.indptr, self.indices, self.num_nodes,
                                                          num_cols=self.num_src)
            self._cache["transpose"] = (_readonly(indptr_t), _readonly(indices_t), _readonly(edge_ids))
        return self._cache["transpose"]

    def view(self, transposed: bool = False) -> GraphView:
        """The forward (by destination) or transposed (by source) orientation.

        Forward: ``num_rows == N``, ``num_cols == S``; transposed: ``num_rows
        == S``, ``num_cols == N`` (Note [blocks]).
        """
        key = "view_t" if transposed else "view"
        if key not in self._cache:
            if transposed:
                indptr, indices, edge_ids = self._transpose()
                v = GraphView(indptr, indices, edge_ids, self.out_degree, self.in_degree,
                              self.num_src, self.num_nodes, True, self)
            else:
                v = GraphView(self.indptr, self.indices, None, self.in_degree, self.out_degree,
                              self.num_nodes, self.num_src, False, self)
            self._cache[key] = v
        return self._cache[key]

    def signature(self) -> str:
        """A short content hash: equal graphs have equal signatures (tuning caches key on it)."""
        if "signature" not in self._cache:
            h = hashlib.sha256()
            h.update(str((self.num_nodes, self.num_edges, str(self.index_dtype))).encode())
            if self.is_block:  # a square graph's signature is unchanged, so tuning caches stay valid
                h.update(f"num_src={self.num_src}".encode())
            elif self.bipartite:
                h.update(f"bipartite num_src={self.num_src}".encode())
            h.update(self.indptr.tobytes())
            h.update(self.indices.tobytes())
            self._cache["signature"] = h.hexdigest()[:16]
        return self._cache["signature"]

    def __repr__(self) -> str:
        block = f", num_src={self.num_src}" if self.is_block else (
            f", num_src={self.num_src}, bipartite" if self.bipartite else "")
        return f"Graph(num_nodes={self.num_nodes}{block}, num_edges={self.num_edges}, index_dtype={self.index_dtype})"
