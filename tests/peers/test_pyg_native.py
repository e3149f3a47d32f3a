"""gnnbench/peers/pyg_native.py: its options give PyG the graph as edge_index or a sparse adj_t, optionally through
isplib.patch_pyg(); every form trains the same function."""
from __future__ import annotations

import pytest

pytest.importorskip("torch_geometric")

from gnnbench.errors import UserError  # noqa: E402
from gnnbench.run.harness import RunConfig, train  # noqa: E402

TINY = "sbm:nodes=120,classes=2,features=8,degree=4"


@pytest.fixture(autouse=True)
def _unpatched():
    """Each test leaves pyg-native as it found it: PyG unpatched and the default options. ``train`` configures
    the module in this process, and a later test in the same worker (the model check's pyg-native GAT) once
    built its layer on the sparse adjacency this file's last run had left set."""
    from gnnbench.peers.pyg_native import _OPTIONS
    from gnnbench.systems.isplib import pyg_patch

    was, options = pyg_patch.is_patched(), dict(_OPTIONS)
    yield
    _OPTIONS.update(options)
    if not was and pyg_patch.is_patched():
        pyg_patch.unpatch_pyg()


@pytest.mark.parametrize("model", ["gcn", "gat", "sage", "gin"])
def test_every_adjacency_trains_the_same_function(model):
    def losses(options):
        row = train(RunConfig(system="pyg-native", model=model, dataset=TINY, epochs=2, warmup=1,
                             system_options=options))
        assert row["status"] == "ok", row.get("error")
        assert row["hyperparameters"]["system_options"] == dict(options)
        return row["first_loss"], row["final_loss"]

    plain = losses(())
    assert losses((("adjacency", "sparse"),)) == pytest.approx(plain, rel=1e-4)
    assert losses((("adjacency", "sparse"), ("patch", "isplib"))) == pytest.approx(plain, rel=1e-4)


def test_a_sparse_adjacency_refuses_parallel_edges_rather_than_merging_them():
    """torch.sparse merges a repeated edge into one entry of value 2: GAT's softmax and SAGE's mean would then
    differ from every other system's (found by the model check's graph, whose two nodes are joined twice)."""
    import numpy as np
    import torch

    from gnnbench.peers.pyg_native import _adjacency, configure
    from gnnbench.runtime.graph import Graph

    configure(adjacency="sparse")
    simple = Graph.from_edges(np.array([1, 2, 0, 0]), np.array([0, 0, 1, 2]), 4)  # node 3 isolated
    assert _adjacency(simple, torch.tensor(np.stack(simple.edges())), torch.float64).to_dense().sum() == 4
    doubled = Graph.from_edges(np.array([1, 1, 2, 0, 0, 2]), np.array([0, 0, 0, 1, 2, 1]), 4)
    with pytest.raises(UserError, match=r"cannot hold this graph's 1 parallel edge\(s\).*use adjacency=edge_index"):
        _adjacency(doubled, torch.tensor(np.stack(doubled.edges())), torch.float64)


def test_bad_options_are_refused_with_the_choices():
    from gnnbench.peers.pyg_native import configure

    with pytest.raises(UserError, match="adjacency must be one of edge_index, sparse"):
        configure(adjacency="csr")
    with pytest.raises(UserError, match="add -o adjacency=sparse"):
        configure(patch="isplib")
    configure()  # back to the defaults


def test_preflight_names_the_allowed_options():
    from gnnbench.run.config import make_config
    from gnnbench.run.preflight import check_options

    with pytest.raises(UserError, match="has no such option; allowed: adjacency, patch"):
        check_options(make_config({"system": "pyg-native", "model": "gcn", "system_options": {"speed": "max"}}))
    with pytest.raises(UserError, match="is a native baseline and takes no options"):
        check_options(make_config({"system": "dgl-native", "model": "gcn", "system_options": {"x": "1"}}))
