"""Bounded-memory CSR building (datasets/csr.py) agrees with the whole-array builders it replaces."""
import numpy as np
import pytest

from gnnbench.datasets import csr
from gnnbench.datasets.dataset import symmetric_graph


@pytest.mark.parametrize("chunk", [7, 1 << 23])
def test_builder_transpose_and_self_loops_match_graph(monkeypatch, chunk):
    monkeypatch.setattr(csr, "CHUNK", chunk)
    rng = np.random.default_rng(0)
    n, m = 50, 300
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    ref = symmetric_graph(src, dst, n)
    builder = csr.SymmetricCSRBuilder(n, m)
    for a in range(0, m, 40):
        builder.add(src[a:a + 40], dst[a:a + 40])
    g = builder.build()
    assert np.array_equal(g.indptr, ref.indptr) and np.array_equal(g.indices, ref.indices)
    assert np.array_equal(csr.reverse_edge_ids(g), ref._transpose()[2])
    looped, ref_looped = csr.add_self_loops(g), ref.with_self_loops()
    assert np.array_equal(looped.indptr, ref_looped.indptr) and np.array_equal(looped.indices, ref_looped.indices)
    assert np.array_equal(csr.reverse_edge_ids(looped), ref_looped._transpose()[2])
    assert np.array_equal(csr.reverse_edge_ids(g.to_index_dtype(np.int32)), ref._transpose()[2])


def test_builder_refuses_more_than_its_capacity():
    builder = csr.SymmetricCSRBuilder(10, 2)
    with pytest.raises(ValueError, match="more edges than the capacity of 2"):
        builder.add(np.arange(3), np.arange(1, 4))
