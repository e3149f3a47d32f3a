"""The layer loop of relational models on typed graphs, shared by R-GCN and R-GAT.

A typed model reads a :class:`Schema` (node types with feature widths, relations, the target type) instead of
one input width, takes features per node type (a dict), and runs each relation's aggregation on that relation's
bound bipartite graph (Note [relations on the existing operators] in gnnbench/runtime/hetero.py). Its logits are
the target type's.

Note [typed and homogeneous models]
    A homogeneous model (GCN, GAT, GIN, SAGE) on a typed dataset, or a typed model on a homogeneous one, is
    refused before any worker starts (``models.check_typed``), in one line naming the models that fit: a typed
    graph has no one adjacency matrix for GCN to normalise, and a homogeneous one no relations.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import GNN

__all__ = ["Schema", "TypedGNN", "destinations"]


def destinations(graph, node_type: str, x):
    """The rows of ``x`` (a node type's features) that are that type's destinations in ``graph``: every row on a
    typed graph, the first ``num_dst`` on a typed block, None when the block has no destination of that type.

    Note [typed layers on blocks]
        On a sampled typed block (:class:`~gnnbench.sampling.hetero.HeteroBlock`, Note [fan-out per relation])
        each node type has ``num_src`` sources, the first ``num_dst`` of which are its destinations, and each
        relation is a bipartite graph of its destination type's ``num_dst`` rows by its source type's
        ``num_src`` columns. A layer takes ``[num_src, F]`` per type and gives ``[num_dst, F']`` for each type
        that has destinations, as Note [layers on blocks] says of one type: aggregation reads a relation's
        source type's rows, a destination's own terms (R-GCN's self-connection, R-GAT's destination score)
        read the first ``num_dst`` rows of its type. A relation whose destination type has no destination in
        the block runs nothing; one whose source type has no source gives what the full graph gives a node
        without edges of that relation (R-GCN's empty mean: nothing; R-GAT's: the relation's bias). So with
        every neighbour taken (fan-outs -1) the seeds' logits equal the full graph's.
    """
    counts = getattr(getattr(graph, "graph", graph), "num_dst", None)
    if not isinstance(counts, dict):
        return x
    n = counts.get(node_type, 0)
    return x[:n] if n else None


@dataclass(frozen=True)
class Schema:
    """What a typed model is built from: each node type's feature width, the relations, the target type."""

    widths: dict[str, int]
    relations: tuple  # of gnnbench.runtime.hetero.Relation
    target: str

    @classmethod
    def of(cls, dataset) -> "Schema":
        return cls(dataset.feature_widths(), dataset.graph.relations, dataset.target)

    def relations_into(self, node_type: str, present=None) -> list[int]:
        """The relations into ``node_type`` whose source type is ``present`` (default: every type)."""
        return [k for k, r in enumerate(self.relations)
                if r.dst == node_type and (present is None or r.src in present)]


class TypedGNN(GNN):
    """A relational model: convolutions map features per node type to features per node type.

    A convolution's ``forward(F, p, graph, x)`` takes the bound typed graph
    (:class:`~gnnbench.runtime.hetero.BoundHeteroGraph`) and a dict node type -> ``[count, width]`` tensor, and
    returns such a dict (a type no relation reaches may be absent). :attr:`dense` is
    ``dense(T, A, x, p, index) -> x'`` with ``A`` relation index -> dense ``[N_dst, N_src]`` edge counts and
    ``x`` a dict, on float64 torch tensors.
    """

    typed = True
    #: dropout on the features before the first convolution too (GNN's rule); False: between layers only
    input_dropout = True

    def __init__(self, schema: Schema, out_dim: int, hyper=None):
        self.schema = schema
        super().__init__(schema.widths[schema.target], out_dim, hyper)

    @classmethod
    def for_dataset(cls, dataset, hyper) -> "TypedGNN":
        return cls(Schema.of(dataset), dataset.num_classes, hyper)

    def features(self, F, dataset) -> dict[str, Any]:
        return {t: F.tensor(f) for t, f in dataset.type_features.items()}

    def forward(self, F, params: dict[str, Any], graph, x, training: bool):
        """Logits ``[count(target), classes]`` of the target type; ``graph`` is one bound typed graph, or a list
        of bound typed blocks, layer ``i`` on block ``i`` (Note [typed layers on blocks])."""
        last = len(self.convs) - 1
        blocks = graph if isinstance(graph, (list, tuple)) else None
        for i, conv in enumerate(self.convs):
            if i or self.input_dropout:
                x = {t: F.dropout(v, self.hyper.dropout, training) for t, v in x.items()}
            p = {name: params[f"conv{i}.{name}"] for name in conv.params}
            x = conv.forward(F, p, graph if blocks is None else blocks[i], x)
            if i < last:
                x = {t: self.activation(F, v) for t, v in x.items()}
        return self.output(F, params, x)

    def output(self, F, params: dict[str, Any], x: dict[str, Any]):
        """The logits from the last convolution's output (default: the target type's rows)."""
        return x[self.schema.target]
