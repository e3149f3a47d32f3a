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
    over a CSC of the graph; its output lists nodes hop by hop (seeds
    first), so layer ``l``'s destinations are the first
    ``sum(num_sampled_nodes[:L - l])`` nodes and its edges the hop's slice of
    ``(row, col)`` (``row`` the local source, ``col`` the local destination).
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
        n_nodes = np.cumsum(out.num_sampled_nodes)
        n_edges = np.concatenate([[0], np.cumsum(out.num_sampled_edges)])
        hops = len(self.fanouts)
        blocks = []
        for hop in range(hops):  # hop 0: the seeds' neighbours (the last block)
            a, b = n_edges[hop], n_edges[hop + 1]
            blocks.append(_csr_block(col[a:b], row[a:b], int(n_nodes[hop]), int(n_nodes[hop + 1]), self.index_dtype))
        blocks.reverse()
        return SampledBatch(blocks, node[:int(n_nodes[hops])].astype(np.int64), seeds)


def make_sampler(name: str, graph, fanouts: Sequence[int], seed: int = 0):
    """The sampler ``name`` (one of :data:`SAMPLERS`) over ``graph``'s in-edges."""
    classes = {"gnnbench": NeighborSampler, "pyg": PyGSampler, "dgl": DGLSampler}
    if name not in classes:
        raise ValueError(f"unknown sampler '{name}'; choose one of: {', '.join(SAMPLERS)}")
    return classes[name].from_graph(graph, fanouts, seed)
