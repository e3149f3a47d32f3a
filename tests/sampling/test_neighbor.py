"""gnnbench's neighbour sampler against its definition (gnnbench/sampling/neighbor.py)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from gnnbench.sampling import NeighborSampler, check_fanouts, epoch_batches


def _csr(num_nodes: int, edges: list[tuple[int, int]]):
    """CSR by destination of ``(src, dst)`` edges."""
    src = np.array([s for s, _ in edges], dtype=np.int64)
    dst = np.array([d for _, d in edges], dtype=np.int64)
    order = np.lexsort((src, dst))
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=num_nodes), out=indptr[1:])
    return indptr, src[order]


def _random_csr(num_nodes=300, mean_degree=12, seed=1):
    rng = np.random.default_rng(seed)
    m = num_nodes * mean_degree
    edges = set(zip(rng.integers(0, num_nodes, m).tolist(), rng.integers(0, num_nodes, m).tolist()))
    return _csr(num_nodes, sorted(edges))


def _global_edges(batch, b):
    """The global (src, dst) pairs of block ``b``."""
    block = batch.blocks[b]
    src_global = batch.input_nodes[:block.num_src]  # every block's sources are a prefix of the input nodes
    dst = np.repeat(np.arange(block.num_dst), np.diff(block.indptr))
    return src_global[block.indices.astype(np.int64)], src_global[dst]


def test_blocks_chain_and_respect_fanouts_without_duplicates():
    indptr, indices = _random_csr()
    sampler = NeighborSampler(indptr, indices, (5, 3), seed=7)
    seeds = np.array([0, 4, 9, 17, 33], dtype=np.int64)
    batch = sampler.sample(seeds, epoch=0, batch=0)
    assert len(batch.blocks) == 2
    outer, inner = batch.blocks
    assert inner.num_dst == len(seeds) and outer.num_dst == inner.num_src
    assert outer.num_src == batch.input_nodes.shape[0]
    np.testing.assert_array_equal(batch.input_nodes[:len(seeds)], seeds)  # destinations are a prefix
    assert len(set(batch.input_nodes.tolist())) == batch.input_nodes.shape[0]
    degree = np.diff(indptr)
    for b, fanout in ((0, 5), (1, 3)):
        block = batch.blocks[b]
        src, dst = _global_edges(batch, b)
        got = np.diff(block.indptr)
        np.testing.assert_array_equal(got, np.minimum(degree[batch.input_nodes[:block.num_dst]], fanout))
        assert block.indices.max() < block.num_src
        for i in range(block.num_dst):
            row = block.indices[block.indptr[i]:block.indptr[i + 1]]
            assert len(set(row.tolist())) == row.shape[0]  # without replacement
        neighbours = {(int(s), int(d)) for s, d in zip(indices, np.repeat(np.arange(len(degree)), degree))}
        assert all((int(s), int(d)) in neighbours for s, d in zip(src, dst))  # real in-edges only


def test_minus_one_takes_every_neighbour():
    indptr, indices = _random_csr()
    batch = NeighborSampler(indptr, indices, (-1, -1)).sample(np.arange(10))
    inner = batch.blocks[1]
    for i in range(10):
        row = batch.input_nodes[inner.indices[inner.indptr[i]:inner.indptr[i + 1]]]
        assert sorted(row.tolist()) == sorted(indices[indptr[i]:indptr[i + 1]].tolist())


def test_same_key_same_blocks_and_another_batch_differs():
    indptr, indices = _random_csr()
    a = NeighborSampler(indptr, indices, (4, 4), seed=3).sample(np.arange(20), epoch=2, batch=5)
    b = NeighborSampler(indptr, indices, (4, 4), seed=3).sample(np.arange(20), epoch=2, batch=5)
    c = NeighborSampler(indptr, indices, (4, 4), seed=3).sample(np.arange(20), epoch=2, batch=6)
    np.testing.assert_array_equal(a.input_nodes, b.input_nodes)
    for x, y in zip(a.blocks, b.blocks):
        np.testing.assert_array_equal(x.indptr, y.indptr)
        np.testing.assert_array_equal(x.indices, y.indices)
    assert not np.array_equal(a.input_nodes, c.input_nodes)


@pytest.mark.parametrize("degree,fanout", [(10, 3), (200, 100)])  # Floyd's algorithm, then reservoir sampling
def test_each_neighbour_equally_likely(degree, fanout):
    edges = [(j, 0) for j in range(1, degree + 1)]
    indptr, indices = _csr(degree + 1, edges)
    sampler = NeighborSampler(indptr, indices, (fanout,), seed=11)
    draws = 3000 if degree == 10 else 400
    counts = np.zeros(degree + 1)
    for b in range(draws):
        batch = sampler.sample(np.array([0]), epoch=0, batch=b)
        block = batch.blocks[0]
        assert block.num_edges == fanout
        np.add.at(counts, batch.input_nodes[block.indices.astype(np.int64)], 1)
    observed = counts[1:]
    assert observed.sum() == draws * fanout
    p = stats.chisquare(observed).pvalue  # uniform expected frequencies
    assert p > 1e-3, f"neighbour frequencies are not uniform (chi-square p={p:.2g}): {observed}"


def test_destination_with_no_neighbour_and_a_10000_edge_fanout():
    edges = [(j, 0) for j in range(1, 20001)]
    indptr, indices = _csr(20002, edges)  # node 20001 has no in-edge
    batch = NeighborSampler(indptr, indices, (10000,), index_dtype=np.int32).sample(np.array([0, 20001]))
    block = batch.blocks[0]
    assert block.indices.dtype == np.int32
    assert np.diff(block.indptr).tolist() == [10000, 0]
    assert len(set(block.indices.tolist())) == 10000


def test_result_does_not_depend_on_threads():
    import numba

    indptr, indices = _random_csr(num_nodes=2000, mean_degree=30)
    seeds = np.arange(0, 2000, 3)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = NeighborSampler(indptr, indices, (10, 5), seed=1).sample(seeds, 1, 2)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = NeighborSampler(indptr, indices, (10, 5), seed=1).sample(seeds, 1, 2)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one.input_nodes, many.input_nodes)
    np.testing.assert_array_equal(one.blocks[0].indices, many.blocks[0].indices)


def test_epoch_batches_cover_the_training_nodes_once_in_a_seeded_order():
    train = np.arange(100, 110)
    a = epoch_batches(train, 4, seed=0, epoch=1)
    assert [len(x) for x in a] == [4, 4, 2]
    assert sorted(np.concatenate(a).tolist()) == train.tolist()
    assert all(np.array_equal(x, y) for x, y in zip(a, epoch_batches(train, 4, seed=0, epoch=1)))
    assert not np.array_equal(np.concatenate(a), np.concatenate(epoch_batches(train, 4, seed=0, epoch=2)))


@pytest.mark.parametrize("fanouts,message", [
    ((0, 10), "each fanout must be >= 1, or -1 for all neighbours (got 0)"),
    ((25, -2), "each fanout must be >= 1, or -1 for all neighbours (got -2)"),
    ((2.5,), "fanouts must be integers (got 2.5)"),
    ((), "give at least one fanout, e.g. 25,10"),
])
def test_bad_fanouts(fanouts, message):
    with pytest.raises(ValueError) as err:
        check_fanouts(fanouts)
    assert str(err.value) == message
