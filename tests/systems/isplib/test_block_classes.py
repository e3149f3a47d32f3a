"""isplib's tuning key for sampled blocks: one class per (rows, mean degree) power of two (Note [block classes])."""
from __future__ import annotations

import numpy as np

from gnnbench.runtime.graph import Graph
from gnnbench.systems.isplib.tuning_cache import graph_key


def _block(num_dst, num_src, degree, seed=0):
    rng = np.random.default_rng(seed)
    dst = np.repeat(np.arange(num_dst), degree)
    return Graph.from_edges(rng.integers(0, num_src, dst.shape[0]), dst, num_dst, num_src=num_src)


def test_blocks_of_one_class_share_a_key_and_a_square_graph_keeps_its_signature():
    a, b = _block(1100, 9000, 10, seed=1), _block(1500, 12000, 12, seed=2)
    assert graph_key(a) == graph_key(b) == "block:r1024:d8"
    assert graph_key(_block(2048, 9000, 10)) == "block:r2048:d8"
    square = Graph.from_edges(np.array([0, 1]), np.array([1, 0]), 2)
    assert graph_key(square) == square.signature()
