"""benchmarks/studies/bench_prepare.py: its baseline is the serial sort the parallel one must equal, and it writes its table."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.runtime.csr_transpose import transpose_csr
from gnnbench.runtime.graph import Graph


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_prepare")


def test_the_one_core_baseline_equals_the_parallel_transpose(bench):
    rng = np.random.default_rng(3)
    g = Graph.from_edges(rng.integers(0, 50, 900), rng.integers(0, 50, 900), 53)
    args = (np.asarray(g.indptr), np.asarray(g.indices), g.num_nodes)
    for a, b in zip(bench._serial_transpose(*args), transpose_csr(*args)):
        assert np.array_equal(a, b)


def test_table_gives_medians_and_per_round_ratios_with_their_range(bench):
    samples = {"transpose, one core": [2.0, 3.0, 4.0], "transpose, parallel": [1.0, 1.0, 4.0],
               "isplib prepare": [1.0, 2.0, 3.0], "DGL build": [2.0, 2.0, 2.0]}
    text = bench.render("rmat 16M", samples, [1.0, 2.5], 2)
    assert "3 interleaved rounds in one process, numba threads 2, load 1.0 before and 2.5 after" in text
    assert "| transpose, parallel | 1.000 | 1.00, 1.00, 4.00 |" in text
    assert "- transpose, one core / parallel: 2.00x (1.00-3.00)" in text  # per-round ratios 2, 3, 1
    assert "- isplib prepare / DGL build: 1.00x (0.50-1.50)" in text
