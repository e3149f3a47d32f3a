"""gnnbench/verify/isolation.py: how a verification process's death, hang or load failure is told."""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from gnnbench.verify.isolation import _death, describe_load_failure

DEMO_SYSTEMS = Path(__file__).resolve().parents[1] / "demo_systems"


@pytest.mark.parametrize("exitcode, says", [
    (-signal.SIGSEGV, "died from SIGSEGV (a segmentation fault: the kernel read or wrote memory it does not own)"),
    (-signal.SIGKILL, "died from SIGKILL (killed, most likely by the out-of-memory killer)"),
    (3, "exited with status 3 without reporting a result"),
])
def test_a_death_names_the_case_graph_and_cause(exitcode, says):
    text = _death("spmm float32", "graph 'sbm' int64", exitcode, hung=False, time_limit=60)
    assert text == f"spmm float32 on graph 'sbm' int64: the verification process {says}"


def test_a_hang_and_an_early_death_read_as_such():
    hung = _death("sddmm", "", None, hung=True, time_limit=30)
    assert hung.startswith("sddmm (before its first case): no progress within the time limit of 30 s")
    assert _death("gat", "x", None, False, 1, error="MemoryError").endswith("stopped on MemoryError")


def test_load_failure_names_the_missing_kernel_and_the_fix(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))
    text = describe_load_failure("demo_missing_kernel", "torch", AttributeError("no attribute"))
    assert "has no function" in text and "define" in text
