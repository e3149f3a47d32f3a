"""--sampler pyg|dgl: foreign samplers converted into gnnbench's block form (gnnbench/sampling/adapters.py)."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.sampling import SAMPLERS, make_sampler, sampler_unavailable_reason
from tests.sampling.test_neighbor import _global_edges, _random_csr


class _G:  # the two arrays and dtype make_sampler reads from a Graph
    def __init__(self, indptr, indices):
        self.indptr, self.indices, self.index_dtype = indptr, indices, indices.dtype


def _drawn_with(name, batch, fanouts, b):
    """The fanout each destination of block ``b`` was drawn with: the block's own for gnnbench's and DGL's
    samplers; for PyG's, the fanout of the hop that found the node (Note [foreign samplers])."""
    num_dst = batch.blocks[b].num_dst
    if name != "pyg":
        return np.full(num_dst, fanouts[b])
    found_by = np.zeros(num_dst, dtype=int)  # 0: a seed, k: found by hop k
    for k, block in enumerate(reversed(batch.blocks[b + 1:]), start=1):
        found_by[block.num_dst:] = k
    return np.array(fanouts[::-1])[found_by]


def _check_block_form(batch, indptr, indices, fanouts, seeds, name="gnnbench"):
    degree = np.diff(indptr)
    neighbours = {(int(s), int(d)) for s, d in zip(indices, np.repeat(np.arange(len(degree)), degree))}
    np.testing.assert_array_equal(batch.input_nodes[:len(seeds)], seeds)
    assert batch.blocks[-1].num_dst == len(seeds)
    for b, fanout in enumerate(fanouts):
        block = batch.blocks[b]
        if b + 1 < len(fanouts):
            assert batch.blocks[b + 1].num_src == block.num_dst
        counts = np.diff(block.indptr)
        np.testing.assert_array_equal(counts, np.minimum(degree[batch.input_nodes[:block.num_dst]],
                                                         _drawn_with(name, batch, fanouts, b)))
        src, dst = _global_edges(batch, b)
        assert all((int(s), int(d)) in neighbours for s, d in zip(src, dst))
        for i in range(block.num_dst):
            row = block.indices[block.indptr[i]:block.indptr[i + 1]]
            assert len(set(row.tolist())) == row.shape[0]


@pytest.mark.parametrize("name", [s for s in SAMPLERS])
def test_every_sampler_gives_the_block_form(name):
    reason = sampler_unavailable_reason(name)
    if reason:
        pytest.skip(reason)
    indptr, indices = _random_csr()
    seeds = np.array([3, 1, 8, 40], dtype=np.int64)
    sampler = make_sampler(name, _G(indptr, indices), (6, 2), seed=5)
    batch = sampler.sample(seeds, epoch=1, batch=0)
    _check_block_form(batch, indptr, indices, (6, 2), seeds, name)
    again = make_sampler(name, _G(indptr, indices), (6, 2), seed=5).sample(seeds, epoch=1, batch=0)
    np.testing.assert_array_equal(batch.input_nodes, again.input_nodes)  # seeded: the same blocks


def test_pyg_hop_bounds_without_pyg_lib_follow_the_hop_order():
    """torch-sparse's output has no per-hop counts: hop 1's edges end at the first whose destination is no seed."""
    from gnnbench.sampling.adapters import _hop_bounds

    # 2 seeds; hop 1 finds nodes 2, 3 (edges into 0, 1); hop 2 finds node 4 (edges into 2, 3)
    row = np.array([2, 1, 3, 4, 0, 4])
    col = np.array([0, 0, 1, 2, 3, 3])
    nodes_to, edges_to = _hop_bounds(row, col, num_seeds=2, hops=2)
    assert nodes_to.tolist() == [2, 4, 5] and edges_to.tolist() == [3, 6]


def test_pyg_without_its_sampling_library_says_what_to_install():
    import torch_geometric.typing as t

    if t.WITH_PYG_LIB or t.WITH_TORCH_SPARSE:
        pytest.skip("pyg-lib or torch-sparse is installed here")
    assert sampler_unavailable_reason("pyg") == ("--sampler pyg needs pyg-lib or torch-sparse beside "
                                                 "torch_geometric (neither is installed); use --sampler gnnbench "
                                                 "or dgl")


def test_unknown_sampler_lists_the_choices():
    with pytest.raises(ValueError, match="unknown sampler 'x'; choose one of: gnnbench, pyg, dgl"):
        make_sampler("x", None, (2,))
