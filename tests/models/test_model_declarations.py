"""A model is declared in one place (Note [native counterparts] in models/native.py): a toy model added to
``models.MODELS`` runs on reference, on PyG's own layer and in verify's model check, and a model that lacks a
declaration a consumer needs fails there in one line naming it."""
from __future__ import annotations

import importlib.util
import math

import pytest

from gnnbench.check.model_check import check_model, model_check_names
from gnnbench.errors import UserError
from gnnbench.models import MODELS
from gnnbench.models.base import GNN, Conv, Hyperparameters, glorot, zeros
from gnnbench.models.native import IN, OUT, Blocks, Native, layer
from gnnbench.run.harness import RunConfig, train
from gnnbench.verify.suite import e2e_models, plan

DATASET = "sbm:nodes=120,classes=3,features=8,degree=6,seed=1"
needs_pyg = pytest.mark.skipif(importlib.util.find_spec("torch_geometric") is None, reason="PyG is not installed")


class Toy(GNN):
    """One GCN layer in its edge form: ``X' = D_in^-1/2 (A + I) D_out^-1/2 X W + b``, everything declared here."""

    name = "toy"
    defaults = Hyperparameters(hidden=8, layers=1, dropout=0.0, lr=0.01, weight_decay=0.0)
    self_loops = True
    pyg = Native(layer("GCNConv", IN, OUT, add_self_loops=False, normalize=True, cached=True, bias=True),
                 {"lin.weight": "weight.T", "bias": "bias"},
                 Blocks(pair=False, edge_weight="gcn_norm", changes={"normalize": False, "cached": False}))

    def dense(self, T, A, x, p, index):
        d_in, d_out = A.sum(1).clamp(min=1), A.sum(0).clamp(min=1)
        return (d_in.rsqrt()[:, None] * A * d_out.rsqrt()[None, :]) @ (x @ p["weight"]) + p["bias"]

    def conv(self, index, in_dim, out_dim):
        def forward(F, p, graph, x):
            norm = F.graph_tensor(graph, "gcn_norm", graph.graph.gcn_norm())
            return F.add(F.spmm(graph, F.matmul(x, p["weight"]), norm, reduce="sum"), p["bias"])

        return Conv({"weight": ((in_dim, out_dim), glorot), "bias": ((out_dim,), zeros)}, forward)


def _add(monkeypatch, model):
    monkeypatch.setitem(MODELS, model.name, model)   # the one place a model is added
    # RunConfig's field choices are read once per process (gnnbench.run.config.config_fields): read them again
    monkeypatch.setattr("gnnbench.run.config._FIELDS", None)


@pytest.fixture
def toy(monkeypatch):
    _add(monkeypatch, Toy)
    return Toy


def _train(system: str, model: str) -> dict:
    return train(RunConfig(system, model, DATASET, epochs=4, warmup=1, threads=1))


def test_every_list_of_models_derives_from_the_model_table(toy):
    assert "toy" in model_check_names() and "toy" in e2e_models()
    tasks = plan("reference", None, slow=False, e2e=True)
    assert ("model", "model toy") in tasks and ("e2e", "end-to-end toy on sbm") in tasks


@needs_pyg
def test_a_toy_model_runs_on_reference_on_pyg_and_in_the_model_check(toy):
    reference, native = _train("reference", "toy"), _train("pyg-native", "toy")
    assert reference["status"] == native["status"] == "ok"
    assert math.isclose(native["first_loss"], reference["first_loss"], rel_tol=1e-4)   # PyG's GCNConv, same function
    row = check_model("reference", "toy")
    assert row.status == "passed", row.failures
    # the toy declares a PyG layer and no DGL one: its dense form is compared with PyG's alone
    assert row.detail.endswith("; dense logits vs pyg-native on undirected")


def test_a_model_without_a_pyg_layer_fails_in_one_line(monkeypatch):
    _add(monkeypatch, type("NoPyG", (Toy,), {"name": "nopyg", "pyg": None}))
    with pytest.raises(UserError) as raised:
        _train("pyg-native", "nopyg")
    assert str(raised.value) == ("model 'nopyg' declares no PyG layer (its 'pyg' is None), so 'pyg-native' cannot "
                                 "build it; name one as models/gcn.py does (Note [native counterparts] in "
                                 "models/native.py)")


def test_a_model_without_a_dense_formulation_fails_its_check_in_one_line(monkeypatch):
    _add(monkeypatch, type("NoDense", (Toy,), {"name": "nodense", "dense": None}))
    row = check_model("reference", "nodense")
    assert row.status == "failed" and row.failures == [
        "model nodense: model 'nodense' declares no dense formulation (its 'dense' is None), which the model check "
        "compares it with (Note [model check])"]
    with pytest.raises(UserError, match=r"^unknown model check 'nosuch'; choose one of: gcn, gat, gin, sage, "):
        check_model("reference", "nosuch")
