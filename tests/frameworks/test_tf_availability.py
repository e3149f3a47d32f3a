"""Without TensorFlow installed, `gnnbench systems` and `gnnbench run` say so (no TensorFlow import here)."""
from __future__ import annotations

import importlib.util

import pytest

import gnnbench.frameworks as frameworks
from gnnbench.errors import UnavailableError, UserError


@pytest.fixture
def no_tensorflow(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "tensorflow" else real(name, *args, **kwargs)

    monkeypatch.setattr(frameworks.importlib.util, "find_spec", find_spec)


def test_framework_available_names_the_install_command(no_tensorflow):
    reason = frameworks.framework_available("tensorflow")
    assert reason == "framework 'tensorflow' is not installed (pip install 'gnnbench[tf]')"
    assert frameworks.framework_available("torch") is None


def test_get_frontend_refuses_with_the_reason(no_tensorflow):
    with pytest.raises(UnavailableError, match="framework 'tensorflow' is not installed"):
        frameworks.get_frontend("tensorflow")


def test_systems_lists_every_system_as_unavailable_and_why(no_tensorflow):
    from gnnbench.cli.systems import run

    rows = run(framework="tensorflow")
    assert rows and all(not r["available"] for r in rows)
    assert {r["reason"] for r in rows} == {"framework 'tensorflow' is not installed (pip install 'gnnbench[tf]')"}


def test_run_fails_fast_with_the_reason(no_tensorflow):
    from gnnbench.cli.run import validate
    from gnnbench.run.harness import RunConfig

    with pytest.raises(UserError, match=r"framework 'tensorflow' is not installed \(pip install 'gnnbench\[tf\]'\)"):
        validate(RunConfig(system="reference", model="gcn", dataset="karate", framework="tensorflow"))


def test_framework_bound_systems_say_they_have_no_tensorflow_glue():
    from gnnbench.runtime.registry import list_systems

    if frameworks.framework_available("tensorflow"):
        pytest.skip("TensorFlow is not installed here")
    bound = [s for s in list_systems() if "tensorflow" not in s.frameworks]
    assert bound, "expected at least one torch-only system (dgl, the native baselines)"
    for info in bound:
        reason = info.unavailable_reason("tensorflow") or ""
        assert "has no tensorflow glue" in reason or info.missing, (info.name, reason)
