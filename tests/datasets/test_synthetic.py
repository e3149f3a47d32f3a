import numpy as np
import pytest

from gnnbench.datasets import load_dataset
from gnnbench.datasets.synthetic import planetoid_style_split
from gnnbench.errors import UserError


def _arrays(ds):
    g = ds.graph
    return (g.indptr, g.indices, ds.features, ds.labels, ds.train_mask, ds.val_mask, ds.test_mask)


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(_arrays(a), _arrays(b)))


def _assert_symmetric_simple(graph):
    src, dst = graph.edges()
    keys = dst * graph.num_nodes + src
    assert np.all(src != dst)
    assert np.all(np.diff(keys) > 0), "canonical order, no duplicates"
    assert np.array_equal(np.sort(keys), np.sort(src * graph.num_nodes + dst))


def test_sbm_default_sizes():
    ds = load_dataset("sbm")
    assert ds.name == "sbm:classes=4,degree=12,features=32,nodes=2500,p_in=0.8,seed=0"
    d = ds.describe()
    assert (d["nodes"], d["features"], d["classes"]) == (2500, 32, 4)
    assert 29000 <= d["edges"] <= 30000  # 2500 * 12 draws, minus loops and duplicates
    assert (d["train"], d["val"], d["test"]) == (80, 500, 1000)
    assert np.array_equal(np.bincount(ds.labels[ds.train_mask]), [20, 20, 20, 20])
    _assert_symmetric_simple(ds.graph)


def test_sbm_deterministic_per_seed(tmp_path, monkeypatch):
    a = load_dataset("sbm:nodes=300,seed=3")
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path / "other"))  # regenerate, not read back
    b = load_dataset("sbm:seed=3,nodes=300")
    c = load_dataset("sbm:nodes=300,seed=4")
    assert a.name == b.name and _same(a, b)
    assert not np.array_equal(a.features, c.features)


def test_sbm_homophily_follows_p_in():
    for p_in in (0.2, 0.9):
        ds = load_dataset(f"sbm:nodes=1000,degree=20,p_in={p_in}")
        src, dst = ds.graph.edges()
        assert abs(np.mean(ds.labels[src] == ds.labels[dst]) - p_in) < 0.05


def test_sbm_small_graph_split_is_proportional():
    ds = load_dataset("sbm:nodes=100,classes=2,degree=4")
    d = ds.describe()
    assert d["train"] >= 2 and d["train"] + d["val"] + d["test"] == 100
    assert np.array_equal(np.bincount(ds.labels[ds.train_mask], minlength=2) > 0, [True, True])


@pytest.mark.parametrize("name, match", [
    ("sbm:nodes=3,classes=4", "at least 10 nodes per class"),
    ("sbm:nodes=40,degree=40", "degree must be below nodes"),
    ("rmat:nodes=1024,edges=1001", "must be even"),
    ("rmat:nodes=16,edges=200", "too dense"),
])
def test_bad_generator_combinations(name, match):
    with pytest.raises(UserError, match=match):
        load_dataset(name)


def test_rmat_exact_edges_and_power_law():
    ds = load_dataset("rmat:nodes=4096,edges=60000,features=8,classes=4,seed=1")
    assert ds.describe() == {"nodes": 4096, "edges": 60000, "features": 8, "classes": 4,
                             "train": 2457, "val": 819, "test": 820, "task": "multiclass"}
    _assert_symmetric_simple(ds.graph)
    deg = ds.graph.in_degree
    assert deg.max() > 20 * deg.mean(), "R-MAT degrees are heavy-tailed"
    assert np.all(np.bincount(ds.labels, minlength=4) > 0)


def test_rmat_deterministic_per_seed(tmp_path, monkeypatch):
    name = "rmat:nodes=1000,edges=8000,features=4,classes=3,seed=7"
    a = load_dataset(name)
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path / "other"))
    b = load_dataset(name)
    c = load_dataset(name.replace("seed=7", "seed=8"))
    assert _same(a, b)
    assert not np.array_equal(a.graph.indices, c.graph.indices)
    assert a.graph.num_edges == 8000  # nodes not a power of two: out-of-range samples dropped


def test_planetoid_style_split_standard():
    rng = np.random.default_rng(0)
    labels = np.arange(3000) % 5
    train, val, test = planetoid_style_split(labels, 5, rng)
    assert (train.sum(), val.sum(), test.sum()) == (100, 500, 1000)
    assert not (train & val).any() and not (train & test).any() and not (val & test).any()
    assert np.array_equal(np.bincount(labels[train]), [20] * 5)
