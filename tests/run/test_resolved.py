"""gnnbench/run/resolved.py: a run's configuration resolved once (Note [a run resolved once])."""
from __future__ import annotations

import pytest

import gnnbench.run.resolved as resolved
from gnnbench.errors import UserError
from gnnbench.run.config import make_config
from gnnbench.run.harness import train
from gnnbench.run.preflight import check
from gnnbench.run.resolved import ResolvedRun

TINY = "sbm:nodes=400,classes=3,features=16,degree=8,seed=1"  # 15 training nodes
SAMPLED = {"batching": "sampled", "fanouts": "4,3", "batch_size": 4}


@pytest.fixture
def resolutions(monkeypatch) -> list[str]:
    """The models resolved, one entry a resolution."""
    seen: list[str] = []
    real = resolved.resolve_hyperparameters

    def counted(config):
        seen.append(config.model)
        return real(config)

    monkeypatch.setattr(resolved, "resolve_hyperparameters", counted)
    return seen


@pytest.mark.parametrize("batching", [{}, SAMPLED], ids=["full", "sampled"])
def test_preflight_and_a_run_each_resolve_the_configuration_once(resolutions, batching):
    config = make_config({"system": "reference", "model": "gcn", "dataset": TINY, "epochs": 2, "warmup": 1,
                          **batching})
    check(config, isolate=False)
    assert resolutions == ["gcn"]
    row = train(config)
    assert resolutions == ["gcn", "gcn"] and row["status"] == "ok"
    assert row["hyperparameters"] == dict(ResolvedRun.of(config).stored)


def test_a_resolved_run_is_frozen_and_refuses_what_the_model_cannot_take():
    run = ResolvedRun.of(make_config({"system": "reference", "model": "gat", "dataset": TINY, "heads": 3}))
    assert run.hyper.heads == 3 and run.stored["heads"] == 3 and not run.sampled
    with pytest.raises(AttributeError):
        run.hyper = None
    with pytest.raises(UserError, match=r"^--normalisation applies to GCN only; model 'sage' has no normalisation"):
        ResolvedRun.of(make_config({"system": "reference", "model": "sage", "dataset": TINY,
                                    "normalisation": "edge"}))
