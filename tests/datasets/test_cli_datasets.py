"""``gnnbench datasets`` and ``gnnbench run`` on every real dataset's fixture (gnnbench/cli/datasets.py)."""
from __future__ import annotations

import json

import numpy as np

import pytest

from gnnbench.cli import main
from gnnbench.datasets.sources import SOURCES

from . import publishers

_WRITERS = {
    "pubmed": publishers.write_planetoid,
    "ogbn-arxiv": lambda r: publishers.write_ogb(r, "ogbn-arxiv"),
    "ogbn-products": lambda r: publishers.write_ogb(r, "ogbn-products"),
    "reddit": publishers.write_reddit,
    "amazon-computers": lambda r: publishers.write_amazon(r, "amazon-computers"),
    "amazon-photo": lambda r: publishers.write_amazon(r, "amazon-photo"),
}


def test_listing_states_sizes_source_license_presence_and_how_to_get(tmp_path, capsys):
    publishers.write_reddit(tmp_path)
    assert main(["datasets", "--json", "--data-dir", str(tmp_path)]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    reddit = rows["reddit"]
    assert (reddit["nodes"], reddit["edges"], reddit["features"], reddit["classes"], reddit["task"]) == \
        (232965, 114615892, 602, 41, "multiclass")
    assert reddit["source"] == "https://data.dgl.ai/dataset/reddit.zip" and reddit["license"]
    assert reddit["present"] and reddit["where"] == str(tmp_path / "reddit")
    assert not rows["ogbn-arxiv"]["present"]
    assert rows["ogbn-arxiv"]["how_to_get"] == (f"gnnbench datasets fetch ogbn-arxiv, or put the publisher's files "
                                                f"in {tmp_path / 'ogbn_arxiv'} (--data-dir / GNNBENCH_DATA_DIR)")
    assert rows["ogbn-proteins"]["task"] == "multilabel" and "ROC-AUC" in rows["ogbn-proteins"]["split"]
    assert set(SOURCES) <= set(rows) and "split" in rows["amazon-photo"]
    assert main(["datasets", "--data-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    reddit_lines = [line.split("  ") for line in text.splitlines() if line.startswith("reddit ")]
    cells = [[c.strip() for c in line if c.strip()] for line in reddit_lines]
    assert cells[0] == ["reddit", "232,965", "114,615,892", "602", "41 classes", "published", "present"]
    assert cells[1][-1] == str(tmp_path / "reddit")  # the folder, in the "where from" table


def test_sizes_measures_present_datasets(tmp_path, capsys):
    publishers.write_amazon(tmp_path, "amazon-photo")
    assert main(["datasets", "--sizes", "--json", "--data-dir", str(tmp_path)]) == 0
    photo = {r["name"]: r for r in json.loads(capsys.readouterr().out)}["amazon-photo"]
    assert photo["measured"] and photo["nodes"] == 600 and photo["train"] == 160


def test_sizes_with_a_missing_data_dir_is_one_line(capsys):
    assert main(["datasets", "--sizes", "--data-dir", "/nonexistent"]) == 2
    assert capsys.readouterr().err == ("gnnbench datasets: data folder /nonexistent (from --data-dir) does not "
                                       "exist; pass an existing folder\n")


@pytest.mark.parametrize("model", ["gcn", "gat"])
@pytest.mark.parametrize("name", sorted(_WRITERS))
def test_gcn_and_gat_run_through_the_cli_on_each_fixture(tmp_path, capsys, name, model):
    _WRITERS[name](tmp_path)
    args = ["run", "--system", "reference", "--model", model, "--dataset", name, "--data-dir", str(tmp_path),
            "--epochs", "2", "--warmup", "1", "--hidden", "8", "--in-process", "--no-store", "--json"]
    if model == "gat":
        args += ["--heads", "2"]
    assert main(args) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["status"] == "ok" and row["dataset"] == name
    assert 0.0 <= row["test_accuracy"] <= 1.0


@pytest.mark.parametrize("model", ["gcn", "gat"])
def test_gcn_and_gat_run_on_ogbn_proteins_scored_by_rocauc(tmp_path, capsys, model):
    publishers.write_ogb(tmp_path, "ogbn-proteins")
    assert main(["run", "--system", "reference", "--model", model, "--dataset", "ogbn-proteins", "--data-dir",
                 str(tmp_path), "--epochs", "2", "--warmup", "1", "--hidden", "8", "--heads", "2", "--in-process",
                 "--no-store", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["status"] == "ok" and row["extra"]["metric"] == "rocauc"
    assert 0.0 <= row["test_accuracy"] <= 1.0
    assert row["first_loss"] == pytest.approx(np.log(2), abs=0.2), "BCE of near-zero logits"
