"""gnnbench/runtime/csr_loops.py: self loops added in one pass give what sorting every edge again gave."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.runtime.csr_loops import INSERTION_LIMIT, add_self_loops
from gnnbench.runtime.graph import Graph


def _by_sorting(indptr, indices, num_dst, num_src):
    """The old way (Note [self loops in one pass]): every edge and the missing loops through from_edges."""
    dst = np.repeat(np.arange(num_dst), np.diff(indptr))
    src = indices.astype(np.int64)
    has = np.zeros(num_dst, dtype=bool)
    has[src[src == dst]] = True
    missing = np.flatnonzero(~has)
    g = Graph.from_edges(np.r_[src, missing], np.r_[dst, missing], num_dst, indices.dtype, num_src=num_src)
    return g.indptr, g.indices


@pytest.mark.parametrize("shuffled", [False, True])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_one_pass_equals_sorting_every_edge(shuffled, dtype):
    """Square and rectangular graphs, rows sorted (a full graph) or in draw order (a sampled block), with loops
    already on some rows, parallel edges and empty rows."""
    rng = np.random.default_rng(3)
    for trial in range(200):
        num_dst = int(rng.integers(1, 40))
        num_src = num_dst + int(rng.integers(0, 30)) * (trial % 2)
        edges = int(rng.integers(0, 200))
        g = Graph.from_edges(rng.integers(0, num_src, edges), rng.integers(0, num_dst, edges), num_dst, dtype,
                             num_src=num_src)
        indices = g.indices.copy()
        if shuffled:
            for i in range(num_dst):
                rng.shuffle(indices[g.indptr[i]:g.indptr[i + 1]])
        want_indptr, want_indices = _by_sorting(g.indptr, indices, num_dst, num_src)
        indptr, out = add_self_loops(g.indptr, indices, num_dst)
        np.testing.assert_array_equal(indptr, want_indptr)
        np.testing.assert_array_equal(out, want_indices)
        assert out.dtype == np.dtype(dtype)


@pytest.mark.parametrize("length", [INSERTION_LIMIT - 1, INSERTION_LIMIT, INSERTION_LIMIT + 1, 4 * INSERTION_LIMIT])
def test_unsorted_rows_on_both_sides_of_the_insertion_limit_come_out_sorted(length):
    """Note [self loops in one pass]: short rows are sorted by insertion, long ones by ndarray.sort."""
    rng = np.random.default_rng(length)
    num_dst, num_src = 3, 50
    indptr = np.arange(num_dst + 1) * length
    indices = rng.integers(0, num_src, num_dst * length)  # draw order, repeats and maybe a loop
    want_indptr, want_indices = _by_sorting(indptr, indices, num_dst, num_src)
    got_indptr, got_indices = add_self_loops(indptr, indices, num_dst)
    np.testing.assert_array_equal(got_indptr, want_indptr)
    np.testing.assert_array_equal(got_indices, want_indices)


def test_a_block_from_the_sampler_gets_one_loop_per_destination():
    g = Graph(np.array([0, 2, 2, 3]), np.array([4, 1, 2]), 3, num_src=5)  # row 0 in draw order, row 1 empty
    s = g.with_self_loops()
    assert s.indptr.tolist() == [0, 3, 4, 5] and s.indices.tolist() == [0, 1, 4, 1, 2]
    assert s.num_src == 5 and s.with_self_loops() is s
