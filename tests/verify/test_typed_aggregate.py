"""The typed operator (Note [typed aggregation] in gnnbench.api): the oracle's kernels, the composed form, the
boundary, and verify catching a kernel that indexes the relations wrongly, naming the operator and the relation."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from gnnbench.check.conformance import run_suite
from gnnbench.errors import BoundaryError
from gnnbench.frameworks import composed
from gnnbench.frameworks.torch_frontend import TorchFrontend
from gnnbench.runtime.glue import BoundGraph
from gnnbench.runtime.graph import Graph
from gnnbench.runtime.registry import load_system

DEMO_SYSTEMS = Path(__file__).resolve().parents[1] / "demo_systems"


@pytest.fixture
def demos(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))


def _relation_graph(index_dtype=np.int64):
    """8 sources, 5 destinations (S > N would be a block; a relation view has any S): destination 4 no edge."""
    src = np.array([0, 1, 2, 3, 4, 5, 6, 7, 0, 7, 2])
    dst = np.array([0, 0, 1, 1, 2, 2, 3, 3, 3, 0, 0])
    return Graph.from_edges(src, dst, 5, index_dtype, num_src=8, bipartite=True)


def _dense(graph, x, weight, norm, etype):
    """The operator's equation edge by edge in float64 (canonical edge order: CSR by destination)."""
    dst = np.repeat(np.arange(graph.num_dst), np.diff(graph.indptr.astype(np.int64)))
    out = np.zeros((graph.num_dst, x.shape[1], weight.shape[2]))
    for e, (j, i) in enumerate(zip(graph.indices.astype(np.int64), dst)):
        out[i] += norm[e][:, None] * (x[j] @ weight[etype[e]])
    return out


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_reference_kernels_are_the_equation_and_its_gradients(index_dtype):
    graph = _relation_graph(index_dtype)
    rng = np.random.default_rng(0)
    x, weight = rng.normal(size=(8, 2, 3)), rng.normal(size=(4, 3, 5))   # relation 3 has no edge
    norm, etype = rng.normal(size=(graph.num_edges, 2)), rng.integers(0, 3, graph.num_edges)
    F = TorchFrontend(dtype="float64")
    bound = BoundGraph(graph, load_system("reference"))
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, weight)]
    out = F.typed_aggregate(bound, *leaves, torch.tensor(norm), torch.tensor(etype))
    assert np.allclose(out.detach().numpy(), _dense(graph, x, weight, norm, etype), rtol=1e-12, atol=1e-12)
    assert np.all(out.detach().numpy()[4] == 0)
    g = rng.normal(size=tuple(out.shape))
    got = torch.autograd.grad(out, leaves, torch.tensor(g))
    # the gradients of the equation, edge by edge
    want_x = np.zeros_like(x)
    want_w = np.zeros_like(weight)
    dst = np.repeat(np.arange(graph.num_dst), np.diff(graph.indptr.astype(np.int64)))
    for e, (j, i) in enumerate(zip(graph.indices.astype(np.int64), dst)):
        want_x[j] += norm[e][:, None] * (g[i] @ weight[etype[e]].T)
        want_w[etype[e]] += np.einsum("hd,hk->dk", norm[e][:, None] * x[j], g[i])
    assert np.allclose(got[0].numpy(), want_x, rtol=1e-12, atol=1e-12)
    assert np.allclose(got[1].numpy(), want_w, rtol=1e-12, atol=1e-12)
    assert np.all(got[1].numpy()[3] == 0)   # a relation without edges gets a zero gradient


def test_the_composed_form_equals_the_kernel_forward_and_backward():
    graph = _relation_graph()
    rng = np.random.default_rng(1)
    x, weight = rng.normal(size=(8, 1, 3)), rng.normal(size=(3, 3, 2))
    norm, etype = torch.tensor(rng.normal(size=(graph.num_edges, 1))), torch.tensor(rng.integers(0, 3, graph.num_edges))
    F = TorchFrontend(dtype="float64")
    bound = BoundGraph(graph, load_system("reference"))
    results = []
    for run in (lambda *a: F.typed_aggregate(bound, *a), lambda *a: composed.typed_aggregate(F, bound, *a)):
        leaves = [torch.tensor(a, requires_grad=True) for a in (x, weight)]
        out = run(*leaves, norm, etype)
        results.append((out.detach(), *torch.autograd.grad(out, leaves, torch.ones_like(out))))
    for kernel, composition in zip(*results):
        assert torch.allclose(kernel, composition, rtol=1e-12, atol=1e-12)


def test_a_system_without_the_kernel_runs_it_composed_and_says_so():
    graph = _relation_graph()
    F = TorchFrontend(dtype="float64")
    bound = BoundGraph(graph, load_system("mkl"))   # spmm, sddmm, edge_softmax; no typed_aggregate
    assert bound.system.find("typed_aggregate", {}) is None
    ones = lambda *shape: torch.ones(*shape, dtype=torch.float64)  # noqa: E731
    out = F.typed_aggregate(bound, ones(8, 1, 3), ones(2, 3, 4), ones(graph.num_edges, 1),
                            torch.zeros(graph.num_edges, dtype=torch.int64))
    assert out.shape == (5, 1, 4) and bound.composed == {"typed_aggregate"}


def test_a_relation_index_beyond_the_weights_is_refused_at_the_boundary():
    graph = _relation_graph()
    bound = BoundGraph(graph, load_system("reference"))
    etype = torch.full((graph.num_edges,), 2, dtype=torch.int64)
    with pytest.raises(BoundaryError, match=r"etype.*expected values in \[-1, R=2\)"):
        TorchFrontend(dtype="float32").typed_aggregate(bound, torch.ones(8, 1, 3), torch.ones(2, 3, 4),
                                                       torch.ones(graph.num_edges, 1), etype)


def test_reference_passes_its_own_typed_cases_in_float32():
    results, _ = run_suite("reference", operator="typed_aggregate", profile="sampled", dtype="float32", threads=1)
    assert [(r.operator, r.status) for r in results] == [
        ("typed_aggregate(R=1)", "passed"), ("typed_aggregate(R=3)", "passed"), ("typed_aggregate(R=64)", "passed")]
    assert all(r.cases > 10 for r in results)


def test_the_wrong_weight_for_the_last_relation_is_caught_and_named(demos):
    """demo_last_relation takes W[R-2] for the last relation; with 3 relations verify names etype = 2 likewise."""
    (many,), _ = run_suite("demo_last_relation", profile="sampled", threads=1, labels=["typed_aggregate(R=64)"])
    assert many.status == "failed"
    assert many.failures[0].startswith("typed_aggregate(R=64) output on 'isolated' (int32, F=17, H=3, float64): ")
    assert all(f.endswith("; every wrong element involves etype = 63 (of R=64)") for f in many.failures)


def test_a_system_without_the_kernel_has_its_composition_verified():
    """Note [compositions verified]: mkl has no typed kernel; its per-relation spmm composition is checked."""
    (result,), _ = run_suite("mkl", operator="typed_aggregate", profile="sampled", dtype="float32", threads=1,
                             labels=["typed_aggregate(R=3)"])
    assert (result.status, result.detail) == ("passed", "composed from mkl's own operators")
    assert result.cases > 10


def test_the_fast_whole_suite_leaves_a_composition_to_the_full_suite():
    (result,), _ = run_suite("mkl", profile="fast", dtype="float32", threads=1, labels=["typed_aggregate(R=3)"])
    assert (result.status, result.reason) == (
        "skipped", "not implemented by mkl (its composition is checked by the full suite, or with --operator)")
