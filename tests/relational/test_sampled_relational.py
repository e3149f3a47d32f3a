"""Sampled relational runs (issue 58): the typed sampler's blocks, the models on them, the run and its check, the
bad input, and a system wrong on blocks only."""
from __future__ import annotations

import importlib
import importlib.util
import json
from dataclasses import replace

import numpy as np
import pytest

from gnnbench.cli import main
from gnnbench.errors import UserError
from gnnbench.run.config import make_config
from gnnbench.run.harness import train
from gnnbench.run.preflight import check

IGBH = "hetero:like=igbh,scale=0.002,features=16,other_features=16"
IGBH_MLPERF = "hetero:like=igbh,scale=0.002"  # its preset's widths, as MLPerf's command line gives them


def _typed_graph():
    """3 node types, 4 relations (one a self-relation, one into a type no seed reaches at the innermost layer)."""
    from gnnbench.runtime.hetero import HeteroGraph, Relation

    rng = np.random.default_rng(3)
    counts = {"paper": 40, "author": 25, "field": 6}

    def edges(s, d, e):
        return rng.integers(0, counts[s], e), rng.integers(0, counts[d], e)

    rels = {Relation("paper", "cites", "paper"): edges("paper", "paper", 200),
            Relation("author", "writes", "paper"): edges("author", "paper", 150),
            Relation("paper", "written_by", "author"): edges("paper", "author", 150),
            Relation("field", "of", "paper"): edges("field", "paper", 60)}
    return HeteroGraph.from_edges(counts, rels)


def _sampler(fanouts, seed=0):
    from gnnbench.sampling import HeteroNeighborSampler

    return HeteroNeighborSampler(_typed_graph(), "paper", fanouts, seed)


def test_blocks_chain_and_every_relation_is_a_bipartite_block_of_its_types():
    batch = _sampler((4, 3, 2)).sample(np.array([0, 5, 7, 11]))
    blocks = batch.blocks
    assert len(blocks) == 3 and blocks[-1].num_dst == {"paper": 4, "author": 0, "field": 0}
    for outer, inner in zip(blocks, blocks[1:]):
        assert outer.num_dst == inner.num_src  # one layer's destinations are the next's sources
    for block in blocks:
        for r, g in zip(block.relations, block.graphs):
            assert (g.num_dst, g.num_src) == (block.num_dst[r.dst], block.num_src[r.src])
    assert {t: len(v) for t, v in batch.input_nodes.items()} == blocks[0].num_src
    assert np.array_equal(batch.input_nodes["paper"][:4], [0, 5, 7, 11])  # destinations a prefix of the sources


def test_a_fanout_draws_per_relation_without_replacement_from_the_relations_own_neighbours():
    """Note [fan-out per relation]: up to f of each destination's in-neighbours in each relation."""
    graph = _typed_graph()
    seeds = np.arange(40)
    batch = _sampler((3,)).sample(seeds)
    (block,) = batch.blocks
    for k, (r, g) in enumerate(zip(block.relations, block.graphs)):
        full = graph.graphs[k]
        if block.num_dst[r.dst] == 0:
            assert g.num_edges == 0
            continue
        for i, v in enumerate(seeds):
            nbrs = full.indices[full.indptr[v]:full.indptr[v + 1]]
            got = batch.input_nodes[r.src][g.indices[g.indptr[i]:g.indptr[i + 1]]]
            assert len(got) == min(3, len(nbrs))
            # each draw is a distinct position: no neighbour more often than the relation holds it
            values, times = np.unique(got, return_counts=True)
            have = dict(zip(*np.unique(nbrs, return_counts=True)))
            assert all(have.get(u, 0) >= c for u, c in zip(values, times))


def _most_per_destination(batch, relation: str) -> list[int]:
    """Per layer, the most sources any destination drew in ``relation``."""
    out = []
    for block in batch.blocks:
        (g,) = [g for r, g in zip(block.relations, block.graphs) if r.name == relation]
        out.append(int(np.diff(g.indptr).max(initial=0)))
    return out


@pytest.mark.parametrize("sampler", ["gnnbench", pytest.param("dgl", marks=pytest.mark.skipif(
    importlib.util.find_spec("dgl") is None, reason="DGL is not installed"))])
def test_a_relation_named_draws_its_own_fanouts_and_the_others_keep_the_runs(sampler):
    """Note [fan-out per relation]: --relation-fanout, MLPerf's fan-out per edge type, on both typed samplers."""
    from gnnbench.sampling import make_sampler

    graph = _typed_graph()
    named = make_sampler(sampler, graph, (6, 6), 0, "paper", (("cites", (1, 2)), ("field-of->paper", (2, 1))))
    assert named.relation_fanouts == ((1, 2), (6, 6), (6, 6), (2, 1))
    batch = named.sample(np.arange(40))
    assert _most_per_destination(batch, "cites") == [1, 2] and _most_per_destination(batch, "of") == [2, 1]
    assert max(_most_per_destination(batch, "writes")) > 2  # up to 6, as --fanouts says
    plain = make_sampler(sampler, graph, (6, 6), 0, "paper").sample(np.arange(40))
    assert _most_per_destination(plain, "cites")[1] > 2


@pytest.mark.parametrize("named,message", [
    (("cited",), "--relation-fanout cited: 'the graph' has no relation 'cited'; its relations: paper-cites->paper, "
                 "author-writes->paper, paper-written_by->author, field-of->paper"),
    (("cites", 1, 2, 3), "--relation-fanout cites=1,2,3 gives 3 fanout(s) where --fanouts gives 2: give one per "
                         "layer, outermost first"),
])
def test_a_relation_fanout_naming_no_relation_or_the_wrong_layers_is_one_line(named, message):
    from gnnbench.runtime.hetero import Relation
    from gnnbench.sampling.hetero import fanouts_per_relation

    with pytest.raises(UserError) as err:
        fanouts_per_relation(_typed_graph().relations, (6, 6), [(named[0], named[1:])], "the graph")
    assert str(err.value) == message
    twice = [Relation("a", "to", "b"), Relation("b", "to", "a")]
    with pytest.raises(UserError, match=r"2 relations of 'g' are named 'to' \(a-to->b, b-to->a\); name one "
                                        r"whole, e.g. a-to->b"):
        fanouts_per_relation(twice, (1,), [("to", (1,))], "g")
    assert fanouts_per_relation(twice, (1,), [("b-to->a", (2,))], "g") == ((1,), (2,))


def test_same_seed_same_blocks_another_seed_other_blocks():
    def arrays(sampler):
        batch = sampler.sample(np.arange(0, 40, 3), epoch=1, batch=2)
        return [a for b in batch.blocks for g in b.graphs for a in (g.indptr, g.indices)]

    a, b, c = arrays(_sampler((5, 5))), arrays(_sampler((5, 5))), arrays(_sampler((5, 5), seed=1))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(len(x) == len(y) and np.array_equal(x, y) for x, y in zip(a, c))


@pytest.mark.parametrize("model", ["rgat", "rgcn"])
def test_every_neighbour_on_blocks_gives_the_full_graph_logits(model):
    """Note [typed layers on blocks]: with fan-outs -1 the seeds' logits are the full graph's."""
    from gnnbench.datasets import load_dataset
    from gnnbench.frameworks import get_frontend
    from gnnbench.models import MODELS
    from gnnbench.runtime.hetero import BoundHeteroGraph
    from gnnbench.runtime.registry import load_system
    from gnnbench.runtime.sut import KernelBlocks
    from gnnbench.sampling import HeteroNeighborSampler

    F = get_frontend("torch", "cpu", "float32")
    dataset = load_dataset(IGBH)
    cls = MODELS[model]
    hyper = replace(cls.defaults, hidden=8, heads=2, layers=3) if model == "rgat" else replace(cls.defaults, layers=3)
    net = cls.for_dataset(dataset, hyper)
    glue = load_system("reference", "torch", "cpu")
    params = {k: F.parameter(v) for k, v in net.init_params(0).items()}
    full = net.forward(F, params, BoundHeteroGraph(dataset.graph, glue),
                       {t: F.tensor(v) for t, v in dataset.type_features.items()}, False)
    seeds = np.flatnonzero(dataset.train_mask)[:50]
    batch = HeteroNeighborSampler(dataset.graph, dataset.target, (-1, -1, -1)).sample(seeds)
    blocks = KernelBlocks(glue, net, params, F)
    got = blocks.forward(blocks.prepare(batch.graphs()), batch.gather(F, dataset.type_features), False)
    assert np.allclose(got.detach().numpy(), full.detach().numpy()[seeds], atol=1e-5)


def _sampled(**values):
    values = {"model": "rgat", "dataset": IGBH, "batching": "sampled", "fanouts": "4,3", "batch_size": 32,
              "hidden": 8, "heads": 2, "layers": 2, "epochs": 3, "warmup": 1, "threads": 1, **values}
    return make_config({k: v for k, v in values.items() if v is not None})


def test_sampled_rgat_trains_on_every_cpu_system_alike_with_its_phases_and_every_relation_checked():
    rows = {s: train(_sampled(system=s)) for s in ("reference", "mkl", "pyg")}
    ref = rows["reference"]
    for system, row in rows.items():
        assert row["status"] == "ok", (system, row.get("error"))
        assert row["first_loss"] == pytest.approx(ref["first_loss"], rel=1e-4), system
        assert all(row[f"{p}_times"] for p in ("sample", "gather", "block_prepare", "forward", "backward",
                                               "optimizer")), system
        check_ = row["extra"]["run_check"]
        assert check_["status"] == "passed" and len(check_["batches"]) == 2, (system, check_)
        assert [len(layer["relations"]) > 1 for layer in check_["layers"]] == [True, True], check_
        assert check_["closing"]["status"] == "passed"
    assert ref["hyperparameters"]["layers"] == 2


def test_sampled_rgcn_and_layers_for_a_homogeneous_model():
    row = train(_sampled(system="reference", model="rgcn", dataset=IGBH, hidden=None, heads=None, layers=3,
                         fanouts="3,3,3"))
    assert row["status"] == "ok" and row["hyperparameters"]["layers"] == 3
    gcn = train(make_config({"system": "reference", "model": "gcn", "dataset": "karate", "layers": 3, "epochs": 2,
                             "warmup": 1, "threads": 1}))
    assert gcn["status"] == "ok" and gcn["hyperparameters"]["layers"] == 3


@pytest.mark.parametrize("values,message", [
    ({"fanouts": "15,10,5"}, "--fanouts 15,10,5 gives 3 fanout(s), but model 'rgat' has 2 layers: give one per "
                             "layer, outermost first, e.g. --fanouts 10,10"),
])
def test_bad_sampled_relational_input_is_one_line_before_any_worker(values, message):
    with pytest.raises(UserError) as err:
        check(_sampled(system="reference", **values), isolate=False)
    assert str(err.value) == message


@pytest.mark.parametrize("flags,message", [
    (["--relation-fanout", "cited=1,1,1"], "--relation-fanout cited: '{dataset}' has no relation 'cited'; its "
     "relations: paper-cites->paper, paper-written_by->author, author-affiliated_to->institute, paper-topic->fos, "
     "author-rev_written_by->paper, institute-rev_affiliated_to->author, fos-rev_topic->paper"),
    (["--relation-fanout", "cites=1,1"], "--relation-fanout cites=1,1 gives 2 fanout(s) where --fanouts gives 3: "
     "give one per layer, outermost first"),
    (["--relation-fanout", "cites=1,x,1"], "--relation-fanout expects integers separated by commas after 'cites=' "
     "(got 'cites=1,x,1')"),
    (["--relation-fanout", "cites=1,1,1", "--relation-fanout", "cites=2,2,2"], "--relation-fanout gives relation "
     "'cites' twice (got ['cites=1,1,1', 'cites=2,2,2'])"),
    (["--relation-fanout", "cites=1,1", "--model", "gcn"], "--relation-fanout cites=...: model 'gcn' is not "
     "relational, so its graph has no relations to name; drop --relation-fanout"),
])
def test_a_bad_relation_fanout_is_one_line_and_status_2_before_any_worker(flags, message, capsys, tmp_path):
    from gnnbench.datasets.registry import canonical_name

    homogeneous = "--model" in flags  # gcn, on a graph of its own
    model_and_graph = ["--dataset", "karate"] if homogeneous else ["--model", "rgat", "--dataset", IGBH_MLPERF]
    fanouts = "5,10" if homogeneous else "5,10,15"
    code = main(["run", "--system", "reference", *model_and_graph, "--batching", "sampled", "--fanouts", fanouts,
                 "--batch-size", "16", *flags,
                 "--results", str(tmp_path / "new" / "r.sqlite")])
    dataset = canonical_name(IGBH_MLPERF)
    assert code == 2 and capsys.readouterr().err == f"gnnbench run: {message.format(dataset=dataset)}\n"
    assert not (tmp_path / "new").exists()


def test_a_run_with_a_relation_fanout_stores_and_prints_it(capsys):
    assert main(["run", "--system", "reference", "--model", "rgat", "--dataset", IGBH, "--batching", "sampled",
                 "--fanouts", "4,3", "--relation-fanout", "cites=1,2", "--batch-size", "32", "--hidden", "8",
                 "--heads", "2", "--layers", "2", "--epochs", "2", "--warmup", "1", "--threads", "1",
                 "--in-process", "--no-store"]) == 0
    assert "  batches    fanouts 4,3 (cites 1,2), batch size 32" in capsys.readouterr().out
    row = train(_sampled(system="reference", relation_fanouts=["cites=1,2"], epochs=2))
    assert row["status"] == "ok" and row["hyperparameters"]["relation_fanouts"] == {"cites": [1, 2]}
    assert "relation_fanouts" not in train(_sampled(system="reference", epochs=2))["hyperparameters"]


def test_the_mlperf_command_line_refuses_too_many_fanouts_in_one_line(capsys, tmp_path):
    code = main(["run", "--system", "reference", "--model", "rgat", "--dataset", "hetero:like=igbh,scale=0.002",
                 "--batching", "sampled", "--fanouts", "15,10,5,5", "--batch-size", "16",
                 "--results", str(tmp_path / "new" / "r.sqlite")])
    assert code == 2 and capsys.readouterr().err == (
        "gnnbench run: --fanouts 15,10,5,5 gives 4 fanout(s), but model 'rgat' has 3 layers: give one per layer, "
        "outermost first, e.g. --fanouts 10,10,10\n")
    assert not (tmp_path / "new").exists()


def test_a_kernel_wrong_on_sampled_blocks_only_passes_full_graph_and_is_caught_by_verify_and_the_sampled_check(
        monkeypatch):
    """demo_draw_order ends a row at its first descending source: right on every full graph (sorted rows), wrong
    on a sampled block (draw order)."""
    from pathlib import Path

    from gnnbench.check.conformance import run_suite

    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(Path(__file__).resolve().parents[1] / "demo_systems"))
    full = train(make_config({"system": "demo_draw_order", "model": "rgcn", "dataset": IGBH, "epochs": 2,
                              "warmup": 1, "threads": 1}))
    assert full["status"] == "ok" and full["extra"]["run_check"]["status"] == "passed"
    from gnnbench.check.run_check import RunCheckError

    with pytest.raises(RunCheckError) as err:  # the worker stores it as a failed row (run/worker.py)
        train(_sampled(system="demo_draw_order", model="rgcn", hidden=None, heads=None))
    details = err.value.details
    assert details["status"] == "failed" and details["operator"].startswith("spmm(reduce=mean) on relation ")
    assert details["relation"] in details["operator"] and details["batch"] == 0
    results, _ = run_suite("demo_draw_order", profile="fast", threads=1, labels=["spmm(reduce=sum)"])
    (spmm,) = results
    assert spmm.status == "failed" and spmm.failed_graphs and all(g.startswith("block_")
                                                                    for g in spmm.failed_graphs)


# --sampler dgl|pyg on typed graphs, and the natives on typed blocks (Note [foreign samplers on typed graphs] in
# gnnbench/sampling/adapters.py, Note [typed natives on blocks] in gnnbench/peers/typed.py)

AIFB_SMALL = "hetero:like=aifb,scale=0.05"
NATIVES = [pytest.param("pyg-native", marks=pytest.mark.skipif(importlib.util.find_spec("torch_geometric") is None,
                                                                 reason="PyG is not installed")),
           pytest.param("dgl-native", marks=pytest.mark.skipif(importlib.util.find_spec("dgl") is None,
                                                                 reason="DGL is not installed"))]


@pytest.mark.parametrize("native", NATIVES)
@pytest.mark.parametrize("model", ["rgcn", "rgat"])
@pytest.mark.parametrize("fanouts", [(2, 2, 2), (-1, -1, -1)])
def test_the_natives_on_typed_blocks_give_what_reference_gives_on_them(native, model, fanouts):
    """The same blocks (relations without edges, types without sources among them), the same logits; with every
    neighbour, the full graph's (test_every_neighbour_on_blocks_gives_the_full_graph_logits)."""
    from gnnbench.datasets import load_dataset
    from gnnbench.frameworks import get_frontend
    from gnnbench.models import MODELS
    from gnnbench.runtime.registry import NATIVE_SYSTEMS, load_system
    from gnnbench.runtime.sut import KernelBlocks
    from gnnbench.sampling import HeteroNeighborSampler

    F = get_frontend("torch", "cpu", "float32")
    dataset = load_dataset(IGBH)
    cls = MODELS[model]
    hyper = replace(cls.defaults, hidden=8, heads=2, layers=3) if model == "rgat" else replace(cls.defaults, layers=3)
    net = cls.for_dataset(dataset, hyper)
    initial = net.init_params(0)
    batch = HeteroNeighborSampler(dataset.graph, dataset.target, fanouts).sample(
        np.flatnonzero(dataset.train_mask)[:50])
    reference = KernelBlocks(load_system("reference", "torch", "cpu"), net,
                             {k: F.parameter(v) for k, v in initial.items()}, F)
    want = reference.forward(reference.prepare(batch.graphs()), batch.gather(F, dataset.type_features), False)
    _, to_blocks, forward = importlib.import_module(NATIVE_SYSTEMS[native]["module"]).build_blocks(net, initial, F)
    got = forward(to_blocks(batch.graphs()), batch.gather(F, dataset.type_features), False)
    assert np.allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("dgl") is None, reason="DGL is not installed")
def test_rgcn_trains_on_dgls_typed_sampler_on_a_kernel_system_and_on_dgl_native_from_the_same_blocks(capsys):
    rows = {}
    for system in ("reference", "dgl-native"):
        assert main(["run", "--system", system, "--model", "rgcn", "--dataset", AIFB_SMALL, "--batching", "sampled",
                     "--fanouts", "2,2", "--sampler", "dgl", "--batch-size", "16", "--epochs", "2", "--warmup", "1",
                     "--threads", "1", "--in-process", "--no-store", "--json"]) == 0
        rows[system] = json.loads(capsys.readouterr().out)
    for system, row in rows.items():
        assert row["status"] == "ok" and row["extra"]["sampler"] == "dgl", (system, row.get("error"))
        assert row["prepare_time_s"] > 0  # DGL's heterograph, built once in the sampler's set-up
        assert all(row[f"{p}_times"] for p in ("sample", "gather", "block_prepare", "forward", "backward")), system
    assert rows["reference"]["extra"]["run_check"]["status"] == "passed"
    assert "run_check" not in rows["dgl-native"]["extra"]  # its own layers: no system kernel to check
    assert rows["dgl-native"]["first_loss"] == pytest.approx(rows["reference"]["first_loss"], rel=1e-4)


def test_the_pyg_sampler_on_a_typed_graph_is_refused_in_one_line_quoting_pyg(capsys, tmp_path):
    import torch_geometric.typing as t

    if t.WITH_PYG_LIB or t.WITH_TORCH_SPARSE:
        pytest.skip("pyg-lib or torch-sparse is installed here: --sampler pyg runs on typed graphs")
    code = main(["run", "--system", "dgl-native", "--model", "rgcn", "--dataset", AIFB_SMALL, "--batching", "sampled",
                 "--fanouts", "2,2", "--sampler", "pyg", "--batch-size", "16",
                 "--results", str(tmp_path / "new" / "r.sqlite")])
    assert code == 2 and capsys.readouterr().err == (
        "gnnbench run: --sampler pyg has no sampler for typed graphs here: PyG's NeighborSampler on HeteroData "
        "raises \"ImportError: 'NeighborSampler' requires either 'pyg-lib' or 'torch-sparse'\" (neither is "
        "installed; torch-sparse builds from source against torch 2.13 in about half an hour, pyg-lib has no wheel "
        "for it on the index); use --sampler gnnbench or dgl\n")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("native", NATIVES)
@pytest.mark.parametrize("model", ["rgcn", "rgat"])
def test_the_natives_on_a_block_with_an_empty_relation_and_an_unreached_type_give_what_reference_gives(native, model):
    """verify's typed graph (an empty relation, which DGL's HeteroGraphConv skips, and a type no relation reaches)
    as a block of every node: the natives bind it as a block (dgl.create_block), reference as relation blocks."""
    from gnnbench.check.model_check import typed_hyper, typed_model_graph
    from gnnbench.frameworks import get_frontend
    from gnnbench.models import MODELS
    from gnnbench.models.typed import Schema
    from gnnbench.runtime.registry import NATIVE_SYSTEMS, load_system
    from gnnbench.runtime.sut import KernelBlocks
    from gnnbench.sampling import HeteroBlock

    F = get_frontend("torch", "cpu", "float32")
    graph, target = typed_model_graph(np.int64)
    block = HeteroBlock(dict(graph.node_counts), dict(graph.node_counts), graph.relations, graph.graphs)
    assert any(g.num_edges == 0 for g in graph.graphs)
    net = MODELS[model](Schema({t: 9 for t in graph.node_types}, graph.relations, target), 5,
                        typed_hyper(MODELS[model], 3))
    initial = net.init_params(3)
    rng = np.random.default_rng(0)
    x = {t: rng.uniform(-1, 1, (n, 9)).astype(np.float32) for t, n in graph.node_counts.items()}
    reference = KernelBlocks(load_system("reference", "torch", "cpu"), net,
                             {k: F.parameter(v) for k, v in initial.items()}, F)
    want = reference.forward(reference.prepare([block, block]), {t: F.tensor(v) for t, v in x.items()}, False)
    _, to_blocks, forward = importlib.import_module(NATIVE_SYSTEMS[native]["module"]).build_blocks(net, initial, F)
    got = forward(to_blocks([block, block]), {t: F.tensor(v) for t, v in x.items()}, False)
    assert np.allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-5)
