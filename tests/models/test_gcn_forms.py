"""GCN's two normalisation forms (Note [GCN as node scales]): same function, selectable, stated once."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.errors import UserError
from gnnbench.models import GCN, SAGE
from gnnbench.run.config import make_config
from gnnbench.run.harness import RunConfig
from gnnbench.run.resolved import resolve_hyperparameters, stored_hyperparameters


def test_node_form_is_the_default_and_the_edge_form_is_selectable_from_the_run_config():
    _, hyper = resolve_hyperparameters(RunConfig("reference", "gcn", "karate"))
    assert hyper.normalisation == "node"
    spec = RunConfig("reference", "gcn", "karate", normalisation="edge")
    _, hyper = resolve_hyperparameters(spec)
    assert stored_hyperparameters(spec, hyper)["normalisation"] == "edge"
    assert RunConfig.from_dict(RunConfig("reference", "sage", "karate").as_dict()).normalisation is None


def test_models_without_the_option_neither_store_nor_accept_it():
    spec = RunConfig("reference", "sage", "karate")
    assert "normalisation" not in stored_hyperparameters(spec, resolve_hyperparameters(spec)[1])
    with pytest.raises(UserError, match="--normalisation applies to GCN only"):
        resolve_hyperparameters(RunConfig("reference", "sage", "karate", normalisation="edge"))
    with pytest.raises(UserError, match="--normalisation must be one of node, edge"):
        make_config({"system": "reference", "model": "gcn", "normalisation": "both"})
    assert SAGE.defaults.normalisation is None


@pytest.mark.parametrize("framework", ["torch", "tensorflow"])
@pytest.mark.parametrize("form", ["node", "edge"])
def test_no_form_computes_a_weight_gradient(framework, form):
    """GCN's normalisation is a constant: one training step calls spmm and its x-backward, never spmm_weight_backward."""
    from dataclasses import replace

    from gnnbench.datasets import load_dataset
    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.kernel_clock import measuring
    from gnnbench.runtime.registry import load_system

    F = get_frontend(framework, "cpu", "float32")
    karate = load_dataset("karate")
    model = GCN(karate.features.shape[1], karate.num_classes, replace(GCN.defaults, normalisation=form))
    params = {k: F.parameter(v) for k, v in model.init_params(0).items()}
    bound = BoundGraph(karate.graph.with_self_loops(), load_system("reference", framework, "cpu"))
    optimizer = F.optimizer(params, 0.01, 0.0)
    with measuring() as clock:
        F.zero_grad(optimizer)
        logits = model.forward(F, params, bound, F.tensor(karate.features), True)
        F.backward(F.sum(F.sum(logits, 1), 0))
        F.step(optimizer)
    assert clock.calls.get("spmm_sum") == 2 and clock.calls.get("spmm_sum_backward") == 2, clock.calls
    assert "spmm_weight_backward" not in clock.calls


@pytest.mark.parametrize("framework", ["torch", "tensorflow"])
def test_both_forms_give_the_same_logits_on_reference(framework):
    from dataclasses import replace

    from gnnbench.datasets import load_dataset
    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    F = get_frontend(framework, "cpu", "float32")
    karate = load_dataset("karate")
    graph = karate.graph.with_self_loops()
    logits = {}
    for form in ("node", "edge"):
        model = GCN(karate.features.shape[1], karate.num_classes, replace(GCN.defaults, normalisation=form))
        params = {k: F.parameter(v) for k, v in model.init_params(0).items()}
        bound = BoundGraph(graph, load_system("reference", framework, "cpu"))
        with F.no_grad():
            logits[form] = np.asarray(model.forward(F, params, bound, F.tensor(karate.features), False))
    np.testing.assert_allclose(logits["node"], logits["edge"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("form", ["node", "edge"])
@pytest.mark.parametrize("hidden, widths", [(8, [8, 2]), (64, [34, 2])])  # karate: 34 features, 2 classes
def test_gcn_aggregates_at_the_narrower_width_and_computes_the_same_function(monkeypatch, form, hidden, widths):
    """A (X W) = (A X) W: a widening layer aggregates first, as DGL's GraphConv does (issue 19: Reddit, hidden 16)."""
    from dataclasses import replace

    from gnnbench.datasets import load_dataset
    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    F = get_frontend("torch", "cpu", "float64")
    karate = load_dataset("karate")
    graph = karate.graph.with_self_loops()
    model = GCN(34, 2, replace(GCN.defaults, hidden=hidden, normalisation=form))
    init = model.init_params(0)
    seen = []
    spmm = F.spmm
    monkeypatch.setattr(F, "spmm", lambda g, x, *a, **k: (seen.append(x.shape[-1]), spmm(g, x, *a, **k))[1])
    with F.no_grad():
        logits = np.asarray(model.forward(F, {k: F.parameter(v) for k, v in init.items()},
                                          BoundGraph(graph, load_system("reference", "torch", "cpu")),
                                          F.tensor(karate.features), False))
    assert seen == widths
    dense = np.zeros((34, 34))
    np.add.at(dense, (graph.edges()[1], graph.edges()[0]), 1.0)  # row = destination
    norm = dense / np.sqrt(dense.sum(1))[:, None] / np.sqrt(dense.sum(0))[None, :]
    h = np.maximum(norm @ karate.features @ init["conv0.weight"] + init["conv0.bias"], 0)
    np.testing.assert_allclose(logits, norm @ h @ init["conv1.weight"] + init["conv1.bias"], rtol=1e-5, atol=1e-7)
