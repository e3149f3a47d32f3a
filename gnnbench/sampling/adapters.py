"""``--sampler gnnbench|pyg|dgl``: the same loop on PyG's or DGL's sampler, converted into gnnbench's block form.

Every sampler is a :class:`~gnnbench.sampling.neighbor.Sampler`: ``sample(seeds, epoch, batch) ->
SampledBatch`` and ``batches(train_nodes, batch_size, epoch)``; the batches of seed nodes are
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
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from gnnbench.sampling.neighbor import Block, NeighborSampler, SampledBatch, Sampler

__all__ = ["SAMPLERS", "make_sampler", "sampler_unavailable_reason", "DGLSampler", "PyGSampler"]

SAMPLERS = ("gnnbench", "pyg", "dgl")


def sampler_unavailable_reason(name: str) -> str | None:
    """Why sampler ``name`` cannot run here, or None."""
    import importlib.util

    if name == "dgl":
        return None if importlib.util.find_spec("dgl") else "--sampler dgl needs DGL (pip install dgl==2.1.0)"
    if name == "pyg":
        if importlib.util.find_spec("torch_geometric") is None:
            return "--sampler pyg needs PyG (pip install torch_geometric) with pyg-lib or torch-sparse"
        import torch_geometric.typing as t

        if not (t.WITH_PYG_LIB or t.WITH_TORCH_SPARSE):
            return ("--sampler pyg needs pyg-lib or torch-sparse beside torch_geometric (neither is installed); "
                    "use --sampler gnnbench or dgl")
    return None


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


def make_sampler(name: str, graph, fanouts: Sequence[int], seed: int = 0, target: str | None = None):
    """The sampler ``name`` (one of :data:`SAMPLERS`) over ``graph``'s in-edges; a typed graph's (seeds of node type
    ``target``) is gnnbench's :class:`~gnnbench.sampling.hetero.HeteroNeighborSampler`."""
    if target is not None:
        from gnnbench.sampling.hetero import HeteroNeighborSampler

        if name != "gnnbench":
            raise ValueError(f"sampler '{name}' has no adapter for typed graphs; use the gnnbench sampler")
        return HeteroNeighborSampler(graph, target, fanouts, seed)
    classes = {"gnnbench": NeighborSampler, "pyg": PyGSampler, "dgl": DGLSampler}
    if name not in classes:
        raise ValueError(f"unknown sampler '{name}'; choose one of: {', '.join(SAMPLERS)}")
    return classes[name].from_graph(graph, fanouts, seed)
