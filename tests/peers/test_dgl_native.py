"""gnnbench/peers/dgl_native.py: DGL's own layers hold gnnbench's parameters in the documented layout."""
from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("dgl") is None:  # DGL itself is imported through gnnbench.peers.dgl_shim only
    pytest.skip("dgl-native needs DGL (pip install dgl)", allow_module_level=True)

from gnnbench.datasets import load_dataset  # noqa: E402
from gnnbench.frameworks import get_frontend  # noqa: E402
from gnnbench.models import get_model  # noqa: E402
from gnnbench.peers import build_native  # noqa: E402

DATASET = "sbm:nodes=60,classes=3,features=8,degree=4,seed=1"


@pytest.mark.parametrize("model_name, layer0", [
    ("gcn", {"weight", "bias"}),
    ("gat", {"fc.weight", "attn_l", "attn_r", "bias"}),
    ("gin", {"apply_func.0.weight", "apply_func.0.bias", "apply_func.2.weight", "apply_func.2.bias"}),
    ("sage", {"fc_self.weight", "fc_self.bias", "fc_neigh.weight"}),
])
def test_parameter_layout_is_the_module_docstring_table(model_name, layer0):
    F = get_frontend("torch", "cpu", "float32")
    data = load_dataset(DATASET)
    cls = get_model(model_name)
    graph = data.graph.with_self_loops() if cls.self_loops else data.graph
    model = cls(data.features.shape[1], data.num_classes)
    params, forward = build_native("dgl-native", model, graph, model.init_params(0), F, F.tensor(data.features))
    assert {name.split(".", 1)[1] for name in params if name.startswith("conv0.")} == layer0
    assert tuple(forward(False).shape) == (graph.num_nodes, data.num_classes)
