"""ogbn-mag (OGB's files, OGB's reader) and IGBH (IGB's arrays) as typed datasets, on tiny fixtures in their
publishers' layouts; `gnnbench datasets` lists them; bad files are one line, exit status 2, nothing stored."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gnnbench.cli import main
from gnnbench.datasets.registry import canonical_name, load_dataset, typed_schema
from gnnbench.errors import UserError

from .typed_publishers import IGBH_COUNTS, MAG_COUNTS, text_gz, write_igbh, write_ogbn_mag

MAG_RELATIONS = ["author-affiliated_with->institution", "author-writes->paper", "paper-cites->paper",
                 "paper-has_topic->field_of_study", "institution-rev_affiliated_with->author",
                 "paper-rev_writes->author", "field_of_study-rev_has_topic->paper"]
IGBH_RELATIONS = ["paper-cites->paper", "paper-written_by->author", "author-affiliated_to->institute",
                  "paper-topic->fos", "author-rev_written_by->paper", "institute-rev_affiliated_to->author",
                  "fos-rev_topic->paper"]


def _edge_pairs(graph) -> list[tuple[int, int]]:
    src, dst = graph.edges()
    return sorted(zip(src.tolist(), dst.tolist()))


def _mean_of(rows: np.ndarray, cols: np.ndarray, x: np.ndarray, count: int) -> np.ndarray:
    """Row i: the mean of x over the columns its edges reach (zeros without edges)."""
    out = np.zeros((count, x.shape[1]))
    np.add.at(out, rows, x[cols])
    return out / np.maximum(np.bincount(rows, minlength=count), 1)[:, None]


def test_ogbn_mag_is_read_by_ogbs_reader_with_reverses_and_neighbour_features(tmp_path, capsys):
    truth = write_ogbn_mag(tmp_path)
    d = load_dataset("ogbn-mag", data_dir=tmp_path)
    assert capsys.readouterr().out == ""  # OGB's reader prints; a row's --json must not see it
    assert d.name == "ogbn-mag" and d.target == "paper" and d.graph.node_counts == MAG_COUNTS
    assert [str(r) for r in d.graph.relations] == MAG_RELATIONS
    for k, triplet in enumerate(sorted(truth.edges)):
        e = truth.edges[triplet]
        assert _edge_pairs(d.graph.graphs[k]) == sorted(zip(e[:, 0].tolist(), e[:, 1].tolist()))
    writes = truth.edges[("author", "writes", "paper")]
    assert _edge_pairs(d.graph.graphs[MAG_RELATIONS.index("paper-rev_writes->author")]) == \
        sorted(zip(writes[:, 1].tolist(), writes[:, 0].tolist()))
    np.testing.assert_allclose(d.type_features["paper"], truth.features["paper"], atol=1e-6)
    # Note [featureless node types]: authors average their papers, institutions their authors (one round later)
    author = _mean_of(writes[:, 0], writes[:, 1], truth.features["paper"].astype(np.float64), MAG_COUNTS["author"])
    np.testing.assert_allclose(d.type_features["author"], author, atol=1e-5)
    aff = truth.edges[("author", "affiliated_with", "institution")]
    np.testing.assert_allclose(d.type_features["institution"],
                               _mean_of(aff[:, 1], aff[:, 0], author, MAG_COUNTS["institution"]), atol=1e-5)
    assert d.feature_widths() == dict.fromkeys(MAG_COUNTS, 8)
    assert np.array_equal(d.labels, truth.labels) and d.num_classes == 5
    for mask, part in ((d.train_mask, "train"), (d.val_mask, "valid"), (d.test_mask, "test")):
        assert np.flatnonzero(mask).tolist() == truth.split[part].tolist()


def test_ogbn_mag_schema_comes_from_its_small_files(tmp_path):
    write_ogbn_mag(tmp_path)
    widths, relations, target, classes = typed_schema("ogbn-mag", tmp_path)
    assert widths == dict.fromkeys(MAG_COUNTS, 8) and (target, classes) == ("paper", 5)
    assert [str(r) for r in relations] == MAG_RELATIONS


def test_igbh_is_read_from_igbs_arrays_with_igbs_split(tmp_path):
    truth = write_igbh(tmp_path)
    assert canonical_name("igbh") == "igbh:classes=19,size=tiny"
    d = load_dataset("igbh", data_dir=tmp_path, index_dtype=np.int32)
    assert d.name == "igbh:classes=19,size=tiny" and d.graph.node_counts == IGBH_COUNTS
    assert [str(r) for r in d.graph.relations] == IGBH_RELATIONS
    assert all(g.index_dtype == np.int32 for g in d.graph.graphs)
    e = truth.edges[("paper", "written_by", "author")]
    assert _edge_pairs(d.graph.graphs[1]) == sorted(zip(e[:, 0].tolist(), e[:, 1].tolist()))
    assert _edge_pairs(d.graph.graphs[4]) == sorted(zip(e[:, 1].tolist(), e[:, 0].tolist()))
    assert all(np.array_equal(d.type_features[t], truth.features[t]) for t in IGBH_COUNTS)
    assert np.array_equal(d.labels, truth.labels) and d.num_classes == 19
    n = IGBH_COUNTS["paper"]  # Note [igbh split]: 60/20/20 by paper id
    assert [int(m.sum()) for m in (d.train_mask, d.val_mask, d.test_mask)] == [18, 6, 6]
    assert d.train_mask[:18].all() and d.val_mask[18:24].all() and d.test_mask[24:n].all()
    assert load_dataset("igbh:classes=2983", data_dir=tmp_path).num_classes == 2983


def test_igbh_reads_the_types_and_relations_of_the_larger_sizes_when_present(tmp_path):
    truth = write_igbh(tmp_path)
    (truth.folder / "journal").mkdir()
    np.save(truth.folder / "journal" / "node_feat.npy", np.ones((3, 16), dtype=np.float32))
    (truth.folder / "paper__published__journal").mkdir()
    np.save(truth.folder / "paper__published__journal" / "edge_index.npy", np.array([[0, 1], [2, 2]]))
    widths, relations, target, classes = typed_schema("igbh", tmp_path)
    assert list(widths) == ["paper", "author", "institute", "fos", "journal"]
    assert [str(r) for r in relations][4] == "paper-published->journal" and len(relations) == 9
    assert load_dataset("igbh", data_dir=tmp_path).graph.graphs[4].num_edges == 2


def test_datasets_lists_ogbn_mag_and_igbh_with_types_and_relations(tmp_path, capsys):
    write_igbh(tmp_path)
    assert main(["datasets", "--data-dir", str(tmp_path), "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    mag, igbh = rows["ogbn-mag"]["typed"][0], rows["igbh"]["typed"]
    assert mag["relations"] == ["author-affiliated_with->institution", "author-writes->paper", "paper-cites->paper",
                                "paper-has_topic->field_of_study", "institution-rev_affiliated_with->author",
                                "paper-rev_writes->author", "field_of_study-rev_has_topic->paper"]
    assert mag["node_types"]["paper"] == {"nodes": 736389, "features": 128}  # published: not present here
    assert rows["igbh"]["present"] and igbh[0]["name"] == "igbh:size=tiny"
    assert igbh[0]["node_types"]["author"] == {"nodes": 40, "features": 16} and igbh[0]["relations"] == IGBH_RELATIONS
    assert igbh[1]["node_types"]["paper"] == {"nodes": None, "features": 1024}  # small: absent, as published
    assert main(["datasets", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "paper 30x16, author 40x16" in out
    assert "paper ?x1024" in out and "paper 736,389x128" in out


def _refused(args: list[str], tmp_path, capsys, monkeypatch) -> str:
    from gnnbench.run import runner

    def no_training(*_a, **_k):
        raise AssertionError("a worker started for bad input")

    monkeypatch.setattr(runner, "run_task", no_training)
    code = main(["run", "--system", "reference", *args, "--data-dir", str(tmp_path), "--results",
                 str(tmp_path / "new" / "r.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and not (tmp_path / "new").exists(), err
    return err.removeprefix("gnnbench run: ").rstrip("\n")


def test_a_missing_file_is_named(tmp_path, capsys, monkeypatch):
    mag = write_ogbn_mag(tmp_path).folder
    (mag / "raw" / "relations" / "paper___cites___paper" / "edge.csv.gz").unlink()
    assert _refused(["--model", "rgcn", "--dataset", "ogbn-mag"], tmp_path, capsys, monkeypatch) == (
        f"ogbn-mag: {mag}/raw/relations/paper___cites___paper/edge.csv.gz is missing; run `gnnbench datasets fetch "
        f"ogbn-mag` on a machine with internet, or put OGB's ogbn-mag files "
        f"(http://snap.stanford.edu/ogb/data/nodeproppred/mag.zip, extracted) in {tmp_path}/ogbn_mag and pass "
        f"--data-dir {tmp_path}")
    igbh = write_igbh(tmp_path).folder
    (igbh / "fos" / "node_feat.npy").unlink()
    assert _refused(["--model", "rgat", "--dataset", "igbh"], tmp_path, capsys, monkeypatch) == (
        f"igbh: {igbh}/fos/node_feat.npy is missing; download IGBH-tiny with IGB's scripts "
        f"(https://github.com/IllinoisGraphBenchmark/IGB-Datasets) and put its processed/ folder at {igbh} (or pass "
        f"--data-dir)")


def test_a_relation_naming_an_unknown_node_type_is_one_line(tmp_path, capsys, monkeypatch):
    igbh = write_igbh(tmp_path).folder
    (igbh / "paper__venue__conference").mkdir()
    np.save(igbh / "paper__venue__conference" / "edge_index.npy", np.array([[0, 0]]))
    assert _refused(["--model", "rgat", "--dataset", "igbh"], tmp_path, capsys, monkeypatch) == (
        f"igbh: relation 'paper-venue->conference' of {igbh}/paper__venue__conference/edge_index.npy names node "
        f"type 'conference', which is not among the node types of {igbh} (its TYPE/node_feat.npy folders): paper, "
        f"author, institute, fos")
    mag = write_ogbn_mag(tmp_path).folder
    text_gz(mag / "raw" / "triplet-type-list.csv.gz", "author,writes,paper\npaper,in,venue\n")
    with pytest.raises(UserError) as err:
        typed_schema("ogbn-mag", tmp_path)
    assert str(err.value) == (
        f"ogbn-mag: relation 'paper-in->venue' of {mag}/raw/triplet-type-list.csv.gz names node type 'venue', which "
        f"is not among the node types of {mag}/raw/num-node-dict.csv.gz: author, field_of_study, institution, paper")


def test_an_empty_node_type_is_one_line(tmp_path, capsys, monkeypatch):
    igbh = write_igbh(tmp_path).folder
    np.save(igbh / "institute" / "node_feat.npy", np.zeros((0, 16), dtype=np.float32))
    assert _refused(["--model", "rgat", "--dataset", "igbh"], tmp_path, capsys, monkeypatch) == (
        f"igbh: node type 'institute' has 0 nodes in {igbh}/institute/node_feat.npy (an empty type); every node "
        f"type needs at least one")
    mag = write_ogbn_mag(tmp_path).folder
    text_gz(mag / "raw" / "num-node-dict.csv.gz", "author,field_of_study,institution,paper\n40,9,0,30\n")
    with pytest.raises(UserError) as err:
        typed_schema("ogbn-mag", tmp_path)
    assert str(err.value) == (f"ogbn-mag: node type 'institution' has 0 nodes in {mag}/raw/num-node-dict.csv.gz (an "
                              f"empty type); every node type needs at least one")


def test_models_that_do_not_fit_a_real_typed_dataset_are_one_line(tmp_path, capsys, monkeypatch):
    igbh = write_igbh(tmp_path).folder
    assert _refused(["--model", "gcn", "--dataset", "igbh"], tmp_path, capsys, monkeypatch) == (
        "model 'gcn' takes a homogeneous graph, but dataset 'igbh:classes=19,size=tiny' is typed (node types and "
        "relations); use a relational model: rgcn, rgat")
    np.save(igbh / "author" / "node_feat.npy", np.ones((IGBH_COUNTS["author"], 8), dtype=np.float32))
    assert _refused(["--model", "rgcn", "--dataset", "igbh"], tmp_path, capsys, monkeypatch).startswith(
        "rgcn needs one feature width for every node type (its self-connection W_0, like RGCNConv's and "
        "RelGraphConv's, is one matrix), but the node types have paper=16, author=8, institute=16, fos=16;")


@pytest.mark.parametrize("name,message", [
    ("igbh:size=full", "igbh size='full' is published as headerless arrays, not read yet; choose one of: tiny, "
                       "small, medium"),
    ("igbh:size=huge", "igbh size='huge' is no IGBH size; choose one of: tiny, small, medium"),
    ("igbh:classes=7", "igbh classes must be one of IGBH's two label sets, 19 or 2983 (got 7)"),
])
def test_igbh_parameters_are_checked_by_name(name, message):
    with pytest.raises(UserError) as err:
        canonical_name(name)
    assert str(err.value) == message


def test_bad_ids_in_a_relation_name_the_file(tmp_path):
    igbh = write_igbh(tmp_path).folder
    path = igbh / "paper__topic__fos" / "edge_index.npy"
    np.save(path, np.array([[0, 1], [3, 9]]))
    with pytest.raises(UserError) as err:
        load_dataset("igbh", data_dir=tmp_path)
    assert str(err.value) == f"{path}: destination (fos) id 9 outside [0, 9); the files are not from one dataset"


@pytest.mark.parametrize("model,dataset,kw", [("rgcn", "ogbn-mag", {}), ("rgat", "igbh", {"heads": 2})])
def test_both_models_train_on_the_real_typed_layouts(tmp_path, model, dataset, kw):
    from gnnbench.run.harness import RunConfig, train

    write_ogbn_mag(tmp_path)
    write_igbh(tmp_path)
    row = train(RunConfig(system="reference", model=model, dataset=dataset, data_dir=str(tmp_path), epochs=2,
                          warmup=1, hidden=8, check=False, **kw))  # the run-time check: tests/relational
    assert row["status"] == "ok", row.get("error")


def test_reading_through_ogb_never_asks_pypi_whether_ogb_is_outdated():
    """Note [reading ogbn-mag through OGB]: ``import ogb`` checks PyPI through the ``outdated`` package; a fresh
    interpreter shows the loader's import skips it (a network call in every load otherwise)."""
    import subprocess
    import sys

    code = ("import sys, threading; from gnnbench.datasets.ogb_mag import _ogb_readers; _ogb_readers(); "
            "print('outdated' in sys.modules, 'ogb' in sys.modules, threading.active_count())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "1"], done.stderr


def test_a_target_type_without_labels_is_one_line_naming_the_label_file(tmp_path, capsys, monkeypatch):
    """Issue 58's bad input: IGBH and ogbn-mag label only papers, their target; without the papers' label file
    the run is refused before any worker, naming it."""
    igbh = write_igbh(tmp_path).folder
    (igbh / "paper" / "node_label_19.npy").unlink()
    assert _refused(["--model", "rgat", "--dataset", "igbh", "--batching", "sampled", "--fanouts", "5,10,15"],
                    tmp_path, capsys, monkeypatch).startswith(
        f"igbh: {igbh}/paper/node_label_19.npy is missing; download IGBH-tiny with IGB's scripts")
    mag = write_ogbn_mag(tmp_path).folder
    labels = mag / "raw" / "node-label" / "paper" / "node-label.csv.gz"
    labels.unlink()
    assert _refused(["--model", "rgcn", "--dataset", "ogbn-mag"], tmp_path, capsys, monkeypatch).startswith(
        f"ogbn-mag: {labels} is missing; run `gnnbench datasets fetch ogbn-mag`")
