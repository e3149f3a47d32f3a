"""Native baselines: same initial function as gnnbench's models, and they train through the harness.

See Note [native model parity] in gnnbench/peers/__init__.py.
"""
from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
import torch

from gnnbench.datasets import load_dataset
from gnnbench.errors import UserError
from gnnbench.frameworks import get_frontend
from gnnbench.runtime.glue import BoundGraph
from gnnbench.run.harness import RunConfig, train
from gnnbench.models import MODELS, get_model
from gnnbench.peers import build_native
from gnnbench.runtime.registry import load_system

#: the homogeneous models (the relational ones train on typed datasets: tests/relational)
HOMOGENEOUS = [name for name, cls in MODELS.items() if not cls.typed]

DATASET = "sbm:nodes=150,classes=3,features=8,degree=6,seed=1"
NATIVES = [pytest.param("pyg-native", marks=pytest.mark.skipif(importlib.util.find_spec("torch_geometric") is None,
                                                                 reason="PyG is not installed")),
           pytest.param("dgl-native", marks=pytest.mark.skipif(importlib.util.find_spec("dgl") is None,
                                                                 reason="DGL is not installed"))]


def _setup(model_name: str, dtype: str):
    F = get_frontend("torch", "cpu", dtype)
    data = load_dataset(DATASET)
    cls = get_model(model_name)
    graph = data.graph.with_self_loops() if cls.self_loops else data.graph
    model = cls(data.features.shape[1], data.num_classes)
    return F, data, graph, model, model.init_params(3), F.tensor(data.features)


@pytest.mark.parametrize("system", NATIVES)
@pytest.mark.parametrize("model_name", HOMOGENEOUS)
def test_initial_forward_equals_reference(system, model_name):
    F, data, graph, model, initial, x = _setup(model_name, "float64")
    params = {k: F.parameter(v) for k, v in initial.items()}
    expected = model.forward(F, params, BoundGraph(graph, load_system("reference")), x, training=False)
    native_params, forward = build_native(system, model, graph, initial, F, x)
    # GCN's edge weight is float32 in gnnbench (Graph.gcn_norm); the libraries normalise in float64
    torch.testing.assert_close(forward(False), expected, rtol=1e-6, atol=1e-6)
    assert sum(p.numel() for p in native_params.values()) == sum(v.size for v in initial.values())
    assert all(p.requires_grad and p.dtype == torch.float64 for p in native_params.values())


@pytest.mark.parametrize("system", NATIVES)
@pytest.mark.parametrize("model_name", HOMOGENEOUS)
def test_trains_through_the_harness_like_reference(system, model_name):
    spec = dict(model=model_name, dataset=DATASET, epochs=6, warmup=1, threads=1)
    row, ref = train(RunConfig(system, **spec)), train(RunConfig("reference", **spec))
    assert row["status"] == "ok" and row["system"] == system
    assert len(row["epoch_times"]) == 5 and all(t > 0 for t in row["epoch_times"])
    # same parameters, same dropout masks (the layers' own init does not touch the RNG): same first loss
    assert math.isclose(row["first_loss"], ref["first_loss"], rel_tol=1e-4)
    assert math.isclose(row["final_loss"], ref["final_loss"], rel_tol=1e-3)    # and the same trajectory
    assert 0.0 <= row["test_accuracy"] <= 1.0


def test_build_native_needs_features_and_a_known_name():
    F, data, graph, model, initial, x = _setup("gcn", "float32")
    with pytest.raises(UserError, match="needs the node features"):
        build_native("pyg-native", model, graph, initial, F)
    with pytest.raises(UserError, match="unknown native baseline 'tf-native'; choose one of: pyg-native, dgl-native"):
        build_native("tf-native", model, graph, initial, F, x)


def test_a_model_without_a_layer_for_the_library_is_refused():
    F, data, graph, model, initial, x = _setup("gcn", "float32")
    model.name, model.dgl = "gcnii", None
    with pytest.raises(UserError, match=r"^model 'gcnii' declares no DGL layer \(its 'dgl' is None\), so 'dgl-native' "
                                        r"cannot build it; "):
        build_native("dgl-native", model, graph, initial, F, x)


def test_directed_graph_gcn_norm_difference_is_pyg_only():
    """On a directed graph PyG normalises by in-degrees only; DGL's norm='both' is gnnbench's."""
    from gnnbench.runtime.graph import Graph

    src, dst = np.array([0, 0, 0, 1, 2, 3]), np.array([1, 2, 3, 0, 0, 1])
    graph = Graph.from_edges(src, dst, 4).with_self_loops()
    F = get_frontend("torch", "cpu", "float64")
    model = get_model("gcn")(2, 2)
    initial = model.init_params(0)
    x = F.tensor(np.arange(8, dtype=np.float64).reshape(4, 2))
    params = {k: F.parameter(v) for k, v in initial.items()}
    expected = model.forward(F, params, BoundGraph(graph, load_system("reference")), x, training=False)
    if importlib.util.find_spec("dgl") is not None:
        _, dgl_forward = build_native("dgl-native", model, graph, initial, F, x)
        torch.testing.assert_close(dgl_forward(False), expected, rtol=1e-6, atol=1e-6)
    _, pyg_forward = build_native("pyg-native", model, graph, initial, F, x)
    assert not torch.allclose(pyg_forward(False), expected, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("system,library", [("pyg-native", "torch_geometric.nn"), ("dgl-native", "dgl.nn")])
def test_the_library_is_imported_when_the_baseline_loads_not_in_its_timed_preparation(system, library):
    """A kernel system's import is loading; a native baseline's must be too, or its prepare time holds it."""
    import subprocess
    import sys

    if importlib.util.find_spec(library.split(".")[0]) is None:
        pytest.skip(f"{library.split('.')[0]} is not installed")
    code = ("import sys\nfrom gnnbench.run.config import make_config\nfrom gnnbench.peers import NativeBaseline\n"
            f"native = NativeBaseline(make_config({{'system': {system!r}, 'model': 'gcn', 'dataset': 'karate'}}))\n"
            f"assert {library!r} not in sys.modules\nnative.load()\nprint({library!r} in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
