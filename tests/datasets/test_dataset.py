"""The Dataset container and the graph conventions (gnnbench/datasets/dataset.py)."""
import dataclasses

import numpy as np
import pytest

from gnnbench.datasets import Dataset, load_dataset
from gnnbench.datasets.dataset import build_dataset, sorted_unique, symmetric_graph


def test_symmetric_graph_dedups_and_drops_self_loops():
    g = symmetric_graph([0, 1, 1, 2, 2, 0], [1, 0, 2, 2, 1, 1], num_nodes=4)
    src, dst = g.edges()
    assert sorted(zip(src.tolist(), dst.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert g.num_nodes == 4 and g.in_degree[3] == 0


def test_symmetric_graph_index_dtype():
    assert symmetric_graph([0], [1], 2, np.int32).index_dtype == np.int32


def test_sorted_unique_matches_numpy():
    keys = np.random.default_rng(0).integers(0, 50, 1000)
    assert np.array_equal(sorted_unique(keys), np.unique(keys))
    assert sorted_unique(np.empty(0, dtype=np.int64)).size == 0


def _tiny(**override):
    g = symmetric_graph([0, 1], [1, 2], 3)
    args = dict(name="tiny", graph=g, features=np.ones((3, 2)), labels=[0, 1, 0],
                train_mask=[True, False, False], val_mask=[False, True, False],
                test_mask=[False, False, True], num_classes=2)
    args.update(override)
    return build_dataset(**args)


def test_describe_and_frozen():
    ds = _tiny()
    assert ds.describe() == {"nodes": 3, "edges": 4, "features": 2, "classes": 2, "train": 1, "val": 1, "test": 1, "task": "multiclass"}
    assert ds.features.dtype == np.float32 and ds.labels.dtype == np.int64 and ds.train_mask.dtype == np.bool_
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.name = "other"


def test_with_index_dtype():
    ds = _tiny()
    small = ds.with_index_dtype(np.int32)
    assert small.graph.index_dtype == np.int32 and small.name == ds.name
    assert small.features is ds.features
    assert ds.with_index_dtype(np.int64) is ds
    assert np.array_equal(small.graph.indices, ds.graph.indices)


@pytest.mark.parametrize("override, match", [
    (dict(labels=[0, 2, 0]), r"labels must lie in \[0, 2\)"),
    (dict(features=np.ones((2, 2))), r"features must be C-contiguous float32 \[3, F\]"),
    (dict(val_mask=[True, True, False]), "masks overlap on 1 nodes"),
])
def test_invalid_datasets(override, match):
    with pytest.raises(ValueError, match=match):
        _tiny(**override)


def test_rejects_non_contiguous_features():
    ds = _tiny()
    with pytest.raises(ValueError, match="c_contiguous=False"):
        Dataset(ds.name, ds.graph, np.ones((2, 3), dtype=np.float32).T, ds.labels, ds.train_mask,
                ds.val_mask, ds.test_mask, 2)


def test_loaded_datasets_follow_conventions():
    for name in ("karate", "sbm:nodes=200"):
        ds = load_dataset(name)
        assert isinstance(ds, Dataset)
        assert ds.features.flags.c_contiguous and ds.features.dtype == np.float32
