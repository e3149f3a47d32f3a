"""The run-time check (Note [run-time check]): a run checks its first forward before its epochs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gnnbench.check.run_check import RunCheckError
from gnnbench.run.harness import RunConfig, train

DEMO_SYSTEMS = Path(__file__).resolve().parents[1] / "demo_systems"


@pytest.fixture
def demos(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))


def _spec(system, model="gcn", **kw):
    return RunConfig(system, model, "karate", epochs=3, warmup=1, allocator="system", **kw)


def test_reference_passes_and_the_check_is_timed_apart():
    row = train(_spec("reference", "gat"))
    check = row["extra"]["run_check"]
    assert check["status"] == "passed" and check["dtype"] == "float32"
    assert check["operators"] == ["sddmm(op=add)", "edge_softmax", "spmm(reduce=sum, weight)"]
    assert check["seconds"] >= check["forward_seconds"] > 0 and check["rows_sampled"] >= 20


def test_no_check_says_so():
    assert train(_spec("reference", check=False))["extra"]["run_check"] == {"status": "off", "reason": "--no-check"}


def test_a_float32_path_is_caught_on_the_runs_graph(demos):
    with pytest.raises(RunCheckError, match=r"^run-time check: spmm\(reduce=sum\) output on karate at layer 0 \(N=34, E=190, "
                                            r"F=16, float32\) differs from reference on \d+ sampled rows: max abs err"):
        train(_spec("demo_float32_path"))
    assert train(_spec("demo_float32_path", dtype="float64"))["extra"]["run_check"]["status"] == "passed"


def test_an_input_written_outside_the_guard_is_caught(demos):
    with pytest.raises(RunCheckError, match="kernel .*spmm_sum wrote into its input 'x' during the first forward"):
        train(_spec("demo_run_write"))


def test_a_run_caught_by_the_check_is_stored_as_failed(demos, tmp_path):
    from gnnbench.cli import main as cli
    from gnnbench.results.store import ResultsStore

    db = tmp_path / "r.sqlite"
    cli(["run", "--system", "demo_run_write", "--model", "gcn", "--dataset", "karate", "--epochs", "3", "--warmup",
         "1", "--allocator", "system", "--results", str(db)])
    with ResultsStore(db) as store:
        (row,) = store.rows()
    assert row["status"] == "failed"
    assert "wrote into its input 'x'" in row["error"] and row["error"].startswith("run-time check: kernel ")
    assert row["extra"]["run_check"]["status"] == "failed"


def test_verify_catches_an_input_written_outside_the_guard(demos):
    """Issue 35: demo_run_write passes every guarded check; verify's end-to-end row starts the run as
    `gnnbench run` does, unguarded with the run-time check on, and fails naming what was written."""
    from gnnbench.verify.training import end_to_end

    (row,) = end_to_end("demo_run_write", models=("gcn",), threads=1)
    assert row.status == "failed"
    assert row.failures[0].startswith("end-to-end gcn on sbm (torch, float32, seed 0, outside verify's guard): "
                                      "run-time check: kernel ")
    assert "wrote into its input 'x'" in row.failures[0]
    (ok,) = end_to_end("reference", models=("gcn",), threads=1)
    assert ok.status == "passed", ok.failures


def test_a_quantised_run_is_judged_by_its_stated_bound():
    """pim's default int32 aggregation misses the float32 tolerance by design (GAT's attention weights on
    sbm: 6.6e-05 off, 1.96e-05 allowed); the check judges it by Note [quantised verification]'s bound, and
    an error beyond that bound still fails."""
    import torch

    from gnnbench.check.run_check import _compare
    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.graph import Graph
    from gnnbench.runtime.registry import load_system

    row = train(_spec("pim", model="gat"))
    assert row["extra"]["run_check"]["status"] == "passed"
    assert row["extra"]["run_check"]["quantised"] == ["spmm(reduce=sum, weight)"]

    rng = np.random.default_rng(0)
    graph = Graph.from_edges(rng.integers(0, 50, 400), rng.integers(0, 50, 400), 50, np.int64)
    x, w = torch.from_numpy(rng.random((50, 1, 8))), torch.from_numpy(rng.random((400, 1)))
    F = get_frontend("torch", "cpu", "float64")
    exact = F._call(BoundGraph(graph, load_system("reference")), "spmm", {"reduce": "sum"}, x, w)
    rows = np.arange(50)
    scales = (0.01, 0.001)
    off = exact + 0.001 * (exact != 0)   # a row with no edges has a zero bound
    assert _compare("spmm", {"reduce": "sum"}, [x, w], off, graph, rows, "float32", scales) is None
    assert "exceeds the quantisation bound" in _compare("spmm", {"reduce": "sum"}, [x, w], exact + 1.0, graph, rows,
                                                        "float32", scales)
    assert _compare("spmm", {"reduce": "sum"}, [x, w], off, graph, rows, "float32") is not None


def test_a_relational_run_names_the_relation_its_typed_operator_is_wrong_on(demos):
    """demo_last_relation takes W[R-2] for the last relation: R-GCN's one typed_aggregate call per layer on the
    homogeneous form is wrong on IGBH's last relation alone, and the check names the operator and that relation
    (Note [relation of a typed failure]), as verify names etype = R-1."""
    config = RunConfig("demo_last_relation", "rgcn", "hetero:like=igbh,scale=0.005,features=32,other_features=32",
                       epochs=3, warmup=1, allocator="system")
    with pytest.raises(RunCheckError) as err:
        train(config)
    message = str(err.value)
    assert message.startswith("run-time check: typed_aggregate on relation fos-rev_topic->paper output on "
                              "hetero:classes=19,features=32,like=igbh,other_features=32,scale=0.005,seed=0 at layer 0 "
                              "(N=2750, E=15484, F=32, float32) differs from reference on 63 sampled rows: "
                              "max abs err "), message
    assert message.endswith("; every wrong element involves etype = 6 (of R=7); the row is not a measurement (run "
                            "`gnnbench verify --system demo_last_relation`)"), message
    details = err.value.details
    assert details["operator"] == "typed_aggregate on relation fos-rev_topic->paper"
    assert details["relation"] == "fos-rev_topic->paper" and details["layer"] == 0


def _random_graph(nodes: int, edges: int, seed: int = 0):
    from gnnbench.runtime.graph import Graph

    rng = np.random.default_rng(seed)
    return Graph.from_edges(rng.integers(0, nodes, edges), rng.integers(0, nodes, edges), nodes)


def test_the_oracle_works_on_the_compact_sub_graph_and_it_gives_the_full_graphs_rows():
    """Note [compact oracle]: the oracle's graph holds the sampled rows and their sources only, and a sum over it
    equals the full graph's at those rows (the rows in their draw order, as a block's are)."""
    from gnnbench.check.run_check import _sub_graph

    graph = _random_graph(5000, 40000)
    x = np.random.default_rng(1).standard_normal((5000, 3))
    rows = np.array([4321, 7, 2500, 999], dtype=np.int64)  # draw order, not sorted
    sub, positions, sources = _sub_graph(graph, rows)
    assert (sub.num_nodes, sub.num_src) == (4, len(sources)) and len(sources) < 100
    assert np.array_equal(graph.indices[positions], sources[sub.indices])
    full = np.stack([x[graph.indices[graph.indptr[i]:graph.indptr[i + 1]]].sum(0) for i in rows])
    compact = np.stack([x[sources][sub.indices[sub.indptr[k]:sub.indptr[k + 1]]].sum(0) for k in range(len(rows))])
    np.testing.assert_allclose(compact, full)


def test_a_row_without_edges_keeps_one_source_for_the_oracle():
    from gnnbench.check.run_check import _sub_graph
    from gnnbench.runtime.graph import Graph

    graph = Graph.from_edges(np.array([0, 1]), np.array([1, 1]), 4)
    sub, positions, sources = _sub_graph(graph, np.array([2, 3]))
    assert (sub.num_nodes, sub.num_src, len(positions), sub.num_edges) == (2, 1, 0, 0)


def test_a_gradient_outside_the_reached_entries_is_reported_and_one_inside_them_is_judged():
    import torch

    from gnnbench.check.conformance import TOLERANCES
    from gnnbench.check.run_check import _grad_differs

    rows, sources = np.array([1, 3]), torch.tensor([0, 2])
    picked, tol = torch.tensor([0]), TOLERANCES["float32"].for_rows(1)
    want = torch.ones(2, 2, dtype=torch.float64)  # the oracle's, at the sources only
    got = torch.zeros(5, 2)
    got[sources] = 1.0
    assert _grad_differs(got, want, "src", picked, sources, rows, tol) is None
    got[4, 1] = 0.5
    assert _grad_differs(got, want, "src", picked, sources, rows, tol) == (
        "1 nonzero values where no sampled row's edge reaches (expected exactly 0)")
    got[4, 1], got[2, 0] = 0.0, 2.0
    assert _grad_differs(got, want, "src", picked, sources, rows, tol) is not None
