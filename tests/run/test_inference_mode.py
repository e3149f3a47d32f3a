"""``--mode inference``: timed forward passes without autograd, for every system and both frameworks."""
from __future__ import annotations

import pytest

from gnnbench.errors import UserError
from gnnbench.frameworks import framework_available
from gnnbench.run.harness import RunConfig, train
from gnnbench.runtime.registry import list_systems

TINY = "sbm:nodes=120,classes=3,features=8,degree=5,seed=4"


def _cases():
    for info in list_systems():
        for framework in ("torch", "tensorflow"):
            reason = framework_available(framework) or info.unavailable_reason(framework, "cpu")
            marks = [pytest.mark.skip(reason=reason)] if reason else []
            yield pytest.param(info.name, framework, id=f"{info.name}-{framework}", marks=marks)


@pytest.mark.parametrize("system,framework", list(_cases()))
def test_inference_times_forward_passes_only(system, framework, tmp_path, monkeypatch):
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path))
    row = train(RunConfig(system=system, model="sage", dataset=TINY, framework=framework, epochs=3, warmup=1,
                         mode="inference", tune=False))
    assert row["status"] == "ok" and row["hyperparameters"]["mode"] == "inference"
    assert len(row["epoch_times"]) == 2 and row["forward_times"] == row["epoch_times"]
    assert row["backward_median_s"] is None and row["optimizer_times"] is None and row["first_loss"] is None
    assert row["peak_memory_bytes"] is not None and 0 <= row["test_accuracy"] <= 1


def test_inference_records_no_autograd_graph(monkeypatch):
    import torch

    from gnnbench.frameworks import torch_frontend

    seen = []

    original = torch_frontend.TorchFrontend.sync

    def sync(self):
        seen.append(torch.is_grad_enabled())
        return original(self)

    monkeypatch.setattr(torch_frontend.TorchFrontend, "sync", sync)
    train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=3, warmup=1, mode="inference"))
    assert seen and not any(seen)  # every timed pass ran with autograd off


def test_unknown_mode_is_a_user_error():
    from gnnbench.run.config import make_config

    with pytest.raises(UserError, match=r"--mode must be one of train, inference \(got 'serve'\)"):
        make_config(dict(system="reference", model="gcn", dataset=TINY, epochs=3, warmup=1, mode="serve"))


def test_pim_inference_is_reported_as_modeled():
    row = train(RunConfig(system="pim", model="gcn", dataset=TINY, epochs=3, warmup=1, mode="inference"))
    modeled = row["extra"]["modeled_inference"]
    assert modeled["label"] == "modeled" and modeled["passes_modeled"] == 4
    assert modeled["pass_time_s"] == modeled["host_measured_s"] + modeled["aggregation_modeled_s"]
    assert modeled["aggregation_modeled_s"] > 0 and modeled["simulation_wall_s"] > 0
    plain = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=3, warmup=1, mode="inference"))
    assert "modeled_inference" not in plain["extra"]
