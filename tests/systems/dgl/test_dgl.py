"""The `dgl` system: conformance in float32 (float64 runs in tests/check/test_conformance.py), edge ids, availability."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

if importlib.util.find_spec("dgl") is None:
    pytest.skip("DGL is not installed (pip install dgl==2.1.0 pandas)", allow_module_level=True)

from gnnbench.check.conformance import adversarial_graphs, run_suite  # noqa: E402
from gnnbench.frameworks.torch_frontend import TorchFrontend  # noqa: E402
from gnnbench.runtime.glue import BoundGraph  # noqa: E402
from gnnbench.runtime.registry import load_system  # noqa: E402


@pytest.mark.parametrize("operator", ["spmm", "sddmm", "edge_softmax"])
def test_conformance_float32(operator):
    results, _ = run_suite("dgl", operator, profile="fast", dtype="float32", threads=1)
    assert all(r.status == "passed" for r in results), [f for r in results for f in r.failures]


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_dgl_edge_ids_are_canonical_on_both_views(index_dtype):
    # Note [DGL edge ids]: DGL's edge e is gnnbench's edge e, whichever orientation
    from gnnbench.systems.dgl.kernels import prepare

    graph = adversarial_graphs(index_dtype)["duplicates"]
    src, dst = graph.edges()
    forward, backward = prepare(graph.view()), prepare(graph.view(transposed=True))
    u, v = forward.graph.edges(order="eid")
    np.testing.assert_array_equal(u.numpy(), src)
    np.testing.assert_array_equal(v.numpy(), dst)
    u, v = backward.graph.edges(order="eid")
    np.testing.assert_array_equal(u.numpy(), dst)   # the transposed view's DGL graph runs j <- i
    np.testing.assert_array_equal(v.numpy(), src)
    assert forward.graph.idtype == (torch.int32 if index_dtype == np.int32 else torch.int64)
    assert set(forward.graph.formats()["created"]) == {"coo", "csr", "csc"}


def test_max_ties_go_to_the_first_edge_and_libxsmm_is_restored():
    # Note [libxsmm ties]: DGL's libxsmm float32 max breaks exact ties to the last edge
    from gnnbench.peers.dgl_shim import dgl

    before = dgl.is_libxsmm_enabled()
    graph = adversarial_graphs()["duplicates"]
    bound = BoundGraph(graph, load_system("dgl"))
    x = torch.ones(graph.num_nodes, 1, 3, requires_grad=True)
    w = torch.ones(graph.num_edges, 1, requires_grad=True)
    out = TorchFrontend().spmm(bound, x, w, reduce="max")
    (grad_w,) = torch.autograd.grad(out.sum(), [w])
    _, dst = graph.edges()
    first = np.searchsorted(dst, np.unique(dst))            # each row's first edge wins every tie
    expected = np.zeros(graph.num_edges)
    expected[first] = 3.0
    np.testing.assert_array_equal(grad_w[:, 0].numpy(), expected)
    assert dgl.is_libxsmm_enabled() == before


def test_systems_lists_exactly_what_is_missing(monkeypatch):
    from gnnbench.cli import systems
    from gnnbench.runtime.registry import forget_systems

    real = importlib.util.find_spec
    hidden = {"dgl", "pandas"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in hidden else real(name, *a))
    forget_systems()
    try:
        rows = {r["name"]: r for r in systems.run()}
    finally:
        monkeypatch.undo()
        forget_systems()
    assert not rows["dgl"]["available"]
    assert rows["dgl"]["reason"] == "needs the Python package(s) dgl, pandas (pip install dgl pandas)"
    assert rows["mkl"]["available"]


def test_report_names_the_dgl_version():
    from gnnbench.systems.dgl.kernels import report

    assert report()["dgl_version"] == "2.1.0"
