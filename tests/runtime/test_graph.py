"""Graph: canonical edge order, transpose with edge ids, self loops, normalisation, bad input."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.runtime.graph import Graph, GraphError


def test_edges_are_sorted_by_destination_then_source():
    g = Graph.from_edges([2, 0, 1, 0], [1, 1, 0, 2], 3)
    assert g.indptr.tolist() == [0, 1, 3, 4]
    assert g.indices.tolist() == [1, 0, 2, 0]
    src, dst = g.edges()
    assert list(zip(src.tolist(), dst.tolist())) == [(1, 0), (0, 1), (2, 1), (0, 2)]


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_transposed_view_maps_positions_to_canonical_edge_ids(index_dtype):
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 20, 100), rng.integers(0, 20, 100)
    g = Graph.from_edges(src, dst, 20, index_dtype)
    t = g.view(transposed=True)
    assert t.indices.dtype == index_dtype and t.transposed and g.view().edge_ids is None
    csrc, cdst = g.edges()
    for row in range(20):
        for p in range(int(t.indptr[row]), int(t.indptr[row + 1])):
            e = int(t.edge_ids[p])
            assert csrc[e] == row and cdst[e] == t.indices[p]
    np.testing.assert_array_equal(t.row_degree, g.out_degree)
    np.testing.assert_array_equal(t.col_degree, g.in_degree)


def test_self_loops_added_once_and_gcn_norm_is_symmetric():
    g = Graph.from_edges([0, 1, 1, 2], [1, 0, 1, 1], 3)
    s = g.with_self_loops()
    src, dst = s.edges()
    assert sorted(zip(src.tolist(), dst.tolist())) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 1), (2, 2)]
    assert s.with_self_loops() is s
    w = s.gcn_norm()
    deg = s.in_degree
    np.testing.assert_allclose(w, 1 / np.sqrt(deg[dst] * s.out_degree[src]), rtol=1e-6)


def test_views_are_read_only_and_signature_tracks_content():
    g = Graph.from_edges([0, 1], [1, 0], 2)
    with pytest.raises(ValueError):
        g.view().indices[0] = 1
    assert g.signature() == Graph.from_edges([1, 0], [0, 1], 2).signature()
    assert g.signature() != Graph.from_edges([0], [1], 2).signature()


@pytest.mark.parametrize("src,dst,n,message", [
    ([0, 5], [1, 0], 3, r"src node ids must lie in \[0, 3\) \(got range \[0, 5\]\)"),
    ([0, 1], [1, -1], 3, r"dst node ids must lie in \[0, 3\)"),
    ([0, 1], [1], 3, "src and dst must have the same length"),
])
def test_bad_edges_are_refused(src, dst, n, message):
    with pytest.raises(GraphError, match=message):
        Graph.from_edges(src, dst, n)


def test_indices_must_be_int32_or_int64():
    with pytest.raises(GraphError, match="int32 or int64"):
        Graph(np.array([0, 1]), np.array([0], dtype=np.int16), 1)


def test_gcn_scales_factorise_gcn_norm_and_are_cached_read_only():
    rng = np.random.default_rng(3)
    g = Graph.from_edges(rng.integers(0, 30, 120), rng.integers(0, 30, 120), 31).with_self_loops()  # directed
    dst_scale, src_scale = g.gcn_scales()
    src, dst = g.edges()
    assert dst_scale.dtype == src_scale.dtype == np.float32 and dst_scale.shape == (31,)
    np.testing.assert_allclose(dst_scale[dst] * src_scale[src], g.gcn_norm(), rtol=3e-7)
    np.testing.assert_array_equal(dst_scale, 1 / np.sqrt(np.maximum(g.in_degree, 1)))
    np.testing.assert_array_equal(src_scale, 1 / np.sqrt(np.maximum(g.out_degree, 1)))
    assert g.gcn_scales() is g.gcn_scales() and not dst_scale.flags.writeable and not src_scale.flags.writeable


def _block(index_dtype=np.int64):
    # 2 destinations, 5 sources; destination 1 has no sampled neighbour
    return Graph.from_edges([4, 0, 2, 4], [0, 0, 0, 0], 2, index_dtype, num_src=5)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_block_views_are_rectangular_and_transpose_back(index_dtype):
    b = _block(index_dtype)
    assert (b.num_dst, b.num_src, b.num_nodes, b.is_block) == (2, 5, 2, True)
    f, t = b.view(), b.view(transposed=True)
    assert (f.num_rows, f.num_cols, t.num_rows, t.num_cols) == (2, 5, 5, 2)
    assert f.row_degree.tolist() == [4, 0] and f.col_degree.tolist() == [1, 0, 1, 0, 2]
    assert b.in_degree.shape == (2,) and b.out_degree.shape == (5,)
    assert t.indptr.tolist() == [0, 1, 1, 2, 2, 4] and t.indices.dtype == index_dtype
    csrc, cdst = b.edges()
    for row in range(5):
        for p in range(int(t.indptr[row]), int(t.indptr[row + 1])):
            assert csrc[t.edge_ids[p]] == row and cdst[t.edge_ids[p]] == t.indices[p]


def test_block_self_loops_cover_destinations_only_and_norms_have_both_sizes():
    s = _block().with_self_loops()
    assert s.num_src == 5 and s.num_edges == 5
    src, dst = s.edges()
    assert sorted(zip(src.tolist(), dst.tolist())) == [(0, 0), (1, 1), (2, 0), (4, 0), (4, 0)]
    dst_scale, src_scale = s.gcn_scales()
    assert dst_scale.shape == (2,) and src_scale.shape == (5,)
    np.testing.assert_allclose(s.gcn_norm(), dst_scale[dst] * src_scale[src], rtol=1e-6)


def test_square_graph_is_not_a_block_and_num_src_enters_the_signature():
    g = Graph.from_edges([0, 1], [1, 0], 2)
    assert (g.num_src, g.num_dst, g.is_block) == (2, 2, False)
    assert g.signature() == Graph.from_edges([0, 1], [1, 0], 2, num_src=2).signature()
    assert g.signature() != Graph.from_edges([0, 1], [1, 0], 2, num_src=3).signature()
    assert _block().to_index_dtype(np.int32).num_src == 5


def test_empty_block_has_views_of_both_sizes():
    e = Graph.from_edges([], [], 3, num_src=7)
    assert e.num_edges == 0 and e.view(transposed=True).indptr.tolist() == [0] * 8
    assert e.out_degree.tolist() == [0] * 7 and e.gcn_scales()[1].shape == (7,)


@pytest.mark.parametrize("src,dst,n,s,message", [
    ([0, 5], [1, 0], 2, 5, r"src node ids must lie in \[0, 5\) \(got range \[0, 5\]\)"),
    ([0, 4], [2, 0], 2, 5, r"dst node ids must lie in \[0, 2\)"),
    ([0], [0], 3, 2, r"num_src must be at least num_nodes=3 \(got num_src=2\)"),
])
def test_bad_blocks_are_refused(src, dst, n, s, message):
    with pytest.raises(GraphError, match=message):
        Graph.from_edges(src, dst, n, num_src=s)
