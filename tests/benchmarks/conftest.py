"""Loads a script of benchmarks/ or benchmarks/studies/ by path (benchmarks/ is not a package; each script puts _common on sys.path)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def load_benchmark():
    def load(name: str):
        path = BENCHMARKS / f"{name}.py"
        if not path.exists():  # a study (benchmarks/studies/)
            path = BENCHMARKS / "studies" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(autouse=True)
def _systems_path_restored(monkeypatch):
    """A script's ``main`` puts its systems on GNNBENCH_SYSTEMS_PATH; the next test must not inherit that."""
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", os.environ.get("GNNBENCH_SYSTEMS_PATH", ""))
