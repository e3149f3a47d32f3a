"""verify's repeated calls (Note [repeated calls]): a system that turns wrong after its first calls on a graph."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gnnbench.verify import repeated
from gnnbench.verify.repeated import REPEATED_CALLS, REPEATED_LABEL
from gnnbench.verify.settings import VerifySettings
from gnnbench.verify.suite import verify

DEMO_SYSTEMS = Path(__file__).resolve().parents[1] / "demo_systems"


@pytest.fixture
def small(monkeypatch):
    """The check on a 5,001-edge graph (a 2,000-edge hub each way), not its 132k: the count is what is tested."""
    monkeypatch.setattr(repeated, "REPEATED_EDGES", 5001)
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))


def _repeat(system: str):
    report = verify(system, VerifySettings(threads=1, isolate=False, kinds=("repeat",)))
    (row,) = report.operators
    return report, row


def test_reference_passes_every_variant_on_every_call(small):
    report, row = _repeat("reference")
    assert report.status == "passed" and row.operator == REPEATED_LABEL and row.cases == 12
    assert row.detail == "12 variants, 100 calls each, forward and gradients, on 5,001 edges at F=16"


def test_the_fast_profile_runs_one_variant_of_each_operator(small):
    report = verify("reference", VerifySettings(threads=1, isolate=False, kinds=("repeat",), profile="fast"))
    (row,) = report.operators
    assert row.status == "passed" and row.cases == 4  # spmm, sddmm, edge_softmax, typed_aggregate (gat_aggregate: composed)


def test_a_system_turning_wrong_on_the_last_of_the_stated_calls_is_caught(small, monkeypatch):
    """demo_tuned_wrong runs its exact spmm for REPEATED_CALLS - 1 calls at a width, then its tuned one."""
    monkeypatch.setenv("DEMO_TUNED_WRONG_TUNED_ABOVE_EDGES", "1000")
    monkeypatch.setenv("DEMO_TUNED_WRONG_SAFE_CALLS", str(REPEATED_CALLS - 1))
    kernels = sys.modules.get("demo_tuned_wrong.kernels")
    if kernels:  # each verification is its own process in gnnbench; here the count of calls starts again
        kernels._calls.clear()
    report, row = _repeat("demo_tuned_wrong")
    assert report.status == "failed" and row.status == "failed"
    assert row.failures[0].startswith("spmm(reduce=sum) output on 'random_5k' (int32, N=4096, E=5001, F=16, H=1, "
                                      "float64), call 100 of 100: max abs err ")


def test_an_operator_the_system_composes_is_skipped_with_its_reason(small):
    report = verify("mkl", VerifySettings(threads=1, isolate=False, kinds=("repeat",), operator="typed_aggregate"))
    (row,) = report.operators
    assert row.status == "skipped" and row.cases == 0
    assert row.reason == ("mkl implements no variant of typed_aggregate: a composition repeats the kernels of the "
                          "operators it is made of, checked when each is named with --operator")
