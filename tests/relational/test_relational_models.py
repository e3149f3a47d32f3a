"""R-GCN and R-GAT written once: every CPU system trains the same function; verify's model check sees a wrong one;
bad input is one line with status 2 and nothing stored."""
from __future__ import annotations

import pytest

from gnnbench.cli import main
from gnnbench.run.harness import RunConfig, train
from gnnbench.runtime.registry import system_info

AIFB = "hetero:like=aifb,scale=0.25"
IGBH = "hetero:like=igbh,scale=0.01,features=32,other_features=32"
#: the CPU kernel systems that compile no numba kernels (isplib and dgnn do, ~10 minutes cold: not here)
SYSTEMS = ("reference", "pyg", "mkl", "dgl", "pim")


def _row(system: str, model: str, dataset: str, **kw):
    return train(RunConfig(system=system, model=model, dataset=dataset, epochs=3, warmup=1, **kw))


@pytest.mark.parametrize("model,dataset,kw", [("rgcn", AIFB, {}), ("rgcn", AIFB, {"bases": 3}),
                                              ("rgat", IGBH, {"hidden": 16, "heads": 2})])
def test_every_cpu_system_trains_the_same_function_with_the_same_first_loss(model, dataset, kw):
    rows = {s: _row(s, model, dataset, **kw) for s in SYSTEMS}
    ref = rows["reference"]
    assert ref["status"] == "ok" and ref["first_loss"] > 0
    for system, row in rows.items():
        assert row["status"] == "ok", (system, row.get("error"))
        assert row["first_loss"] == pytest.approx(ref["first_loss"], rel=1e-4), system
        check = row["extra"]["run_check"]
        # a system with typed_aggregate runs R-GCN's relations in one call on the homogeneous form
        # (Note [R-GCN on the typed operator]), checked there; every other calls an operator per relation
        one_call = model == "rgcn" and "typed_aggregate" in system_info(system).operators
        assert check["status"] == "passed", (system, check)
        assert check["operators"] == ["typed_aggregate"] if one_call else check["relations_checked"] > 1, (system, check)


def test_rgat_learns_the_planted_classes():
    row = train(RunConfig(system="reference", model="rgat", dataset=IGBH, hidden=16, heads=2, epochs=40, warmup=1,
                          lr=0.01))
    assert row["test_accuracy"] > 0.5  # 19 classes: chance is about 0.05


def test_the_model_check_catches_a_relational_model_that_sums_instead_of_averaging(monkeypatch):
    from gnnbench.check.model_check import check_model
    from gnnbench.models import RGCN

    assert check_model("reference", "rgcn").status == "passed"
    wrong_dense = RGCN.dense

    def dense_sum(self, T, A, x, p, index):  # the equation with a sum per relation: not the model's function
        out = wrong_dense(self, T, {k: a for k, a in A.items()}, x, p, index)
        return {t: v * 1.5 for t, v in out.items()}

    monkeypatch.setattr(RGCN, "dense", dense_sum)
    row = check_model("reference", "rgcn")
    assert row.status == "failed" and row.failures[0].startswith("model rgcn logits on 'typed' (int32, 4 node types, "
                                                                 "6 relations")


@pytest.mark.parametrize("args,message", [
    (["--model", "rgcn", "--dataset", "hetero:like=mag,other_features=64"],
     "rgcn needs one feature width for every node type (its self-connection W_0, like RGCNConv's and "
     "RelGraphConv's, is one matrix), but the node types have paper=128, author=64, institution=64, "
     "field_of_study=64; use rgat, or a dataset with one width (hetero: other_features=0)"),
    (["--model", "gcn", "--dataset", "hetero:like=aifb"],
     "model 'gcn' takes a homogeneous graph, but dataset 'hetero:classes=4,features=16,like=aifb,other_features=16,"
     "scale=1.0,seed=0' is typed (node types and relations); use a relational model: rgcn, rgat"),
    (["--model", "rgat", "--dataset", "karate"],
     "model 'rgat' is relational and needs a typed dataset (e.g. hetero:like=aifb), but 'karate' is homogeneous; "
     "use one of: gcn, gat, gin, sage"),
    (["--model", "rgcn", "--dataset", "hetero:like=aifb,scale=0.0001"],
     "dataset 'hetero:like=aifb,scale=0.0001': node type 'person' has no nodes at scale=0.0001 (an empty type); "
     "use scale>=0.00031"),
    (["--model", "rgcn", "--dataset", "hetero:like=imdb"],
     "hetero like='imdb' names no preset; choose one of: igbh, mag, aifb"),
    (["--model", "gcn", "--bases", "2", "--dataset", "karate"],
     "--bases applies to R-GCN only (its basis decomposition); model 'gcn' has no bases"),
    (["--model", "rgcn", "--bases", "500", "--dataset", "hetero:like=aifb"],
     "rgcn bases must lie in [1, 90] (the relations) (got 500)"),
    (["--model", "rgat", "--hidden", "30", "--dataset", "hetero:like=aifb"],
     "rgat's hidden width is split over its heads, so it must be a multiple of them (got hidden=30, heads=4)"),
])
def test_bad_relational_input_is_one_line_status_2_and_stores_nothing(args, message, capsys, tmp_path, monkeypatch):
    from gnnbench.run import runner

    def no_training(*_a, **_k):
        raise AssertionError("a worker started for bad input")

    monkeypatch.setattr(runner, "run_task", no_training)
    code = main(["run", "--system", "reference", *args, "--results", str(tmp_path / "new" / "r.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and err == f"gnnbench run: {message}\n", err
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("model,dataset,kw", [("rgcn", AIFB, {}), ("rgat", IGBH, {"hidden": 16, "heads": 2})])
def test_both_models_run_under_tensorflow_with_the_same_first_loss(model, dataset, kw):
    pytest.importorskip("tensorflow")
    rows = [_row("reference", model, dataset, framework=fw, **kw) for fw in ("torch", "tensorflow")]
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert rows[1]["first_loss"] == pytest.approx(rows[0]["first_loss"], rel=1e-4)


def test_a_fallback_and_inference_run_on_typed_graphs():
    row = _row("mkl", "rgat", AIFB, hidden=8, heads=2, fallback="reference")
    assert row["status"] == "ok" and row["extra"]["fallback"]["system"] == "reference"
    assert _row("reference", "rgat", AIFB, hidden=8, heads=2, mode="inference")["status"] == "ok"


@pytest.mark.parametrize("model", ["rgcn", "rgat"])
def test_initial_parameters_depend_only_on_the_seed(model):
    import numpy as np

    from gnnbench.check.model_check import typed_model_graph
    from gnnbench.models import MODELS
    from gnnbench.models.typed import Schema

    graph, target = typed_model_graph()
    cls = MODELS[model]

    def make():
        return cls(Schema({t: 8 for t in graph.node_types}, graph.relations, target), 3)

    a, b, c = make().init_params(5), make().init_params(5), make().init_params(6)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert any(not np.array_equal(a[k], c[k]) for k in a if a[k].any())
