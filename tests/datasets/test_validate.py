"""``validate`` and the spec checks every command runs before a worker starts (datasets/registry.py)."""
from __future__ import annotations

import pytest

from gnnbench.datasets import registry
from gnnbench.datasets.registry import canonical_name, validate
from gnnbench.errors import UserError

from . import publishers


@pytest.mark.parametrize("name, message", [
    ("sbm:classes=1", "parameter 'classes' of dataset 'sbm' must be an integer >= 2 (got '1')"),
    ("sbm:nodes=10", "sbm needs at least 10 nodes per class, so that each class has training, validation and "
                     "test nodes (got nodes=10 for classes=4); use nodes>=40 or fewer classes"),
    ("sbm:nodes=２５００", "dataset name 'sbm:nodes=２５００' must be ASCII (got '２' at position 10); write digits "
                         "and letters as plain ASCII, e.g. sbm:nodes=2500"),
    ("rmat:nodes=10,edges=100000000000", "rmat edges=100000000000 is too dense for nodes=10: R-MAT can place at "
                                         "most about 45 directed edges there; raise nodes or lower edges"),
    ("rmat:like=nothing", "rmat like='nothing' names no real dataset; choose one of: cora, citeseer, pubmed, "
                          "ogbn-arxiv, ogbn-products, ogbn-proteins, reddit, amazon-computers, amazon-photo"),
    ("rmat:like=ogbn-mag", "rmat like='ogbn-mag' is a typed dataset, which an R-MAT graph has no types for; use "
                           "hetero:like=mag for ogbn-mag's shape"),
    ("rmat:scale=0.5", "rmat scale= needs like=NAME (got 'rmat:scale=0.5'); e.g. rmat:like=reddit,scale=0.25"),
    ("rmat:like=reddit,scale=2", "parameter 'scale' of dataset 'rmat' must be a number in [0.0, 1.0] (got '2')"),
])
def test_refused_up_front(name, message):
    with pytest.raises(UserError) as err:
        validate(name)
    assert str(err.value) == message


def test_rmat_presets_take_a_real_datasets_shape():
    assert canonical_name("rmat:like=reddit") == "rmat:classes=41,edges=114615892,features=602,nodes=232965,seed=0"
    assert canonical_name("rmat:like=ogbn-products,seed=3") == \
        "rmat:classes=47,edges=123718280,features=100,nodes=2449029,seed=3"
    assert canonical_name("rmat:features=16,like=reddit,scale=0.01") == \
        "rmat:classes=41,edges=1146158,features=16,nodes=2330,seed=0"
    for name in registry.SOURCES:
        if name != "ogbn-mag":  # typed: hetero:like=mag has its shape
            assert canonical_name(f"rmat:like={name}").startswith("rmat:")


def test_memory_estimate_is_checked_before_generating(monkeypatch):
    monkeypatch.setattr(registry, "_available_memory", lambda: 4 * 2**30)
    with pytest.raises(UserError) as err:
        validate("rmat:like=reddit")
    assert str(err.value) == ("dataset 'rmat:classes=41,edges=114615892,features=602,nodes=232965,seed=0' needs "
                              "about 6.2 GiB to generate, but only 4.0 GiB is available; lower nodes/edges, or use "
                              "rmat:like=NAME,scale=S")
    assert validate("rmat:like=reddit,scale=0.01") == canonical_name("rmat:like=reddit,scale=0.01")


def test_real_datasets_need_their_files_or_a_cache(tmp_path):
    with pytest.raises(UserError, match="no reddit files in"):
        validate("reddit", data_dir=tmp_path)
    with pytest.raises(UserError, match=r"data folder /nonexistent/x \(from --data-dir\) does not exist"):
        validate("reddit", data_dir="/nonexistent/x")
    publishers.write_reddit(tmp_path)
    assert validate("REDDIT", data_dir=tmp_path) == "reddit"
    assert validate("sbm", data_dir=tmp_path).startswith("sbm:")


def test_load_dataset_checks_memory_before_generating(monkeypatch):
    monkeypatch.setattr(registry, "_available_memory", lambda: 2**20)
    with pytest.raises(UserError, match=r"needs about 0\.\d GiB to generate, but only 0\.0 GiB is available"):
        registry.load_dataset("rmat:nodes=100000,edges=2000000")
