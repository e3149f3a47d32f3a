import numpy as np

from gnnbench.datasets import load_dataset


def test_karate():
    ds = load_dataset("karate")
    assert ds.name == "karate"
    assert ds.describe() == {"nodes": 34, "edges": 156, "features": 34, "classes": 2,
                             "train": 4, "val": 10, "test": 20, "task": "multiclass"}
    assert np.array_equal(ds.features, np.eye(34, dtype=np.float32))
    assert ds.labels[0] == 0 and ds.labels[33] == 1  # Mr. Hi and the Officer lead the two clubs
    assert np.bincount(ds.labels).tolist() == [17, 17]
    assert np.bincount(ds.labels[ds.train_mask]).tolist() == [2, 2]
    assert np.array_equal(ds.train_mask, load_dataset("karate").train_mask), "fixed split"
