"""models/: the frontend ops each model's layer calls (Note [fused dense ops]): fused forms, no identity multiply."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.frameworks.torch_frontend import TorchFrontend
from gnnbench.models import get_model
from gnnbench.runtime.glue import BoundGraph
from gnnbench.runtime.graph import Graph
from gnnbench.runtime.registry import load_system

#: per model, the ops of one training forward's first layer (dropout, conv, activation), in call order
FIRST_LAYER = {
    "gcn": ["dropout", "graph_tensor", "graph_tensor", "matmul", "mul", "spmm", "mul_add", "relu"],
    "sage": ["dropout", "matmul", "spmm", "linear", "add", "relu"],  # a square graph, in 6 >= hidden 4: transform first
    "gin": ["dropout", "spmm", "add", "linear", "relu", "linear", "relu"],  # GIN-0: no mul by 1.0
}


class Recording:
    """A frontend that forwards every op to ``F`` and records its name (graph ops' inner calls too)."""

    def __init__(self, F):
        self._F, self.calls = F, []

    def __getattr__(self, name):
        op = getattr(self._F, name)
        if not callable(op):
            return op

        def recorded(*args, **kwargs):
            self.calls.append(name)
            return op(*args, **kwargs)

        return recorded


@pytest.mark.parametrize("name", sorted(FIRST_LAYER))
def test_each_layer_calls_the_fused_ops(name):
    src, dst = np.array([0, 1, 2, 3, 4, 0]), np.array([1, 2, 3, 4, 0, 2])
    graph = Graph.from_edges(src, dst, 5)
    model_cls = get_model(name)
    model = model_cls(6, 3, model_cls.defaults.__class__(hidden=4, **{
        k: v for k, v in model_cls.defaults.as_dict().items() if k != "hidden"}))
    graph = graph.with_self_loops() if model_cls.self_loops else graph
    bound = BoundGraph(graph, load_system("reference", "torch", "cpu"))
    F = TorchFrontend(dtype="float64")
    F.seed(0)
    params = {k: F.parameter(v) for k, v in model.init_params(0).items()}
    recording = Recording(F)
    logits = model.forward(recording, params, bound, F.tensor(np.ones((5, 6))), training=True)
    assert tuple(logits.shape) == (5, 3)
    assert recording.calls[:len(FIRST_LAYER[name])] == FIRST_LAYER[name]
    assert "mul" not in recording.calls or name == "gcn"  # GCN's src scale is its only multiply


@pytest.mark.parametrize("block, index, in_dim, out_dim, first", [
    (False, 0, 6, 4, "matmul"),    # square, narrowing: transform first, the SpMMs at out (Note [layers on blocks])
    (False, 0, 4, 4, "matmul"),    # square, in == out: transform first too
    (False, 1, 4, 6, "spmm"),      # square, widening: aggregate first
    (True, 0, 6, 4, "spmm"),       # a block's first layer: aggregate first unless in > 2 out
    (True, 0, 9, 4, "matmul"),
    (True, 1, 6, 4, "matmul"),     # a block's hidden layer: transform first when it narrows
    (True, 1, 4, 4, "spmm"),
])
def test_sage_orders_its_layer_by_the_graph_and_the_widths(block, index, in_dim, out_dim, first):
    from gnnbench.models.sage import SAGE, transforms_first

    src, dst = np.array([0, 1, 2, 3, 4, 0]), np.array([1, 2, 0, 1, 0, 2])
    graph = Graph.from_edges(src, dst, 5) if not block else Graph(*_block_csr(src, dst), 3, num_src=5)
    bound = BoundGraph(graph, load_system("reference", "torch", "cpu"))
    F = TorchFrontend(dtype="float64")
    conv = SAGE(in_dim, out_dim, SAGE.defaults).conv(index, in_dim, out_dim)
    params = {k: F.parameter(init(np.random.default_rng(0), shape)) for k, (shape, init) in conv.params.items()}
    recording = Recording(F)
    out = conv.forward(recording, params, bound, F.tensor(np.ones((5, in_dim))))
    assert tuple(out.shape) == (graph.num_nodes, out_dim)
    assert [c for c in recording.calls if c in ("matmul", "spmm")][0] == first
    assert transforms_first(bound, index, in_dim, out_dim) == (first == "matmul")


def _block_csr(src, dst):
    """CSR rows of destinations 0..2 over sources 0..4."""
    order = np.argsort(dst, kind="stable")
    return np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=3))]), src[order]
