"""Typed (heterogeneous) graphs: node types, relations, each relation a bipartite view.

A :class:`HeteroGraph` has node types, each with a count, and relations ``(source type, name, destination
type)``. Each relation is a :class:`~gnnbench.runtime.graph.Graph` built ``bipartite=True`` (Note [bipartite
relations] in gnnbench/runtime/graph.py): ``N`` rows, the destination type's nodes, and ``S`` columns, the
source type's, either may be larger. Every existing operator (spmm, sddmm, edge_softmax, gat_aggregate) runs on
a relation's views unchanged, which is how every system runs relational models from day one
(Note [relations on the existing operators]).

Note [relations on the existing operators]
    A relational layer is a sum over relations of an ordinary aggregation on
    that relation's bipartite view: R-GCN's ``mean_{j in N_r(i)} x_j W_r`` is
    ``spmm(reduce=mean)`` on relation ``r``, R-GAT's per-relation attention is
    ``gat_aggregate`` on it. So a relational model needs no operator a system
    lacks. The cost is one kernel call (and one dense transform) per relation
    per layer, which is what fused relational kernels (Hector, Seastar, DGL's
    ``segment_mm``) remove; the typed operator is the place such a system
    plugs in.

Note [homogeneous form]
    Typed kernels (PyG's ``RGCNConv``, DGL's ``RelGraphConv``) take the graph
    as one homogeneous graph: node types laid out one after the other in
    declaration order (type ``t`` owns ids ``offsets[t] .. offsets[t+1]``),
    each edge carrying its relation's index. :meth:`HeteroGraph.homogeneous`
    builds it once: the graph by destination over all nodes, ``node_type``
    ``[N_total]`` and ``edge_type`` ``[E_total]`` in its canonical edge order.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from gnnbench.errors import UserError
from gnnbench.runtime.graph import Graph

__all__ = ["Relation", "HeteroGraph", "HomogeneousForm", "BoundHeteroGraph"]


@dataclass(frozen=True)
class Relation:
    """A relation's name and the node types it joins: edges go from ``src`` nodes to ``dst`` nodes."""

    src: str
    name: str
    dst: str

    def __str__(self) -> str:
        return f"{self.src}-{self.name}->{self.dst}"


@dataclass(frozen=True, eq=False)
class HomogeneousForm:
    """A typed graph as one graph (Note [homogeneous form]).

    Attributes:
        graph: every relation's edges, by destination over all ``N_total`` nodes.
        node_type: ``[N_total]`` int64, each node's type index.
        edge_type: ``[E_total]`` int64, each edge's relation index, in ``graph``'s canonical order.
        offsets: ``[types + 1]`` first id of each type, then ``N_total``.
    """

    graph: Graph
    node_type: np.ndarray
    edge_type: np.ndarray
    offsets: np.ndarray

    def node_range(self, type_index: int) -> tuple[int, int]:
        return int(self.offsets[type_index]), int(self.offsets[type_index + 1])


class HeteroGraph:
    """Node types with counts and relations, each a bipartite :class:`Graph` of ``counts[dst]`` rows and
    ``counts[src]`` columns.

    Args:
        node_counts: node type -> its number of nodes, in a fixed order (the homogeneous form's).
        relations: the relations, in a fixed order (their indices in the homogeneous form).
        graphs: one bipartite graph per relation.

    Raises:
        UserError: a type with no nodes, a relation naming an unknown type, a repeated relation, or a relation
            graph whose shape is not its types' counts (one line each).
    """

    def __init__(self, node_counts: Mapping[str, int], relations: Sequence[Relation], graphs: Sequence[Graph]):
        self.node_counts = {str(t): int(n) for t, n in node_counts.items()}
        self.relations = tuple(relations)
        for t, n in self.node_counts.items():
            if n <= 0:
                raise UserError(f"node type '{t}' has no nodes; every node type needs at least one")
        for r in self.relations:
            for end in (r.src, r.dst):
                if end not in self.node_counts:
                    raise UserError(f"relation '{r}' names node type '{end}', which the graph does not have; "
                                    f"its node types: {', '.join(self.node_counts)}")
        keys = [str(r) for r in self.relations]
        if len(set(keys)) != len(keys):
            twice = next(k for k in keys if keys.count(k) > 1)
            raise UserError(f"relation '{twice}' is given twice; name each relation once")
        if len(graphs) != len(self.relations):
            raise UserError(f"{len(self.relations)} relations but {len(graphs)} relation graphs")
        for r, g in zip(self.relations, graphs):
            want = (self.node_counts[r.dst], self.node_counts[r.src])
            if (g.num_dst, g.num_src) != want:
                raise UserError(f"relation '{r}' has {g.num_dst} destination rows and {g.num_src} source columns, "
                                f"but its types have {want[0]} and {want[1]} nodes")
        self.graphs = tuple(graphs)
        self._cache: dict[str, Any] = {}

    @classmethod
    def from_edges(cls, node_counts: Mapping[str, int], edges: Mapping[Relation, tuple[np.ndarray, np.ndarray]],
                   index_dtype: Any = np.int64) -> "HeteroGraph":
        """Build from each relation's ``(src, dst)`` arrays, local ids of its types (duplicates kept)."""
        counts = {str(t): int(n) for t, n in node_counts.items()}
        graphs = []
        for r, (src, dst) in edges.items():
            for end in (r.src, r.dst):  # the constructor says it too, but the counts are needed here first
                if end not in counts:
                    raise UserError(f"relation '{r}' names node type '{end}', which the graph does not have; "
                                    f"its node types: {', '.join(counts)}")
            graphs.append(Graph.from_edges(src, dst, counts[r.dst], index_dtype, num_src=counts[r.src],
                                           bipartite=True))
        return cls(counts, list(edges), graphs)

    # ---------------------------------------------------------------- accessors
    @property
    def node_types(self) -> tuple[str, ...]:
        return tuple(self.node_counts)

    @property
    def num_nodes(self) -> int:
        return sum(self.node_counts.values())

    @property
    def num_edges(self) -> int:
        return sum(g.num_edges for g in self.graphs)

    @property
    def index_dtype(self) -> np.dtype:
        return self.graphs[0].index_dtype if self.graphs else np.dtype(np.int64)

    def relations_into(self, node_type: str) -> list[int]:
        """Indices of the relations whose destination is ``node_type``."""
        return [i for i, r in enumerate(self.relations) if r.dst == node_type]

    def with_self_loops(self) -> "HeteroGraph":
        """Itself: a relational model adds its self-connection as a dense term (Note [bipartite relations])."""
        return self

    def to_index_dtype(self, index_dtype: Any) -> "HeteroGraph":
        if np.dtype(index_dtype) == self.index_dtype:
            return self
        return HeteroGraph(self.node_counts, self.relations, [g.to_index_dtype(index_dtype) for g in self.graphs])

    def homogeneous(self) -> HomogeneousForm:
        """The graph in homogeneous form (Note [homogeneous form]), built once."""
        if "homogeneous" not in self._cache:
            types = list(self.node_counts)
            offsets = np.zeros(len(types) + 1, dtype=np.int64)
            np.cumsum([self.node_counts[t] for t in types], out=offsets[1:])
            start = {t: int(offsets[i]) for i, t in enumerate(types)}
            srcs, dsts, rels = [], [], []
            for i, (r, g) in enumerate(zip(self.relations, self.graphs)):
                src, dst = g.edges()
                srcs.append(src + start[r.src])
                dsts.append(dst + start[r.dst])
                rels.append(np.full(src.shape[0], i, dtype=np.int64))
            src, dst, rel = (np.concatenate(a) if a else np.zeros(0, np.int64) for a in (srcs, dsts, rels))
            order = np.lexsort((src, rel, dst))  # by destination, then relation, then source
            total = int(offsets[-1])
            counts = np.bincount(dst, minlength=total)
            indptr = np.zeros(total + 1, dtype=np.int64)
            np.cumsum(counts, out=indptr[1:])
            graph = Graph(indptr, src[order].astype(self.index_dtype), total)
            node_type = np.repeat(np.arange(len(types), dtype=np.int64), np.diff(offsets))
            self._cache["homogeneous"] = HomogeneousForm(graph, node_type, rel[order], offsets)
        return self._cache["homogeneous"]

    def signature(self) -> str:
        if "signature" not in self._cache:
            h = hashlib.sha256(repr(sorted(self.node_counts.items())).encode())
            for r, g in zip(self.relations, self.graphs):
                h.update(f"{r}:{g.signature()}".encode())
            self._cache["signature"] = h.hexdigest()[:16]
        return self._cache["signature"]

    def describe(self) -> dict[str, Any]:
        """Node types with counts and relations with edge counts, for tables and ``--json``."""
        return {"node_types": dict(self.node_counts),
                "relations": [{"relation": str(r), "edges": g.num_edges} for r, g in zip(self.relations, self.graphs)]}

    def __repr__(self) -> str:
        return (f"HeteroGraph({len(self.node_counts)} node types, {len(self.relations)} relations, "
                f"{self.num_nodes} nodes, {self.num_edges} edges)")


class BoundHeteroGraph:
    """A typed graph bound to one system: one :class:`~gnnbench.runtime.glue.BoundGraph` per relation.

    Models take a relation's bound graph with :meth:`relation` and call the operators on it, as on any graph.
    A sampled typed block (:meth:`of_block`) binds only the relations that run on it (``None`` for the others,
    Note [typed layers on blocks] in models/typed.py).
    """

    def __init__(self, graph: HeteroGraph, system, bind=None, runs=None):
        from gnnbench.runtime.glue import BoundGraph

        bind = bind or (lambda g: BoundGraph(g, system))
        self.graph, self.system = graph, system
        self.relations = [bind(g) if runs is None or runs(k) else None for k, g in enumerate(graph.graphs)]
        self._bound = [b for b in self.relations if b is not None]
        self.block = runs is not None  # a sampled block: its relations are bipartite, it has no homogeneous form here
        self.tensors: dict[str, Any] = {}
        self._bind, self._homogeneous = bind, None

    def homogeneous(self):
        """The homogeneous form (Note [homogeneous form]) bound to the system, bound on first use (by a model
        that calls ``typed_aggregate``, Note [R-GCN on the typed operator] in models/rgcn.py); its preparation
        counts in :attr:`prepare_time_s` once it exists."""
        if self._homogeneous is None:
            self._homogeneous = self._bind(self.graph.homogeneous().graph)
        return self._homogeneous

    @property
    def bound_graphs(self) -> list:
        """Every bound graph: the relations' that run (on a block, only those: Note [typed layers on blocks]), and
        the homogeneous form's once a model has used it."""
        return self._bound + ([self._homogeneous] if self._homogeneous is not None else [])

    @classmethod
    def of_block(cls, block, system) -> "BoundHeteroGraph":
        """A sampled typed block (:class:`~gnnbench.sampling.hetero.HeteroBlock`) bound to ``system``."""
        return cls(block, system, runs=block.runs)

    @property
    def borrowed(self) -> set[str]:
        """The operators that ran on a fallback, over every relation (Note [fallback accounting])."""
        return set().union(*(getattr(b, "borrowed", set()) for b in self.bound_graphs))

    @property
    def lent(self):
        """The fallback's side, over every relation (Note [fallback accounting]); None without a fallback."""
        lent = [b.lent for b in self.bound_graphs if getattr(b, "lent", None) is not None]
        return _LentRelations(lent) if lent else None

    def relation(self, index: int):
        return self.relations[index]

    @property
    def prepare_time_s(self) -> float:
        return sum(b.prepare_time_s for b in self.bound_graphs)

    def prepare(self) -> float:
        for b in self.bound_graphs:
            b.prepare()
        return self.prepare_time_s


class _LentRelations:
    """A fallback's bound graphs of every relation, as :func:`~gnnbench.runtime.fallback.fallback_summary` reads
    one: its system, and its preparation summed over the relations."""

    def __init__(self, lent: list):
        self.system = lent[0].system
        self._lent = lent

    @property
    def prepare_time_s(self) -> float:
        return sum(b.prepare_time_s for b in self._lent)
