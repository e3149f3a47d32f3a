"""--sampler dgl|pyg on typed graphs: the libraries' heterogeneous samplers as gnnbench's typed blocks (Note
[foreign samplers on typed graphs] in gnnbench/sampling/adapters.py)."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.sampling import HeteroNeighborSampler, make_sampler, sampler_unavailable_reason
from tests.relational.test_sampled_relational import _typed_graph

needs_dgl = pytest.mark.skipif(sampler_unavailable_reason("dgl") is not None, reason="DGL is not installed")

SEEDS = np.array([0, 5, 7, 11, 3, 29], dtype=np.int64)


def _dgl(fanouts, seed=0):
    return make_sampler("dgl", _typed_graph(), fanouts, seed, target="paper")


def _global(batch, block, relation_index):
    """A block's relation as ``(source, destination)`` global ids: a block's sources of each type are the first
    ``num_src`` input nodes of that type, its destinations the first ``num_dst``."""
    r, g = block.relations[relation_index], block.graphs[relation_index]
    src, dst = g.edges()
    return batch.input_nodes[r.src][src], batch.input_nodes[r.dst][dst]


@needs_dgl
def test_dgl_typed_blocks_have_gnnbench_typed_block_form():
    batch = _dgl((4, 3, 2)).sample(SEEDS, epoch=1, batch=2)
    blocks = batch.blocks
    assert len(blocks) == 3 and blocks[-1].num_dst == {"paper": 6, "author": 0, "field": 0}
    for outer, inner in zip(blocks, blocks[1:]):
        assert outer.num_dst == inner.num_src  # one layer's sources are the next one's destinations
    assert {t: len(v) for t, v in batch.input_nodes.items()} == blocks[0].num_src
    np.testing.assert_array_equal(batch.seeds, SEEDS)
    np.testing.assert_array_equal(batch.input_nodes["paper"][:6], SEEDS)  # destinations a prefix of the sources
    for t, ids in batch.input_nodes.items():
        assert len(np.unique(ids)) == len(ids), t
    for block in blocks:
        for t in block.num_dst:
            assert block.num_dst[t] <= block.num_src[t]
        for r, g in zip(block.relations, block.graphs):
            assert g.bipartite and (g.num_dst, g.num_src) == (block.num_dst[r.dst], block.num_src[r.src])
            assert g.indices.dtype == np.int64 and g.indptr.shape == (g.num_dst + 1,)
            assert g.num_edges == 0 or 0 <= g.indices.min() <= g.indices.max() < g.num_src


@needs_dgl
@pytest.mark.parametrize("fanouts", [(3, 2), (-1, 2)])
def test_dgl_draws_up_to_the_fanout_of_each_relation_from_that_relations_neighbours(fanouts):
    """Note [fan-out per relation]: min(f, degree in relation r) in-edges of each destination in each relation,
    without replacement over the relation's edges; -1 takes them all."""
    graph = _typed_graph()
    batch = _dgl(fanouts).sample(SEEDS, epoch=0, batch=1)
    for layer, (block, fanout) in enumerate(zip(batch.blocks, fanouts)):
        for k, (r, g) in enumerate(zip(block.relations, block.graphs)):
            full = graph.graphs[k]
            dst_ids = batch.input_nodes[r.dst][:block.num_dst[r.dst]]
            degree = np.diff(full.indptr)[dst_ids]
            expected = degree if fanout == -1 else np.minimum(degree, fanout)
            np.testing.assert_array_equal(np.diff(g.indptr), expected, err_msg=f"layer {layer}, {r}")
            src, dst = _global(batch, block, k)
            for v in np.unique(dst):  # each drawn edge a distinct edge of relation r into v
                have = dict(zip(*np.unique(full.indices[full.indptr[v]:full.indptr[v + 1]], return_counts=True)))
                drawn, times = np.unique(src[dst == v], return_counts=True)
                assert all(have.get(u, 0) >= c for u, c in zip(drawn, times)), (layer, str(r), v)


@needs_dgl
def test_dgl_same_seed_same_blocks_another_batch_other_blocks():
    def arrays(sampler, batch=2):
        out = sampler.sample(SEEDS, epoch=1, batch=batch)
        return [a for b in out.blocks for g in b.graphs for a in (g.indptr, g.indices)] + list(out.input_nodes.values())

    a, b, c = arrays(_dgl((5, 5))), arrays(_dgl((5, 5))), arrays(_dgl((5, 5)), batch=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(len(x) == len(y) and np.array_equal(x, y) for x, y in zip(a, c))


@needs_dgl
def test_dgl_batches_are_the_gnnbench_samplers_seed_batches():
    train = np.arange(0, 40, 2)
    ours = HeteroNeighborSampler(_typed_graph(), "paper", (2, 2), seed=4).batches(train, 6, epoch=1)
    theirs = make_sampler("dgl", _typed_graph(), (2, 2), 4, target="paper").batches(train, 6, epoch=1)
    assert [b.seeds.tolist() for b in ours] == [b.seeds.tolist() for b in theirs]


def test_pyg_on_typed_graphs_is_refused_with_the_error_pyg_raises_here():
    """The refusal quotes PyG's own error, read here from a draw (Note [foreign samplers on typed graphs])."""
    import torch_geometric.typing as t

    if t.WITH_PYG_LIB or t.WITH_TORCH_SPARSE:
        pytest.skip("pyg-lib or torch-sparse is installed here: --sampler pyg runs on typed graphs")
    assert sampler_unavailable_reason("pyg", typed=True) == (
        "--sampler pyg has no sampler for typed graphs here: PyG's NeighborSampler on HeteroData raises "
        "\"ImportError: 'NeighborSampler' requires either 'pyg-lib' or 'torch-sparse'\" (neither is installed; "
        "torch-sparse builds from source against torch 2.13 in about half an hour, pyg-lib has no wheel for it on "
        "the index); use --sampler gnnbench or dgl")
    sampler = make_sampler("pyg", _typed_graph(), (2, 2), 0, target="paper")
    with pytest.raises(ImportError) as err:
        sampler.sample(SEEDS)
    assert f"\"ImportError: {err.value}\"" in sampler_unavailable_reason("pyg", typed=True)


def test_pyg_typed_hop_bounds_without_pyg_lib_follow_each_relations_hop_order():
    """torch-sparse's output has no per-hop counts: per relation, hop 1's edges end at the first whose destination
    was not known before it."""
    from gnnbench.runtime.hetero import Relation
    from gnnbench.sampling.adapters import _typed_hop_bounds

    relations = (Relation("paper", "cites", "paper"), Relation("author", "writes", "paper"))
    # 2 paper seeds. Hop 1: cites finds papers 2, 3 (into 0, 1); writes finds authors 0, 1. Hop 2: cites finds
    # paper 4 (into 2, 3), writes finds author 2 (into 3)
    row = [np.array([2, 3, 4, 4]), np.array([0, 1, 1, 2])]
    col = [np.array([0, 1, 2, 3]), np.array([0, 0, 1, 3])]
    nodes_to, edges_to = _typed_hop_bounds(row, col, relations, ["paper", "author"], "paper", 2, 2)
    assert nodes_to == {"paper": [2, 4, 5], "author": [0, 2, 3]}
    assert edges_to == [[2, 4], [3, 4]]
