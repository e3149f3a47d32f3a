"""The one-pass transpose and the chunked GCN normalisation equal their direct NumPy definitions bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from gnnbench.runtime import csr_transpose
from gnnbench.runtime.csr_transpose import column_counts, transpose_csr
from gnnbench.runtime.graph import Graph


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_transpose_and_gcn_norm_equal_the_direct_definitions(index_dtype):
    rng = np.random.default_rng(1)
    n, e = 500, 20000
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    src[:100] = 7  # a hub row, and nodes n..n+2 without edges
    g = Graph.from_edges(src, dst, n + 3, index_dtype)
    s, d = g.edges()
    order = np.argsort(s, kind="stable")
    indptr = np.zeros(g.num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(s, minlength=g.num_nodes), out=indptr[1:])
    view = g.view(transposed=True)
    assert np.array_equal(view.indptr, indptr) and np.array_equal(view.indices, d[order])
    assert np.array_equal(view.edge_ids, order)
    assert {view.indptr.dtype, view.indices.dtype, view.edge_ids.dtype} == {np.dtype(index_dtype)}
    assert not view.indices.flags.writeable
    w = 1.0 / np.sqrt(np.maximum(g.in_degree[d], 1.0) * np.maximum(g.out_degree[s], 1.0))
    assert w.dtype == np.float32 and np.array_equal(g.gcn_norm(), w)


def _stable_sort_transpose(indptr, indices, num_nodes):
    """The definition the counting sort must equal: a stable argsort of the sources."""
    dst = np.repeat(np.arange(num_nodes, dtype=np.int64), np.diff(indptr.astype(np.int64)))
    order = np.argsort(indices, kind="stable")
    indptr_t = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(indices, minlength=num_nodes), out=indptr_t[1:])
    return indptr_t, dst[order], order


@settings(max_examples=60, deadline=None)
@given(data=st.data(), num_nodes=st.integers(1, 40), index_dtype=st.sampled_from([np.int32, np.int64]),
       blocks=st.integers(1, 9))
def test_parallel_transpose_equals_the_stable_sort(data, num_nodes, index_dtype, blocks):
    """Note [parallel transpose]: any block count gives the serial result (empty rows, duplicates, hubs)."""
    edges = data.draw(st.lists(st.tuples(st.integers(0, num_nodes - 1), st.integers(0, num_nodes - 1)),
                               max_size=120))
    src = np.array([s for s, _ in edges], dtype=np.int64)
    dst = np.array([d for _, d in edges], dtype=np.int64)
    g = Graph.from_edges(src, dst, num_nodes, index_dtype)
    got = transpose_csr(np.asarray(g.indptr), np.asarray(g.indices), num_nodes, blocks=blocks)
    want = _stable_sort_transpose(np.asarray(g.indptr), np.asarray(g.indices), num_nodes)
    for a, b in zip(got, want):
        assert a.dtype == np.dtype(index_dtype) and np.array_equal(a, b)
    assert np.array_equal(column_counts(np.asarray(g.indices), num_nodes, blocks=blocks),
                          np.bincount(src, minlength=num_nodes))


def test_parallel_transpose_equals_scipy_on_a_power_law_graph():
    rng = np.random.default_rng(5)
    n, e = 3000, 60000
    src = (rng.pareto(1.2, e) * 10).astype(np.int64) % n  # hubs, duplicates and nodes without out-edges
    g = Graph.from_edges(src, rng.integers(0, n, e), n)
    a = sp.csr_matrix((np.arange(1, e + 1), np.asarray(g.indices), np.asarray(g.indptr)), shape=(n, n))
    t = a.T.tocsr()
    for blocks in (1, 2, 5):
        indptr_t, indices_t, edge_ids = transpose_csr(np.asarray(g.indptr), np.asarray(g.indices), n, blocks=blocks)
        assert np.array_equal(indptr_t, t.indptr) and np.array_equal(indices_t, t.indices)
        assert np.array_equal(edge_ids + 1, t.data)


def test_histogram_memory_is_capped_by_using_fewer_blocks(monkeypatch):
    monkeypatch.setattr(csr_transpose, "_MAX_HISTOGRAM_BYTES", 8 * 100 * 3)
    assert csr_transpose._num_blocks(100, 16) == 3 and csr_transpose._num_blocks(10**6, 16) == 1
