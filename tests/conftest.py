"""Test-wide settings: every test writes into temporary folders, never $HOME or results/.

Slow tests run only with FULL_TEST=1 (PyG ``testing/decorators.py`` style). Tests marked
``serial`` run while no other test runs (Note [parallel tests] in ``tests/parallel.py``). Before
the workers start, numba's cache is filled once (Note [numba compiled once per test run] in
``tests/numba_cache.py``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.parallel import hold_slot, run_folder

REPO = Path(__file__).resolve().parent.parent
PLANETOID = REPO.parent / "shared" / "data" / "planetoid"


_WARMED = pytest.StashKey[str]()


def _warms_numba(config) -> bool:
    """On the controller (or the only process) of a whole-suite run, or when GNNBENCH_WARM_NUMBA=1."""
    wanted = os.environ.get("GNNBENCH_WARM_NUMBA")
    if hasattr(config, "workerinput") or wanted == "0" or config.option.collectonly:
        return False
    return wanted == "1" or config.args_source == pytest.Config.ArgsSource.TESTPATHS


def pytest_configure(config):
    """Fill numba's disk cache in parallel shares before any worker starts (Note [numba compiled once per
    test run]); the terminal summary says how long it took."""
    if not _warms_numba(config):
        return
    from tests.numba_cache import WARM

    shares = max(1, min(os.cpu_count() or 1, 2, len(WARM)))
    print(f"numba: filling the kernel cache in {shares} processes before the tests start "
          f"(minutes on a fresh clone, seconds after)", file=sys.stderr, flush=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gnnbench-numba-warm-") as folder:
        env = {**os.environ, "GNNBENCH_CACHE": str(Path(folder) / "cache"), "GNNBENCH_OFFLINE": "1"}
        command = [sys.executable, "-m", "tests.numba_cache", "--shares", str(shares), "--lock",
                   str(Path(folder) / "index.lock")]
        processes = [subprocess.Popen([*command, "--share", str(share)], cwd=REPO, env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for share in range(shares)]
        outputs = [p.communicate()[0] for p in processes]
    failed = [f"share {i} exited {p.returncode}: {out.strip().splitlines()[-1:]}"
              for i, (p, out) in enumerate(zip(processes, outputs)) if p.returncode]
    config.stash[_WARMED] = (f"numba cache: {len(WARM)} kernel sets compiled or loaded in "
                             f"{time.perf_counter() - start:.0f} s by {shares} processes (tests/numba_cache.py)"
                             + (f"; FAILED, the tests compile what they need: {'; '.join(failed)}" if failed else "")
                             + "".join(f"\n  share {i}: " + "; ".join(out.strip().splitlines()[-len(WARM):])
                                       for i, out in enumerate(outputs) if not failed))


def pytest_terminal_summary(terminalreporter, config):
    """The warm-up's line at the end, beside the slowest tests (the header is hidden under ``-q``)."""
    if _WARMED in config.stash:
        terminalreporter.write_line(config.stash[_WARMED])


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
    items.sort(key=lambda item: item.get_closest_marker("serial") is not None)  # serial tests last, in order
    if os.environ.get("FULL_TEST") == "1":
        return
    skip = pytest.mark.skip(reason="slow test: set FULL_TEST=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = run_folder(item.config._tmp_path_factory)  # pytest's own factory, as the tmp_path fixtures use
    with hold_slot(folder, alone=item.get_closest_marker("serial") is not None):
        return (yield)


def planetoid_dir() -> Path | None:
    return PLANETOID if (PLANETOID / "ind.cora.x").is_file() else None


@pytest.fixture
def offline_worker(tmp_path, monkeypatch):
    """A run's worker that cannot download Planetoid files while its parent believes it can.

    The preflight then leaves cora's download to the worker, which refuses it
    (Note [bad input in a worker]). Caches and logs go under ``tmp_path``;
    returns the folder the worker looked in.
    """
    from gnnbench.run import runner

    for var in ("GNNBENCH_OFFLINE", "GNNBENCH_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GNNBENCH_LOGS", str(tmp_path / "logs"))
    worker_env = runner.worker_env
    monkeypatch.setattr(runner, "worker_env", lambda *a: {**worker_env(*a), "GNNBENCH_OFFLINE": "1"})
    return tmp_path / "cache" / "data" / "planetoid"
