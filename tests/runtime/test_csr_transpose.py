"""The one-pass transpose and the chunked GCN normalisation equal their direct NumPy definitions bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

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
