"""The relational models' native baselines, declared as data: PyG's HeteroConv of GATConv and RGCNConv, DGL's
HeteroGraphConv of GATConv and RelGraphConv, the same function and first loss as reference."""
from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
import torch

from gnnbench.check.model_check import typed_dense_forward, typed_hyper, typed_model_graph
from gnnbench.models import RGAT, RGCN
from gnnbench.models.typed import Schema
from gnnbench.check.model_check import typed_natives_problems
from gnnbench.run.harness import RunConfig, train

NATIVES = [pytest.param("pyg-native", marks=pytest.mark.skipif(importlib.util.find_spec("torch_geometric") is None,
                                                                 reason="PyG is not installed")),
           pytest.param("dgl-native", marks=pytest.mark.skipif(importlib.util.find_spec("dgl") is None,
                                                                 reason="DGL is not installed"))]


@pytest.mark.parametrize("cls,bases", [(RGCN, None), (RGCN, 2), (RGAT, None)])
def test_the_natives_compute_the_dense_equation_and_a_wrong_one_is_seen(cls, bases):
    """On verify's typed graph: S < N and S > N, an empty relation (which DGL's HeteroGraphConv skips), an
    unreached type, a parallel edge."""
    graph, target = typed_model_graph()
    model = cls(Schema({t: 9 for t in graph.node_types}, graph.relations, target), 5, typed_hyper(cls, 3, bases))
    initial = {k: v.astype(np.float64) for k, v in model.init_params(3).items()}
    rng = np.random.default_rng(0)
    x = {t: rng.uniform(-1, 1, (n, 9)) for t, n in graph.node_counts.items()}
    ref = typed_dense_forward(model, graph, {k: torch.from_numpy(v) for k, v in initial.items()},
                              {t: torch.from_numpy(v) for t, v in x.items()})
    assert typed_natives_problems("m", model, graph, initial, x, ref, "typed") == []
    wrong = typed_natives_problems("m", model, graph, initial, x, ref * 1.01, "typed")
    assert len(wrong) == 2 and all("dense equation vs" in w for w in wrong)


@pytest.mark.parametrize("system", NATIVES)
@pytest.mark.parametrize("model,dataset,kw", [
    ("rgcn", "hetero:like=aifb,scale=0.25", {}),
    ("rgcn", "hetero:like=aifb,scale=0.25", {"bases": 4}),
    ("rgat", "hetero:like=igbh,scale=0.01,features=32,other_features=32", {"hidden": 16, "heads": 2}),
])
def test_the_natives_train_like_reference(system, model, dataset, kw):
    spec = dict(model=model, dataset=dataset, epochs=4, warmup=1, threads=1, **kw)
    row, ref = train(RunConfig(system, **spec)), train(RunConfig("reference", **spec))
    assert row["status"] == "ok" and row["system"] == system
    assert math.isclose(row["first_loss"], ref["first_loss"], rel_tol=1e-4)  # same values, same dropout masks
    assert math.isclose(row["final_loss"], ref["final_loss"], rel_tol=1e-3)  # and the same trajectory
