import os
import pickle
import shutil

import numpy as np
import pytest

from gnnbench.datasets import load_dataset
from gnnbench.datasets.planetoid import SHA256, read_pickle
from gnnbench.errors import UserError


def _assert_symmetric_simple(graph):
    src, dst = graph.edges()
    keys = dst * graph.num_nodes + src
    assert np.all(src != dst), "no self loops"
    assert np.unique(keys).size == keys.size, "no duplicate edges"
    assert np.array_equal(np.sort(keys), np.sort(src * graph.num_nodes + dst)), "both directions stored"


def test_cora_standard_split(planetoid_dir):
    ds = load_dataset("cora", data_dir=str(planetoid_dir))
    assert ds.name == "cora"
    # 5278 undirected edges after removing duplicates and self loops, as PyG's Planetoid
    assert ds.describe() == {"nodes": 2708, "edges": 10556, "features": 1433, "classes": 7,
                             "train": 140, "val": 500, "test": 1000, "task": "multiclass"}
    assert np.array_equal(np.flatnonzero(ds.train_mask), np.arange(140))
    assert np.array_equal(np.flatnonzero(ds.val_mask), np.arange(140, 640))
    assert ds.features.dtype == np.float32 and ds.features.flags.c_contiguous
    np.testing.assert_allclose(ds.features.sum(axis=1), 1.0, rtol=1e-5)
    assert np.array_equal(np.bincount(ds.labels[ds.test_mask]), [130, 91, 144, 319, 149, 103, 64])
    _assert_symmetric_simple(ds.graph)


def test_citeseer_pads_isolated_test_nodes(planetoid_dir):
    ds = load_dataset("citeseer", data_dir=planetoid_dir)
    assert ds.describe() == {"nodes": 3327, "edges": 9104, "features": 3703, "classes": 6,
                             "train": 120, "val": 500, "test": 1000, "task": "multiclass"}
    test_index = np.loadtxt(planetoid_dir / "ind.citeseer.test.index", dtype=np.int64)
    padded = np.setdiff1d(np.arange(test_index.min(), test_index.max() + 1), test_index)
    assert padded.size == 15
    assert not ds.features[padded].any(), "padded nodes have zero features"
    assert not (ds.train_mask | ds.val_mask | ds.test_mask)[padded].any()
    row_sum = ds.features.sum(axis=1)
    assert np.all((np.abs(row_sum - 1) < 1e-5) | (row_sum == 0))
    _assert_symmetric_simple(ds.graph)


def test_index_dtype_int32(planetoid_dir):
    ds = load_dataset("cora", data_dir=planetoid_dir, index_dtype=np.int32)
    assert ds.graph.index_dtype == np.int32
    assert ds.with_index_dtype(np.int64).graph.signature() == load_dataset("cora", planetoid_dir).graph.signature()


def test_env_var_and_planetoid_subfolder(planetoid_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("GNNBENCH_DATA_DIR", str(planetoid_dir))
    assert load_dataset("cora").num_nodes == 2708
    root = tmp_path / "data"
    shutil.copytree(planetoid_dir, root / "planetoid")
    assert load_dataset("cora", data_dir=root).num_nodes == 2708


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_unpickler_refuses_os_system(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "ind.cora.graph"
    path.write_bytes(pickle.dumps({0: [_Exploit(marker)]}, protocol=2))
    with pytest.raises(UserError, match=r"ind\.cora\.graph: refusing to unpickle '(posix|os|nt)\.system'"):
        read_pickle(path)
    assert not marker.exists()


def test_unpickler_refuses_builtins_eval(tmp_path):
    path = tmp_path / "ind.cora.x"
    path.write_bytes(b"c__builtin__\neval\n(S'1+1'\ntR.")
    with pytest.raises(UserError, match=r"refusing to unpickle '__builtin__\.eval'"):
        read_pickle(path)


def test_unpickler_reads_allowed_classes(planetoid_dir):
    assert read_pickle(planetoid_dir / "ind.cora.x").shape == (140, 1433)
    assert isinstance(read_pickle(planetoid_dir / "ind.cora.graph"), dict)


def test_truncated_pickle(tmp_path, planetoid_dir):
    path = tmp_path / "ind.cora.y"
    path.write_bytes((planetoid_dir / "ind.cora.y").read_bytes()[:100])
    with pytest.raises(UserError, match="not a readable Planetoid pickle"):
        read_pickle(path)


def test_checksum_mismatch(planetoid_dir, tmp_path):
    copy = tmp_path / "planetoid"
    shutil.copytree(planetoid_dir, copy)
    target = copy / "ind.cora.ty"
    target.chmod(0o644)
    data = bytearray(target.read_bytes())
    data[-10] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"ind\.cora\.ty has sha256 .* expected 41f5ac76596a1699"):
        load_dataset("cora", data_dir=copy)


def test_missing_file(planetoid_dir, tmp_path):
    copy = tmp_path / "planetoid"
    shutil.copytree(planetoid_dir, copy)
    (copy / "ind.cora.graph").unlink()
    with pytest.raises(UserError, match=r"ind\.cora\.graph is missing.*--data-dir DIR or set GNNBENCH_DATA_DIR"):
        load_dataset("cora", data_dir=copy)


def test_missing_folder(tmp_path):
    with pytest.raises(UserError, match=r"folder .*nowhere \(from --data-dir\) does not exist; pass --data-dir"):
        load_dataset("cora", data_dir=tmp_path / "nowhere")


def test_missing_env_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("GNNBENCH_DATA_DIR", str(tmp_path / "gone"))
    with pytest.raises(UserError, match=r"gone \(from GNNBENCH_DATA_DIR\) does not exist"):
        load_dataset("citeseer")


def test_no_data_dir_offline(tmp_path):
    with pytest.raises(UserError, match="GNNBENCH_OFFLINE is set; pass --data-dir DIR or set GNNBENCH_DATA_DIR"):
        load_dataset("cora")


def test_known_checksums_cover_every_file():
    parts = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
    assert set(SHA256) == {f"ind.{n}.{p}" for n in ("cora", "citeseer") for p in parts}
