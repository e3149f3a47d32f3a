"""Neighbour sampling of typed graphs: per-layer fan-outs applied per relation, one block per relation (issue 58).

A batch's seeds are nodes of the target type. The sampler walks inwards-out as
:class:`~gnnbench.sampling.neighbor.NeighborSampler` does: the seeds are the
destinations of the last layer; at each layer, every relation whose destination
type has destinations draws each destination's in-neighbours of that relation
(Note [fan-out per relation]); the sources of each node type are its
destinations followed by every newly reached node of that type, in relation
order, then edge order; those sources are the next layer's destinations. A
layer is a :class:`HeteroBlock`: per node type ``num_dst`` and ``num_src``
(the destinations a prefix of the sources, as on a homogeneous block), and
per relation a bipartite :class:`~gnnbench.runtime.graph.Graph` of
``num_dst[relation.dst]`` rows and ``num_src[relation.src]`` columns. Layer
``l`` of a relational model runs on block ``l`` (Note [typed layers on
blocks] in models/typed.py).

Note [fan-out per relation]
    A fan-out ``f`` at a layer draws up to ``f`` in-neighbours of each
    destination *in each relation into its type*, uniformly without
    replacement within that relation (Note [without replacement]): a paper
    with edges in three relations into it gets up to ``3 f`` sources at that
    layer. This is MLPerf's reference: its sampler (graphlearn-for-pytorch's
    ``NeighborSampler``, like PyG's hetero ``NeighborSampler``) takes
    ``num_neighbors`` as a list, which it applies to every edge type (a dict
    per edge type is its other form). The alternative, ``f`` per destination
    drawn over the union of its relations, lets a dense relation (paper cites
    paper) crowd a sparse one (paper written by author) out of the sample in
    proportion to their degrees, and R-GAT's per-relation softmax would then
    normalise over a sample whose size depends on the other relations. Per
    relation, each relation's attention sees a sample of its own neighbours,
    of the same size whatever the other relations hold.

    The blocks are per layer, as gnnbench's homogeneous blocks and DGL's
    are: a destination draws its own in-neighbours again at every layer it is
    a destination of. PyG's loader (MLPerf's reference on it) returns one
    subgraph whose edges every layer reuses, so there a node keeps the draw
    of the hop that first reached it; the fan-outs and the per-relation rule
    are the same, the draws differ. The per-layer form is the one every
    system here runs, on the same blocks (Note [layers on blocks]).

    One list of fan-outs (``--fanouts``) serves every relation, as MLPerf's
    list does. Its other form, a fan-out list per edge type, is
    ``--relation-fanout RELATION=F,F`` (repeatable): the named relations
    draw their own counts, the others ``--fanouts``'. A relation is named as
    ``gnnbench datasets`` lists it, by its name (``cites``) when no other
    relation shares it, or whole (``paper-cites->paper``); a name the
    dataset lacks, or a list of another length than the model's layers, is
    refused in one line before any worker starts
    (:func:`fanouts_per_relation`), so a misspelt relation never silently
    samples with the default.

Note [typed sampling determinism]
    As Note [sampling determinism]: the epoch's seed batches are
    :func:`~gnnbench.sampling.neighbor.epoch_batches`' (the homogeneous
    sampler's, from the same seed), and destination ``i`` of relation ``k``
    at layer ``l`` of batch ``b`` draws from its own stream keyed by
    ``(seed, epoch, b, l, k, i)``; relabelling runs serially in relation
    order, then edge order. Same seed, same blocks, for every system.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numba import njit

from gnnbench.sampling.neighbor import SeedBatches, _counts, _draw, check_fanouts

__all__ = ["HeteroBlock", "HeteroSampledBatch", "HeteroSampler", "HeteroNeighborSampler", "fanouts_per_relation"]


@dataclass(frozen=True, eq=False)
class HeteroBlock:
    """One sampled layer of a typed graph (see the module's docstring).

    Attributes:
        num_dst, num_src: node type -> its destinations and sources in this layer (destinations a prefix).
        relations: the typed graph's relations, in its order.
        graphs: one bipartite graph per relation, ``num_dst[r.dst]`` rows by ``num_src[r.src]`` columns.
    """

    num_dst: dict[str, int]
    num_src: dict[str, int]
    relations: tuple
    graphs: tuple

    @property
    def num_edges(self) -> int:
        return sum(g.num_edges for g in self.graphs)

    def runs(self, index: int) -> bool:
        """Whether relation ``index`` has anything to aggregate here: destinations and sources of its types."""
        r = self.relations[index]
        return self.num_dst[r.dst] > 0 and self.num_src[r.src] > 0


@dataclass(eq=False)
class HeteroSampledBatch:
    """One mini-batch of a typed graph: ``blocks`` outermost first, ``input_nodes`` (node type -> ids of the first
    block's sources) and ``seeds`` (ids of the target type's nodes the loss is taken on)."""

    blocks: list[HeteroBlock]
    input_nodes: dict[str, np.ndarray]
    seeds: np.ndarray

    @property
    def num_edges(self) -> int:
        return sum(b.num_edges for b in self.blocks)

    def graphs(self, self_loops: bool = False) -> list[HeteroBlock]:
        """The blocks (a relational model adds its self-connection as a dense term: no self loops)."""
        return self.blocks

    def gather(self, F, features: dict[str, np.ndarray]) -> dict[str, Any]:
        """The input nodes' features per node type as framework tensors (types with no input node left out)."""
        return {t: F.tensor(features[t][ids]) for t, ids in self.input_nodes.items() if ids.shape[0]}


@njit(cache=True)
def _relabel_more(picked, local, local_of, start):
    """Local ids of ``picked`` (global ids of one node type) in a numbering already holding ``start`` nodes:
    known nodes keep theirs, new ones get ``start, start + 1, ...`` in edge order (``local_of`` updated).
    Returns the new nodes' global ids."""
    extra = np.empty(picked.shape[0], dtype=np.int64)
    m = 0
    for e in range(picked.shape[0]):
        u = picked[e]
        q = local_of[u]
        if q < 0:
            q = start + m
            local_of[u] = q
            extra[m] = u
            m += 1
        local[e] = q
    return extra[:m]


def fanouts_per_relation(relations: Sequence, fanouts: Sequence[int],
                         named: Sequence[tuple[str, Sequence[int]]] = (), dataset: str = "the dataset"
                         ) -> tuple[tuple[int, ...], ...]:
    """Each relation's fanouts, in ``relations``' order: ``named``'s for a relation it names, else ``fanouts``
    (Note [fan-out per relation]).

    Raises:
        UserError: a name that is no relation of ``dataset``, or one name shared by several (give it whole), or
            a list of another length than ``fanouts`` (one line, listing the relations).
    """
    from gnnbench.errors import UserError

    fanouts = check_fanouts(fanouts)
    chosen: dict[int, tuple[int, ...]] = {}
    for name, given in named:
        matches = [k for k, r in enumerate(relations) if name in (str(r), r.name)]
        shown = ", ".join(str(r) for r in relations)
        if not matches:
            raise UserError(f"--relation-fanout {name}: '{dataset}' has no relation '{name}'; its relations: {shown}")
        if len(matches) > 1:
            raise UserError(f"--relation-fanout {name}: {len(matches)} relations of '{dataset}' are named '{name}' "
                            f"({', '.join(str(relations[k]) for k in matches)}); name one whole, e.g. "
                            f"{relations[matches[0]]}")
        if len(given) != len(fanouts):
            raise UserError(f"--relation-fanout {name}={','.join(map(str, given))} gives {len(given)} fanout(s) "
                            f"where --fanouts gives {len(fanouts)}: give one per layer, outermost first")
        chosen[matches[0]] = check_fanouts(given)
    return tuple(chosen.get(k, fanouts) for k in range(len(relations)))


class HeteroSampler(SeedBatches):
    """What every sampler of typed graphs (``--sampler``) shares, as :class:`~gnnbench.sampling.neighbor.Sampler`
    does for one type: the typed graph, the seeds' node type, the fanouts, the seed and the epoch's batches of
    seeds (:class:`SeedBatches`: :func:`~gnnbench.sampling.neighbor.epoch_batches`, the same for every sampler); a subclass draws the blocks.

    Args:
        graph (HeteroGraph): the typed graph.
        target (str): the node type the seeds are of.
        fanouts (sequence of int): per layer, outermost first; ``-1`` takes every neighbour.
        seed (int): the run's seed (default: 0).
        relation_fanouts: ``(relation name, fanouts)`` pairs in place of ``fanouts`` for those relations
            (``--relation-fanout``; :func:`fanouts_per_relation`).
    """

    name = "sampler"

    def __init__(self, graph, target: str, fanouts: Sequence[int], seed: int = 0,
                 relation_fanouts: Sequence[tuple[str, Sequence[int]]] = ()):
        self.graph, self.target = graph, target
        self.fanouts = check_fanouts(fanouts)
        #: per relation, in the graph's order: its fanouts per layer, outermost first
        self.relation_fanouts = fanouts_per_relation(graph.relations, self.fanouts, relation_fanouts)
        self.seed = int(seed)
        self.index_dtype = np.dtype(graph.index_dtype)

    def sample(self, seeds: np.ndarray, epoch: int = 0, batch: int = 0) -> HeteroSampledBatch:
        """The blocks of batch ``batch`` of epoch ``epoch``, whose seeds (target-type ids) are ``seeds``."""
        raise NotImplementedError


class HeteroNeighborSampler(HeteroSampler):
    """Uniform neighbour sampling without replacement over a typed graph's relations, per relation (Note [fan-out
    per relation]); arguments as :class:`HeteroSampler`.
    """

    name = "gnnbench"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.csr = [(np.ascontiguousarray(g.indptr, dtype=np.int64), np.ascontiguousarray(g.indices, dtype=np.int64))
                    for g in self.graph.graphs]
        self._local_of = {t: np.full(n, -1, dtype=np.int64) for t, n in self.graph.node_counts.items()}

    def _key(self, epoch: int, batch: int, layer: int, relation: int) -> np.uint64:
        words = np.random.SeedSequence([self.seed, epoch, batch, layer, relation]).generate_state(2, np.uint32)
        return np.uint64((int(words[0]) << 32) | int(words[1]))

    def sample(self, seeds: np.ndarray, epoch: int = 0, batch: int = 0) -> HeteroSampledBatch:
        """The blocks of batch ``batch`` of epoch ``epoch``, whose seeds (target-type ids) are ``seeds``."""
        from gnnbench.runtime.graph import Graph

        seeds = np.ascontiguousarray(seeds, dtype=np.int64)
        types = list(self.graph.node_counts)
        empty = np.zeros(0, dtype=np.int64)
        nodes = {t: (seeds if t == self.target else empty) for t in types}
        blocks: list[HeteroBlock] = []
        for layer in range(len(self.fanouts) - 1, -1, -1):  # innermost (the seeds') first
            sources = {t: [nodes[t]] for t in types}
            counts = {t: int(nodes[t].shape[0]) for t in types}
            for t in types:
                self._local_of[t][nodes[t]] = np.arange(counts[t], dtype=np.int64)
            drawn = []
            for k, r in enumerate(self.graph.relations):
                dst = nodes[r.dst]
                if dst.shape[0] == 0:
                    drawn.append((np.zeros(1, dtype=np.int64), empty))
                    continue
                indptr, indices = self.csr[k]
                fanout = self.relation_fanouts[k][layer]
                per_dst = np.empty(dst.shape[0], dtype=np.int64)
                _counts(indptr, dst, fanout, per_dst)
                out_ptr = np.zeros(dst.shape[0] + 1, dtype=np.int64)
                np.cumsum(per_dst, out=out_ptr[1:])
                picked = np.empty(int(out_ptr[-1]), dtype=np.int64)
                _draw(indptr, indices, dst, fanout, self._key(epoch, batch, layer, k), out_ptr, picked)
                local = np.empty_like(picked)
                extra = _relabel_more(picked, local, self._local_of[r.src], counts[r.src])
                sources[r.src].append(extra)
                counts[r.src] += int(extra.shape[0])
                drawn.append((out_ptr, local))
            src = {t: np.concatenate(sources[t]) for t in types}
            for t in types:
                self._local_of[t][src[t]] = -1
            graphs = tuple(Graph(ptr, local.astype(self.index_dtype, copy=False), int(nodes[r.dst].shape[0]),
                                 num_src=counts[r.src], bipartite=True)
                           for r, (ptr, local) in zip(self.graph.relations, drawn))
            blocks.append(HeteroBlock({t: int(nodes[t].shape[0]) for t in types}, dict(counts),
                                      self.graph.relations, graphs))
            nodes = src
        blocks.reverse()
        return HeteroSampledBatch(blocks, nodes, seeds)
