"""Real datasets from fixtures in their publishers' layouts (datasets/ogb.py, reddit.py, amazon.py, planetoid.py)."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from gnnbench.datasets import load_dataset
from gnnbench.datasets.cache import cache_path, read_manifest, verify_cached
from gnnbench.datasets.planetoid import SHA256
from gnnbench.errors import UserError

from . import publishers


def _edge_set(graph):
    src, dst = graph.edges()
    return {(int(a), int(b)) for a, b in zip(src, dst) if a < b}


def _check_graph(ds, truth):
    assert ds.num_nodes == truth.num_nodes
    assert _edge_set(ds.graph) == truth.edges
    assert ds.graph.num_edges == truth.num_directed_edges, "both directions, no loops, no duplicates"


@pytest.mark.parametrize("name", ["ogbn-arxiv", "ogbn-products"])
def test_ogb_multiclass(tmp_path, name):
    truth = publishers.write_ogb(tmp_path, name)
    ds = load_dataset(name, data_dir=tmp_path)
    _check_graph(ds, truth)
    np.testing.assert_allclose(ds.features, truth.features, rtol=1e-6)
    assert np.array_equal(ds.labels, truth.labels) and ds.num_classes == truth.labels.max() + 1
    for mask, ids in ((ds.train_mask, truth.train), (ds.val_mask, truth.val), (ds.test_mask, truth.test)):
        assert np.array_equal(np.flatnonzero(mask), ids)
    assert ds.task == "multiclass" and ds.provenance["built"]


def test_ogbn_proteins_is_multilabel_with_mean_edge_features(tmp_path):
    truth = publishers.write_ogb(tmp_path, "ogbn-proteins")
    ds = load_dataset("ogbn-proteins", data_dir=tmp_path)
    _check_graph(ds, truth)
    assert ds.task == "multilabel" and ds.num_classes == 112 and ds.labels.shape == (truth.num_nodes, 112)
    assert np.array_equal(ds.labels, truth.labels)
    np.testing.assert_allclose(ds.features, truth.features, rtol=1e-5, atol=1e-6)


def test_reddit(tmp_path):
    truth = publishers.write_reddit(tmp_path)
    ds = load_dataset("reddit", data_dir=tmp_path)
    _check_graph(ds, truth)
    assert ds.num_features == 602 and ds.num_classes == 41
    assert np.array_equal(ds.features, truth.features) and np.array_equal(ds.labels, truth.labels)
    assert np.array_equal(np.flatnonzero(ds.train_mask), truth.train)
    assert np.array_equal(np.flatnonzero(ds.test_mask), truth.test)


@pytest.mark.parametrize("name", ["amazon-computers", "amazon-photo"])
def test_amazon_split_20_30_per_class(tmp_path, name):
    truth = publishers.write_amazon(tmp_path, name)
    ds = load_dataset(name, data_dir=tmp_path)
    _check_graph(ds, truth)
    assert np.array_equal(ds.features, truth.features)
    per_class = lambda m: np.bincount(ds.labels[m], minlength=ds.num_classes)  # noqa: E731
    assert (per_class(ds.train_mask) == 20).all() and (per_class(ds.val_mask) == 30).all()
    assert (ds.train_mask | ds.val_mask | ds.test_mask).all()
    assert np.array_equal(load_dataset(name, data_dir=tmp_path).train_mask, ds.train_mask), "fixed split"


def test_pubmed(tmp_path):
    truth = publishers.write_planetoid(tmp_path)
    ds = load_dataset("pubmed", data_dir=tmp_path)
    _check_graph(ds, truth)
    np.testing.assert_allclose(ds.features, truth.features, rtol=1e-6)
    assert np.array_equal(ds.labels, truth.labels)
    assert np.array_equal(np.flatnonzero(ds.test_mask), truth.test)
    assert np.array_equal(np.flatnonzero(ds.val_mask), truth.val)


def test_second_load_is_memory_mapped_from_the_cache(tmp_path):
    publishers.write_reddit(tmp_path / "raw")
    first = load_dataset("reddit", data_dir=tmp_path / "raw")
    manifest = read_manifest("reddit")
    assert manifest["converter"] == "reddit" and manifest["version"] == 1 and manifest["format"] == 2
    assert set(manifest["sources"]) == {"reddit_data.npz", "reddit_graph.npz"}
    assert set(manifest["arrays"]) >= {"indptr", "indices", "reverse", "loops_indptr", "features", "labels"}
    verify_cached("reddit")
    # the raw files may go: the cache is enough
    for f in (tmp_path / "raw" / "reddit").iterdir():
        f.unlink()
    again = load_dataset("reddit")
    assert not again.provenance["built"]
    assert isinstance(again.features, np.memmap) and not again.features.flags.writeable
    assert again.graph.signature() == first.graph.signature()
    # the transpose and self-loop graph come from the cache, equal to what Graph computes itself
    looped = again.graph.with_self_loops()
    assert "transpose" in looped._cache
    fresh = type(looped)(np.array(looped.indptr), np.array(looped.indices), looped.num_nodes)
    for ours, theirs in zip(looped.view(transposed=True).__dict__.values(), fresh.view(transposed=True).__dict__.values()):
        if isinstance(ours, np.ndarray):
            assert np.array_equal(ours, theirs)
    assert looped.signature() == first.graph.to_index_dtype(np.int64).with_self_loops().signature()
    small = load_dataset("reddit", index_dtype=np.int32)
    assert small.graph.index_dtype == np.int32
    assert small.graph.with_self_loops().view(transposed=True).edge_ids.dtype == np.int32


def test_a_corrupt_cache_array_is_named(tmp_path):
    publishers.write_amazon(tmp_path, "amazon-photo")
    load_dataset("amazon-photo", data_dir=tmp_path)
    path = cache_path("amazon-photo") / "labels.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.unlink()
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"labels\.npy: sha256 differs from its manifest"):
        verify_cached("amazon-photo")


def _truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


@pytest.mark.parametrize("name, writer, damage, message", [
    ("ogbn-arxiv", lambda r: publishers.write_ogb(r, "ogbn-arxiv"),
     lambda r: _truncate(r / "ogbn_arxiv" / "raw" / "edge.csv.gz"), r"edge\.csv\.gz: "),
    ("ogbn-arxiv", lambda r: publishers.write_ogb(r, "ogbn-arxiv"),
     lambda r: (r / "ogbn_arxiv" / "raw" / "node-feat.csv.gz").write_bytes(b"not gzip"), r"node-feat\.csv\.gz: "),
    ("ogbn-products", lambda r: publishers.write_ogb(r, "ogbn-products"),
     lambda r: (r / "ogbn_products" / "raw" / "num-node-list.csv.gz").write_bytes(gzip.compress(b"10\n")),
     r"edge\.csv\.gz: node id \d+ outside \[0, 10\)"),
    ("reddit", publishers.write_reddit, lambda r: _truncate(r / "reddit" / "reddit_graph.npz"),
     r"reddit_graph\.npz: not a readable \.npz"),
    ("reddit", publishers.write_reddit,
     lambda r: np.savez(r / "reddit" / "reddit_data.npz", feature=np.array([object()], dtype=object),
                        label=np.zeros(1), node_types=np.ones(1)),
     r"reddit_data\.npz: not a readable \.npz \(ValueError: Object arrays cannot be loaded"),
    ("reddit", publishers.write_reddit,
     lambda r: np.savez(r / "reddit" / "reddit_data.npz", feature=np.zeros((3, 2), np.float32),
                        label=np.zeros(3), node_types=np.ones(3)),
     r"reddit_graph\.npz: expected a 3 x 3 COO matrix"),
    ("amazon-computers", lambda r: publishers.write_amazon(r, "amazon-computers"),
     lambda r: np.savez(r / "amazon" / "amazon_electronics_computers.npz", labels=np.zeros(3)),
     r"amazon_electronics_computers\.npz: missing array\(s\) adj_data"),
    ("pubmed", publishers.write_planetoid, lambda r: _truncate(r / "ind.pubmed.allx"),
     r"ind\.pubmed\.allx: not a readable Planetoid pickle"),
])
def test_corrupt_raw_files_are_one_line_naming_the_file(tmp_path, name, writer, damage, message):
    writer(tmp_path)
    damage(tmp_path)
    with pytest.raises(UserError, match=message) as err:
        load_dataset(name, data_dir=tmp_path)
    assert "\n" not in str(err.value)
    assert not cache_path(name).exists(), "nothing half-written"


def test_missing_files_say_where_to_put_them(tmp_path):
    with pytest.raises(UserError) as err:
        load_dataset("ogbn-arxiv", data_dir=tmp_path)
    assert str(err.value) == (
        f"no ogbn-arxiv files in {tmp_path}: run `gnnbench datasets fetch ogbn-arxiv` on a machine with internet, "
        f"or put raw/edge.csv.gz ... (8 files) from http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip "
        f"(extracted) in {tmp_path / 'ogbn_arxiv'} and pass --data-dir {tmp_path}")


def test_pubmed_has_no_known_checksums_but_cora_does():
    assert "ind.cora.x" in SHA256 and not any(k.startswith("ind.pubmed") for k in SHA256)


def test_pubmed_in_pygs_folder_layout(tmp_path):
    truth = publishers.write_planetoid(tmp_path / "PubMed" / "raw")
    assert load_dataset("pubmed", data_dir=tmp_path).num_nodes == truth.num_nodes
