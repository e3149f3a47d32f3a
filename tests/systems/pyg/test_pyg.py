"""The `pyg` system: conformance in float32 on both aggregation paths, and its option."""
from __future__ import annotations

import pytest

from gnnbench.check.conformance import run_suite
from gnnbench.errors import UserError
from gnnbench.runtime.registry import load_system

pytest.importorskip("torch_geometric")


@pytest.fixture
def aggr():
    """Set the pyg aggregation path for one test, then restore the default."""
    configure = load_system("pyg").hook("configure")
    yield configure
    configure()


@pytest.mark.parametrize("operator", ["spmm", "sddmm", "edge_softmax"])
def test_conformance_float32_scatter(operator, aggr):
    aggr(aggr="scatter")
    results, _ = run_suite("pyg", operator, profile="fast", dtype="float32", threads=1)
    assert all(r.status == "passed" for r in results), [f for r in results for f in r.failures]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conformance_spmm_path(dtype, aggr):
    aggr(aggr="spmm")
    results, _ = run_suite("pyg", "spmm", profile="fast", dtype=dtype, threads=1)
    assert all(r.status == "passed" for r in results), [f for r in results for f in r.failures]
    assert load_system("pyg").hook("report")()["aggr"] == "spmm"


def test_options_are_checked(aggr):
    with pytest.raises(UserError, match=r"aggr must be one of scatter, spmm \(got 'csr'\)"):
        aggr(aggr="csr")
    with pytest.raises(UserError, match="has no option fused; its only option is aggr"):
        aggr(fused="1")


def test_run_takes_the_option_and_reports_it():
    from gnnbench.run.harness import RunConfig, train

    row = train(RunConfig("pyg", "sage", "sbm:nodes=120,classes=3,features=8,degree=5", epochs=4, warmup=1,
                         system_options=(("aggr", "spmm"),)))
    assert row["extra"]["system_report"]["aggr"] == "spmm"
    load_system("pyg").hook("configure")()
