"""Fixtures for the dataset tests: a private cache, no network, the Planetoid folder if present."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]
_PLANETOID_CANDIDATES = (Path("/work/shared/data/planetoid"), _REPO.parent / "shared" / "data" / "planetoid")


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """Generated datasets go to a fresh cache; downloads are never attempted."""
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GNNBENCH_OFFLINE", "1")
    monkeypatch.delenv("GNNBENCH_DATA_DIR", raising=False)


@pytest.fixture
def planetoid_dir() -> Path:
    """The shared folder of Planetoid raw files; skips the test when it is absent."""
    env = os.environ.get("GNNBENCH_TEST_PLANETOID")
    for candidate in ((Path(env),) if env else ()) + _PLANETOID_CANDIDATES:
        if (candidate / "ind.cora.x").is_file():
            return candidate
    pytest.skip("Planetoid raw files not found in /work/shared/data/planetoid or ../shared/data/planetoid "
                "(set GNNBENCH_TEST_PLANETOID=DIR)")
