"""benchmarks/bound_systems: glue up to date, and the floor caught by the correctness gate it exists to fail."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

BOUND_SYSTEMS = Path(__file__).resolve().parents[2] / "benchmarks" / "bound_systems"
TINY = "sbm:nodes=200,classes=2,features=8,degree=4"


@pytest.fixture
def bound_path(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(BOUND_SYSTEMS))  # the registry's scan is keyed by it


def test_bound_systems_glue_is_up_to_date():
    """`gnnbench gen --check` covers systems/ only; these live under benchmarks/ (Note [external systems])."""
    from gnnbench.dsl.gen import regenerate, spec_paths

    writer = regenerate(spec_paths(BOUND_SYSTEMS), check=True)
    assert not writer.drift, "".join(writer.drift) + "\nrun `gnnbench gen benchmarks/bound_systems/floor/floor.gnn`"
    assert [p.name for p in writer.unchanged] == ["_glue.py", "_glue_torch.py"]


def test_floor_trains_but_its_sums_ignore_weights(bound_path):
    from gnnbench.run.harness import RunConfig, train

    # wrong on purpose, so the run-time check (Note [run-time check]) would store it as failed: off, as in its campaign
    row = train(RunConfig(system="floor", model="gcn", dataset=TINY, epochs=4, warmup=1, check=False))
    assert row["status"] == "ok" and row["kernel_median_s"] > 0
    reference = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=4, warmup=1))
    assert not np.isclose(row["first_loss"], reference["first_loss"])  # wrong on purpose: a bound, not a result
