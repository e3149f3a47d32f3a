"""``--sampler gnnbench|pyg|dgl``: the same loop on PyG's or DGL's sampler, converted into gnnbench's block form.

Every sampler is a :class:`~gnnbench.sampling.neighbor.Sampler` (on a typed graph a
:class:`~gnnbench.sampling.hetero.HeteroSampler`): ``sample(seeds, epoch, batch) -> SampledBatch`` and
``batches(train_nodes, batch_size, epoch)``; the batches of seed nodes are
:func:`~gnnbench.sampling.neighbor.epoch_batches`'s for all three, so only
the draw of neighbours differs.

Note [foreign samplers]
    DGL: ``dgl.sampling.sample_neighbors(g, seeds, fanout)`` per layer, then
    ``dgl.to_block(frontier, seeds)``, whose source nodes start with its
    destinations (the same prefix rule); the block's in-edges by
    destination become the CSR. PyG: ``torch_geometric.sampler.NeighborSampler``
    over a CSC of the graph. It draws one subgraph, not one block a layer:
    hop ``k`` samples the neighbours of the nodes hop ``k - 1`` found new
    (the seeds at hop 1), with PyG's ``k``-th fanout, and lists nodes and
    edges hop by hop (seeds first; ``row`` the local source, ``col`` the
    local destination). PyG's models run every layer over that subgraph, so
    a seed's neighbours are its hop-1 draw in every layer. As blocks: the
    block of the layer ``h`` layers before the last has the nodes of hops
    ``0..h`` as destinations and the edges of hops ``1..h+1``, which gives
    the seeds PyG's own outputs. Its rows are therefore not all drawn with
    that layer's fanout, unlike gnnbench's and DGL's samplers, which draw
    every layer's destinations anew: a seed in the outer block keeps its
    inner-layer draw. The per-hop counts come from pyg-lib
    (``num_sampled_nodes``, ``num_sampled_edges``); torch-sparse returns
    none, and they are recovered from the hop order: hop ``k``'s edges are
    those whose destination lies among the nodes known before it.
    PyG's sampler needs pyg-lib or torch-sparse; without either it is
    unavailable, and ``--sampler pyg`` is refused before any worker starts.
    Each foreign draw is made deterministic by seeding its library's global
    generator from ``(seed, epoch, batch)`` before it.

Note [foreign samplers on typed graphs]
    On a typed graph ``--sampler dgl`` and ``pyg`` draw with the library's
    own heterogeneous sampler and give gnnbench's typed blocks
    (:class:`~gnnbench.sampling.hetero.HeteroBlock`), so every system, the
    natives included (Note [typed natives on blocks] in
    gnnbench/peers/typed.py), runs the one loop on a foreign draw, as
    Note [foreign samplers] does for one node type, with the same seed
    batches and the same seeding from ``(seed, epoch, batch)``. This is the
    natives' own-sampler arm: ``dgl-native`` on ``--sampler dgl`` is DGL's
    whole stack, sampler, blocks and layers, while every system on
    ``--sampler gnnbench`` shares one draw.

    DGL: the typed graph becomes one ``dgl.heterograph`` (each relation its
    canonical edge type) once per run, in the sampler's set-up, which the
    row times as ``prepare_time_s``, apart from the epochs. Per layer,
    innermost first, as ``dgl.dataloading.NeighborSampler`` does:
    ``dgl.sampling.sample_neighbors(hg, nodes, {edge type: fanout, ...})``
    then ``dgl.to_block(frontier, nodes)``; the block's sources of each type
    (``srcnodes[type].data[dgl.NID]``) are the next layer's destinations.
    DGL's fan-out per edge type is gnnbench's per relation (Note [fan-out
    per relation]): up to ``f`` in-edges of each destination in each edge
    type, uniformly without replacement over that type's edges (a parallel
    edge is two positions, as in gnnbench's draw), ``-1`` all of them; a
    destination with edges in three relations gets up to ``3 f`` sources.
    ``to_block`` keeps each type's destinations as its first sources, in
    their order, and numbers the other sources in its own order (not
    gnnbench's relation-then-edge order); each relation's block is its
    sampled in-edges by destination, sorted by source within a row, as the
    homogeneous adapter's. So the blocks' form and distribution are
    gnnbench's; the draws (another generator) and the numbering differ.

    PyG: ``torch_geometric.sampler.NeighborSampler`` (what ``NeighborLoader``
    runs) on a ``HeteroData`` of one ``edge_index`` per edge type, with
    ``num_neighbors`` a list: each hop's fanout for every edge type, the same
    rule per relation. As for one type it draws one subgraph hop by hop,
    and the blocks are cut from it the same way, per node type and per
    relation (block ``h`` layers before the last: each type's nodes of hops
    ``0..h`` as destinations, each relation's edges of hops ``1..h+1``), so
    a node keeps the draw of the hop that found it (Note [fan-out per
    relation] says so of MLPerf's reference). Per-hop counts come from
    pyg-lib, or, from torch-sparse, from each relation's hop order. Here
    neither is installed, and PyG's sampler raises, at its first batch,
    ``ImportError: 'NeighborSampler' requires either 'pyg-lib' or
    'torch-sparse'``; ``--sampler pyg`` on a typed graph is refused before
    any worker starts with that text (:data:`PYG_TYPED_REFUSAL`).
    torch-sparse builds from source against torch 2.13 in about half an
    hour (``pip install torch-sparse --no-build-isolation``); pyg-lib has
    no wheel for it on the index.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from gnnbench.sampling.hetero import HeteroBlock, HeteroNeighborSampler, HeteroSampledBatch, HeteroSampler
from gnnbench.sampling.neighbor import Block, NeighborSampler, SampledBatch, Sampler

__all__ = ["SAMPLERS", "make_sampler", "load_sampler", "sampler_unavailable_reason", "DGLSampler", "PyGSampler", "DGLHeteroSampler",
           "PyGHeteroSampler", "PYG_TYPED_REFUSAL"]

SAMPLERS = ("gnnbench", "pyg", "dgl")

#: ``--sampler pyg`` on a typed graph without pyg-lib or torch-sparse: what PyG raises here, and what it needs
#: (Note [foreign samplers on typed graphs])
PYG_TYPED_REFUSAL = ("--sampler pyg has no sampler for typed graphs here: PyG's NeighborSampler on HeteroData "
                     "raises \"ImportError: 'NeighborSampler' requires either 'pyg-lib' or 'torch-sparse'\" (neither "
                     "is installed; torch-sparse builds from source against torch 2.13 in about half an hour, "
                     "pyg-lib has no wheel for it on the index); use --sampler gnnbench or dgl")


def sampler_unavailable_reason(name: str, typed: bool = False) -> str | None:
    """Why sampler ``name`` cannot run here (on a typed graph when ``typed``), or None."""
    import importlib.util

    if name == "dgl":
        return None if importlib.util.find_spec("dgl") else "--sampler dgl needs DGL (pip install dgl==2.1.0)"
    if name == "pyg":
        if importlib.util.find_spec("torch_geometric") is None:
            return "--sampler pyg needs PyG (pip install torch_geometric) with pyg-lib or torch-sparse"
        import torch_geometric.typing as t

        if not (t.WITH_PYG_LIB or t.WITH_TORCH_SPARSE):
            return PYG_TYPED_REFUSAL if typed else ("--sampler pyg needs pyg-lib or torch-sparse beside "
                                                    "torch_geometric (neither is installed); use --sampler gnnbench "
                                                    "or dgl")
    return None


def load_sampler(name: str) -> None:
    """Import sampler ``name``'s library (DGL through its shim, PyG's sampler) before any clock runs: its start-up
    is no preparation, as a system's import is not (``SystemUnderTest.load``); the sampler's set-up then times
    only its graph."""
    if name == "dgl":
        from gnnbench.peers.dgl_shim import dgl  # noqa: F401
    elif name == "pyg":
        import torch_geometric.sampler  # noqa: F401


def _batch_seed(seed: int, epoch: int, batch: int) -> int:
    return int(np.random.SeedSequence([seed, epoch, batch]).generate_state(1, np.uint32)[0]) >> 1  # DGL takes int31


def _csr_block(dst_local: np.ndarray, src_local: np.ndarray, num_dst: int, num_src: int, index_dtype) -> Block:
    order = np.lexsort((src_local, dst_local))
    counts = np.bincount(dst_local, minlength=num_dst)
    indptr = np.zeros(num_dst + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Block(indptr, src_local[order].astype(index_dtype), num_dst, num_src)


class DGLSampler(Sampler):
    """DGL's ``sample_neighbors`` + ``to_block`` per layer (Note [foreign samplers])."""

    name = "dgl"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        import torch

        from gnnbench.peers.dgl_shim import dgl

        self._dgl, self._torch = dgl, torch
        dst = np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(self.indptr))
        self._g = dgl.graph((torch.from_numpy(self.indices.copy()), torch.from_numpy(dst)), num_nodes=self.num_nodes)
        self._g.create_formats_()

    def sample(self, seeds, epoch: int = 0, batch: int = 0) -> SampledBatch:
        dgl, torch = self._dgl, self._torch
        dgl.seed(_batch_seed(self.seed, epoch, batch))
        nodes = torch.from_numpy(np.ascontiguousarray(seeds, dtype=np.int64))
        blocks: list[Block] = []
        for fanout in reversed(self.fanouts):
            frontier = dgl.sampling.sample_neighbors(self._g, nodes, fanout, replace=False)
            block = dgl.to_block(frontier, nodes)
            src, dst = block.edges()
            blocks.append(_csr_block(dst.numpy(), src.numpy(), block.num_dst_nodes(), block.num_src_nodes(),
                                     self.index_dtype))
            nodes = block.srcdata[dgl.NID]
        blocks.reverse()
        return SampledBatch(blocks, nodes.numpy().astype(np.int64), np.asarray(seeds, dtype=np.int64))


class PyGSampler(Sampler):
    """``torch_geometric.sampler.NeighborSampler`` (Note [foreign samplers])."""

    name = "pyg"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        import torch
        from torch_geometric.data import Data
        from torch_geometric.sampler import NeighborSampler as PyGNeighborSampler

        self._torch = torch
        dst = np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(self.indptr))
        edge_index = torch.from_numpy(np.stack([self.indices, dst]))
        data = Data(edge_index=edge_index, num_nodes=self.num_nodes)
        self._sampler = PyGNeighborSampler(data, list(reversed(self.fanouts)))  # PyG lists hops from the seeds

    def sample(self, seeds, epoch: int = 0, batch: int = 0) -> SampledBatch:
        torch = self._torch
        from torch_geometric.sampler import NodeSamplerInput

        torch.manual_seed(_batch_seed(self.seed, epoch, batch))
        seeds = np.ascontiguousarray(seeds, dtype=np.int64)
        out = self._sampler.sample_from_nodes(NodeSamplerInput(None, torch.from_numpy(seeds)))
        node, row, col = out.node.numpy(), out.row.numpy(), out.col.numpy()
        hops = len(self.fanouts)
        if out.num_sampled_nodes is not None:  # pyg-lib counts them
            nodes_to = np.cumsum(out.num_sampled_nodes)[:hops + 1]
            edges_to = np.cumsum(out.num_sampled_edges)[:hops]
        else:
            nodes_to, edges_to = _hop_bounds(row, col, len(seeds), hops)
        blocks = []
        for hop in range(hops):  # hop 0: the seeds' neighbours (the last block)
            e = int(edges_to[hop])  # the edges of hops 1..hop+1: every sampled in-edge of these destinations
            blocks.append(_csr_block(col[:e], row[:e], int(nodes_to[hop]), int(nodes_to[hop + 1]), self.index_dtype))
        blocks.reverse()
        return SampledBatch(blocks, node[:int(nodes_to[hops])].astype(np.int64), seeds)


def _hop_bounds(row: np.ndarray, col: np.ndarray, num_seeds: int, hops: int) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes_to, edges_to)``: how many nodes PyG's output lists after each hop (``nodes_to[0]`` the seeds) and
    how many edges after hops 1..``hops``, from the hop order alone (Note [foreign samplers])."""
    nodes_to, edges_to = [num_seeds], []
    for _ in range(hops):
        e = int(np.count_nonzero(col < nodes_to[-1]))  # this hop's destinations: the nodes known before it
        edges_to.append(e)
        nodes_to.append(max(nodes_to[-1], int(row[:e].max()) + 1 if e else 0))
    return np.array(nodes_to), np.array(edges_to)



class DGLHeteroSampler(HeteroSampler):
    """DGL's ``sample_neighbors`` on its heterograph + ``to_block`` per layer, as gnnbench's typed blocks (Note
    [foreign samplers on typed graphs]); arguments as :class:`~gnnbench.sampling.hetero.HeteroSampler`."""

    name = "dgl"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        import torch

        from gnnbench.peers.dgl_shim import dgl
        from gnnbench.peers.typed import dgl_heterograph

        self._dgl, self._torch = dgl, torch
        self._edge_types = [(r.src, r.name, r.dst) for r in self.graph.relations]
        self._hg = dgl_heterograph(self.graph)  # once per run, in the sampler's set-up
        self._hg.create_formats_()

    def sample(self, seeds, epoch: int = 0, batch: int = 0) -> HeteroSampledBatch:
        dgl, torch = self._dgl, self._torch
        dgl.seed(_batch_seed(self.seed, epoch, batch))
        seeds = np.array(seeds, dtype=np.int64)
        nodes = {t: torch.from_numpy(seeds) if t == self.target else torch.zeros(0, dtype=torch.int64)
                 for t in self.graph.node_counts}
        blocks: list[HeteroBlock] = []
        for layer in range(len(self.fanouts) - 1, -1, -1):  # innermost first, as dgl.dataloading.NeighborSampler
            fanout = {e: f[layer] for e, f in zip(self._edge_types, self.relation_fanouts)}  # DGL's per-type form
            frontier = dgl.sampling.sample_neighbors(self._hg, nodes, fanout, replace=False)
            block = dgl.to_block(frontier, nodes)
            blocks.append(self._typed_block(block))
            nodes = {t: block.srcnodes[t].data[dgl.NID] for t in nodes}
        blocks.reverse()
        return HeteroSampledBatch(blocks, {t: v.numpy().astype(np.int64) for t, v in nodes.items()}, seeds)

    def _typed_block(self, block) -> HeteroBlock:
        """A ``to_block`` result as a :class:`~gnnbench.sampling.hetero.HeteroBlock`: each relation's in-edges by
        destination, local ids of its types."""
        from gnnbench.runtime.graph import Graph

        num_dst = {t: int(block.num_dst_nodes(t)) for t in self.graph.node_counts}
        num_src = {t: int(block.num_src_nodes(t)) for t in self.graph.node_counts}
        graphs = []
        for edge_type, r in zip(self._edge_types, self.graph.relations):
            src, dst = block.edges(etype=edge_type)
            graphs.append(Graph.from_edges(src.numpy(), dst.numpy(), num_dst[r.dst], self.index_dtype,
                                           num_src=num_src[r.src], bipartite=True))
        return HeteroBlock(num_dst, num_src, self.graph.relations, tuple(graphs))


class PyGHeteroSampler(HeteroSampler):
    """``torch_geometric.sampler.NeighborSampler`` on ``HeteroData``, as gnnbench's typed blocks (Note [foreign
    samplers on typed graphs]); arguments as :class:`~gnnbench.sampling.hetero.HeteroSampler`."""

    name = "pyg"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        import torch
        from torch_geometric.data import HeteroData
        from torch_geometric.sampler import NeighborSampler as PyGNeighborSampler

        self._torch = torch
        data = HeteroData()
        for t, n in self.graph.node_counts.items():
            data[t].num_nodes = n
        for r, g in zip(self.graph.relations, self.graph.graphs):
            data[r.src, r.name, r.dst].edge_index = torch.from_numpy(np.stack(g.edges()))
        # per edge type, each hop's fanout (Note [fan-out per relation]); PyG lists hops from the seeds
        self._sampler = PyGNeighborSampler(data, {(r.src, r.name, r.dst): list(reversed(f))
                                                  for r, f in zip(self.graph.relations, self.relation_fanouts)})

    def sample(self, seeds, epoch: int = 0, batch: int = 0) -> HeteroSampledBatch:
        from torch_geometric.sampler import NodeSamplerInput

        from gnnbench.runtime.graph import Graph

        torch = self._torch
        torch.manual_seed(_batch_seed(self.seed, epoch, batch))
        seeds = np.array(seeds, dtype=np.int64)
        out = self._sampler.sample_from_nodes(NodeSamplerInput(None, torch.from_numpy(seeds), input_type=self.target))
        types, relations, hops = list(self.graph.node_counts), self.graph.relations, len(self.fanouts)
        keys = [(r.src, r.name, r.dst) for r in relations]
        empty = np.zeros(0, dtype=np.int64)
        node = {t: out.node[t].numpy() if t in out.node else empty for t in types}
        row = [out.row[e].numpy() if e in out.row else empty for e in keys]
        col = [out.col[e].numpy() if e in out.col else empty for e in keys]
        if out.num_sampled_nodes is not None:  # pyg-lib counts them
            nodes_to = {t: _running(out.num_sampled_nodes.get(t), hops + 1) for t in types}
            edges_to = [_running(out.num_sampled_edges.get(e), hops) for e in keys]
        else:
            nodes_to, edges_to = _typed_hop_bounds(row, col, relations, types, self.target, len(seeds), hops)
        blocks = []
        for hop in range(hops):  # hop 0: the seeds' neighbours (the last block)
            num_dst = {t: int(nodes_to[t][hop]) for t in types}
            num_src = {t: int(nodes_to[t][hop + 1]) for t in types}
            graphs = tuple(Graph.from_edges(row[k][:e], col[k][:e], num_dst[r.dst], self.index_dtype,
                                            num_src=num_src[r.src], bipartite=True)
                           for k, (r, e) in enumerate(zip(relations, (int(edges[hop]) for edges in edges_to))))
            blocks.append(HeteroBlock(num_dst, num_src, relations, graphs))
        blocks.reverse()
        input_nodes = {t: node[t][:int(nodes_to[t][hops])].astype(np.int64) for t in types}
        return HeteroSampledBatch(blocks, input_nodes, seeds)


def _running(counts, n: int) -> np.ndarray:
    """The first ``n`` running totals of per-hop ``counts`` (None or short: zeros after)."""
    padded = [int(c) for c in (counts if counts is not None else [])] + [0] * n
    return np.cumsum(padded)[:n]


def _typed_hop_bounds(row: list, col: list, relations, types: list, target: str, num_seeds: int,
                      hops: int) -> tuple[dict[str, list[int]], list[list[int]]]:
    """:func:`_hop_bounds` per node type and relation: how many nodes of each type PyG's output lists after each
    hop (the seeds, of the target type, at hop 0) and how many edges of each relation after hops 1..``hops``,
    from each relation's hop order (Note [foreign samplers on typed graphs])."""
    nodes_to = {t: [num_seeds if t == target else 0] for t in types}
    edges_to: list[list[int]] = [[] for _ in relations]
    for _ in range(hops):
        reached = {t: counts[-1] for t, counts in nodes_to.items()}
        for k, r in enumerate(relations):
            e = int(np.count_nonzero(col[k] < nodes_to[r.dst][-1]))  # this hop's destinations: those known before
            edges_to[k].append(e)
            if e:
                reached[r.src] = max(reached[r.src], int(row[k][:e].max()) + 1)
        for t in types:
            nodes_to[t].append(reached[t])
    return nodes_to, edges_to


def make_sampler(name: str, graph, fanouts: Sequence[int], seed: int = 0, target: str | None = None,
                 relation_fanouts: Sequence[tuple[str, Sequence[int]]] = ()):
    """The sampler ``name`` (one of :data:`SAMPLERS`) over ``graph``'s in-edges; over a typed graph's relations
    when ``target`` (the seeds' node type) is given (Note [foreign samplers on typed graphs]), with
    ``relation_fanouts`` in place of ``fanouts`` for the relations they name (Note [fan-out per relation])."""
    if target is not None:
        typed = {"gnnbench": HeteroNeighborSampler, "pyg": PyGHeteroSampler, "dgl": DGLHeteroSampler}
        if name not in typed:
            raise ValueError(f"unknown sampler '{name}'; choose one of: {', '.join(SAMPLERS)}")
        return typed[name](graph, target, fanouts, seed, relation_fanouts)
    if relation_fanouts:
        raise ValueError("per-relation fanouts need a typed graph")
    classes = {"gnnbench": NeighborSampler, "pyg": PyGSampler, "dgl": DGLSampler}
    if name not in classes:
        raise ValueError(f"unknown sampler '{name}'; choose one of: {', '.join(SAMPLERS)}")
    return classes[name].from_graph(graph, fanouts, seed)
