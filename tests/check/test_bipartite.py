"""Bipartite blocks in the conformance suite: the blocks themselves and the sampler's, reference on them against a
dense product, the boundary refusing an x by destinations, and a square-only kernel and a per-shape cache caught."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from gnnbench.check.bipartite import BIPARTITE_GRAPHS, SAMPLED_BLOCKS, bipartite_graphs, sampled_blocks
from gnnbench.check.conformance import run_suite
from gnnbench.errors import BoundaryError
from gnnbench.frameworks import get_frontend
from gnnbench.runtime.glue import BoundGraph
from gnnbench.runtime.registry import load_system

DEMO_SYSTEMS = Path(__file__).resolve().parents[1] / "demo_systems"


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_blocks_isolate_the_hazards_of_sampled_layers(index_dtype):
    g = bipartite_graphs(index_dtype)
    assert tuple(g) == BIPARTITE_GRAPHS and all((b.is_block or b.bipartite) and b.index_dtype == index_dtype
                                                for b in g.values())
    narrow = g["relation_narrow"]   # a typed graph's relation: fewer sources than destinations, some without edges
    assert narrow.bipartite and narrow.num_src < narrow.num_dst and (narrow.in_degree == 0).any()
    assert g["relation_no_edges"].num_edges == 0
    wide = g["block_wide"]
    assert wide.num_src == 50 * wide.num_dst and wide.indices.max() >= wide.num_dst
    assert (g["block_unsampled"].in_degree == 0).sum() == 8 and g["block_no_edges"].num_edges == 0
    assert g["block_fanout_10k"].in_degree.max() == 10_000
    assert bipartite_graphs(index_dtype)["block_wide"].signature() == wide.signature()


def test_reference_on_a_block_is_the_dense_product_and_its_transpose():
    graph = bipartite_graphs()["block_wide"]
    src, dst = graph.edges()
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((graph.num_src, 1, 3)), rng.standard_normal((graph.num_edges, 1))
    g = rng.standard_normal((graph.num_dst, 1, 3))
    dense = np.zeros((graph.num_dst, graph.num_src))
    np.add.at(dense, (dst, src), w[:, 0])
    F = get_frontend("torch", "cpu", "float64")
    bound = BoundGraph(graph, load_system("reference"))
    xt, wt = torch.from_numpy(x).requires_grad_(True), torch.from_numpy(w).requires_grad_(True)
    out = F.spmm(bound, xt, wt, reduce="sum")
    out.backward(torch.from_numpy(g))
    np.testing.assert_allclose(out.detach().numpy()[:, 0], dense @ x[:, 0], rtol=1e-12)
    np.testing.assert_allclose(xt.grad.numpy()[:, 0], dense.T @ g[:, 0], rtol=1e-12)
    np.testing.assert_allclose(wt.grad.numpy()[:, 0], (x[src, 0] * g[dst, 0]).sum(-1), rtol=1e-12)


def test_the_boundary_refuses_x_by_destinations_on_a_block():
    graph = bipartite_graphs()["block_wide"]
    F = get_frontend("torch", "cpu", "float64")
    bound = BoundGraph(graph, load_system("reference"))
    with pytest.raises(BoundaryError) as info:
        F.spmm(bound, torch.zeros(graph.num_dst, 1, 3, dtype=torch.float64), reduce="sum")
    assert str(info.value) == ("reference.spmm_sum: argument 'x' has shape (12, 1, 3); expected [S, H, D] with S=600 "
                               "(axis 0 should be 600)")


def test_a_kernel_that_reads_x_by_destinations_is_caught_on_blocks_only(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))
    results, _ = run_suite("demo_dst_rows", profile="fast", threads=1,
                           labels=["spmm(reduce=sum)", "spmm(reduce=mean, weight)", "spmm(reduce=max)"])
    plain, mean, untouched = results
    assert (plain.status, mean.status, untouched.status) == ("failed", "failed", "passed")
    assert plain.failed_graphs == ["block_wide", "block_unsampled", "block_fanout_10k", "block_karate_l0",
                                   "block_synthetic_l1", "block_synthetic_l1_again"]
    assert plain.failures[0] == ("spmm(reduce=sum) output on 'block_wide' (int32, F=17, H=3, float64): raised "
                                 "IndexError: index 317 is out of bounds for dimension 0 with size 12")


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sampled_blocks_are_every_layer_of_a_batch_as_the_sampler_draws_it(index_dtype):
    g = sampled_blocks(index_dtype)
    assert tuple(g) == SAMPLED_BLOCKS and all(b.is_block and b.index_dtype == index_dtype for b in g.values())
    assert g["block_karate_l0"].num_dst == g["block_karate_l1"].num_src   # layer 0's destinations feed layer 1
    assert g["block_synthetic_l0"].num_dst == g["block_synthetic_l1"].num_src
    degree = g["block_synthetic_l1"].in_degree
    assert (degree == 0).any() and ((degree > 0) & (degree < 4)).any() and degree.max() == 4   # fanout 4
    one, again = g["block_synthetic_l1"], g["block_synthetic_l1_again"]
    assert (again.num_dst, again.num_src) == (one.num_dst, one.num_src) and np.array_equal(again.indptr, one.indptr)
    assert again.signature() != one.signature()


def test_a_kernel_wrong_only_on_blocks_is_caught_by_verify_naming_operator_and_block(monkeypatch):
    """demo_block_square drops the edges from sources past the destinations and raises nothing: every square
    graph passes, every block with such a source fails (block_no_edges has none; nor the mean's)."""
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))
    (plain,), _ = run_suite("demo_block_square", profile="fast", threads=1, labels=["spmm(reduce=sum)"])
    assert plain.status == "failed"
    assert plain.failed_graphs == ["block_wide", "block_unsampled", "block_fanout_10k", "block_karate_l0",
                                   "block_synthetic_l1", "block_synthetic_l1_again"]
    assert plain.failures[0].startswith("spmm(reduce=sum) output on 'block_wide' (int32, F=17, H=3, float64): "
                                        "max abs err ")


def test_a_kernel_caching_per_shape_is_caught_on_the_second_block_of_one_shape(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))
    (plain,), _ = run_suite("demo_shape_cache", profile="fast", threads=1, labels=["spmm(reduce=sum)"])
    assert plain.status == "failed" and plain.failed_graphs == ["block_synthetic_l1_again"]
    assert plain.failures[0].startswith("spmm(reduce=sum) output on 'block_synthetic_l1_again' (int32, F=17, H=3, "
                                        "float64): max abs err ")
