"""Names, parameters and the on-disk cache (gnnbench/datasets/registry.py, cache.py)."""
import os

import numpy as np
import pytest

from gnnbench.datasets import DatasetInfo, list_datasets, load_dataset
from gnnbench.datasets import synthetic
from gnnbench.datasets.cache import cache_path, load_cached
from gnnbench.datasets.registry import canonical_name
from gnnbench.errors import UserError


def test_canonical_name_fills_defaults_and_sorts():
    assert canonical_name("sbm") == "sbm:classes=4,degree=12,features=32,nodes=2500,p_in=0.8,seed=0"
    assert canonical_name(" SBM: seed = 2 , nodes=1_000 ") == \
        "sbm:classes=4,degree=12,features=32,nodes=1000,p_in=0.8,seed=2"
    assert canonical_name("rmat") == "rmat:classes=8,edges=4000000,features=128,nodes=131072,seed=0"
    assert canonical_name("sbm:p_in=1") == canonical_name("sbm:p_in=1.0")
    assert canonical_name("cora") == "cora"


def test_name_round_trip():
    ds = load_dataset("sbm:nodes=200,p_in=0.5,classes=3")
    assert ds.name == "sbm:classes=3,degree=12,features=32,nodes=200,p_in=0.5,seed=0"
    again = load_dataset(ds.name)
    assert again.name == ds.name
    assert again.graph.signature() == ds.graph.signature()


def test_unknown_dataset_lists_choices():
    with pytest.raises(UserError) as err:
        load_dataset("pubmedx")
    assert str(err.value) == ("unknown dataset 'pubmedx'; choose one of: cora, citeseer, pubmed, ogbn-arxiv, "
                              "ogbn-products, ogbn-proteins, reddit, amazon-computers, amazon-photo, karate, "
                              "sbm:..., rmat:..., hetero:..., ogbn-mag, igbh:...")


@pytest.mark.parametrize("name, message", [
    ("sbm:size=10", "unknown parameter 'size' for dataset 'sbm'; allowed keys: "
                    "classes, degree, features, nodes, p_in, seed"),
    ("rmat:nodes=64,density=3", "unknown parameter 'density' for dataset 'rmat'; allowed keys: "
                                "classes, edges, features, like, nodes, scale, seed"),
    ("sbm:nodes=abc", "parameter 'nodes' of dataset 'sbm' must be an integer in [2, 2147483647] (got 'abc')"),
    ("sbm:nodes=1.5", "parameter 'nodes' of dataset 'sbm' must be an integer in [2, 2147483647] (got '1.5')"),
    ("sbm:p_in=1.5", "parameter 'p_in' of dataset 'sbm' must be a number in [0.0, 1.0] (got '1.5')"),
    ("sbm:p_in=nan", "parameter 'p_in' of dataset 'sbm' must be a number in [0.0, 1.0] (got 'nan')"),
    ("sbm:seed=-1", "parameter 'seed' of dataset 'sbm' must be an integer >= 0 (got '-1')"),
    ("sbm:seed", "dataset parameter 'seed' of 'sbm' must be written key=value, e.g. sbm:seed=1"),
    ("sbm:seed=1,seed=2", "parameter 'seed' is given twice in dataset name 'sbm:seed=1,seed=2'"),
    ("karate:seed=1", "dataset 'karate' takes no parameters (got 'seed=1'); use plain 'karate'"),
])
def test_bad_parameters(name, message):
    with pytest.raises(UserError) as err:
        load_dataset(name)
    assert str(err.value) == message


def test_bad_index_dtype():
    with pytest.raises(UserError, match="index dtype must be int32 or int64"):
        load_dataset("karate", index_dtype=np.float32)


def test_index_dtype_int32_from_cache():
    a = load_dataset("sbm:nodes=300", index_dtype=np.int32)  # generated
    b = load_dataset("sbm:nodes=300", index_dtype="int32")   # from the cache
    assert a.graph.index_dtype == b.graph.index_dtype == np.int32
    assert np.array_equal(a.graph.indices, b.graph.indices)


def test_cache_written_once_and_reused(monkeypatch, tmp_path):
    calls = []
    real = synthetic.sbm
    monkeypatch.setattr(synthetic, "sbm", lambda *a, **k: calls.append(1) or real(*a, **k))
    a = load_dataset("sbm:nodes=300")
    path = cache_path(a.name)
    assert (path / "manifest.json").is_file() and path.parent == tmp_path / "cache" / "datasets"
    assert [p.name for p in path.parent.iterdir()] == [path.name], "no temp folders left behind"
    b = load_dataset("sbm:nodes=300,seed=0")
    assert len(calls) == 1
    assert np.array_equal(a.features, b.features) and a.graph.signature() == b.graph.signature()


def test_corrupt_cache_is_regenerated():
    a = load_dataset("sbm:nodes=300")
    signature, labels = a.graph.signature(), np.array(a.labels)
    corrupt = cache_path(a.name) / "indices.npy"
    corrupt.unlink()  # a new file: `a` still maps the old one (truncating a mapped file is SIGBUS)
    corrupt.write_bytes(b"not an npy file")
    b = load_dataset(a.name)
    assert b.graph.signature() == signature and np.array_equal(b.labels, labels)
    assert load_cached(a.name, synthetic.SBM_VERSION) is not None, "rewritten"


def test_stale_cache_is_ignored():
    a = load_dataset("sbm:nodes=300")
    assert load_cached(a.name, synthetic.SBM_VERSION + 1) is None, "other generator version"
    os.replace(cache_path(a.name), cache_path("sbm:other"))
    assert load_cached("sbm:other", synthetic.SBM_VERSION) is None, "other name stored inside"


def test_unwritable_cache_warns_and_still_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("GNNBENCH_CACHE", str(blocker))
    with pytest.warns(UserWarning, match="could not cache dataset"):
        ds = load_dataset("sbm:nodes=100")
    assert ds.num_nodes == 100


def test_list_datasets():
    infos = {i.name: i for i in list_datasets()}
    assert list(infos) == ["cora", "citeseer", "pubmed", "ogbn-arxiv", "ogbn-products", "ogbn-proteins", "reddit",
                           "amazon-computers", "amazon-photo", "karate", "sbm", "rmat", "hetero", "ogbn-mag", "igbh"]
    assert all(isinstance(i, DatasetInfo) and i.description for i in infos.values())
    assert infos["cora"].needs_data_dir and not infos["sbm"].needs_data_dir
    assert infos["sbm"].parameters == synthetic.SBM_DEFAULTS
    assert infos["rmat"].parameters["edges"] == 4000000
    assert infos["sbm"].example == canonical_name("sbm")
    assert infos["karate"].parameters == {} and infos["karate"].example == "karate"
