"""Test-wide settings: every test writes into temporary folders, never $HOME or results/.

Slow tests run only with FULL_TEST=1 (PyG ``testing/decorators.py`` style).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PLANETOID = REPO.parent / "shared" / "data" / "planetoid"


@pytest.fixture(autouse=True, scope="session")
def _isolated_environment(tmp_path_factory):
    root = tmp_path_factory.mktemp("gnnbench-env")
    for var, sub in (("GNNBENCH_RESULTS", "results.sqlite"), ("GNNBENCH_CACHE", "cache"),
                     ("DGLDEFAULTDIR", "dgl"), ("KERAS_HOME", "keras")):
        os.environ[var] = str(root / sub)
    os.environ["TMPDIR"] = str(root)
    os.environ.setdefault("GNNBENCH_OFFLINE", "1")
    yield


def pytest_collection_modifyitems(config, items):
    if os.environ.get("FULL_TEST") == "1":
        return
    skip = pytest.mark.skip(reason="slow test: set FULL_TEST=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def planetoid_dir() -> Path | None:
    return PLANETOID if (PLANETOID / "ind.cora.x").is_file() else None
