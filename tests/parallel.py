"""Tests that run alone while the suite runs in parallel (pytest-xdist, ``-n 2``).

Note [parallel tests]
~~~~~~~~~~~~~~~~~~~~~
README's test command runs the suite on two pytest-xdist workers (``--dist loadgroup``). Each worker
is a process of its own with its own base temporary folder, so everything ``tests/conftest.py``
points at a temporary folder (results store, ``GNNBENCH_CACHE``, ``TMPDIR``, DGL's and Keras's
homes) is already per worker. Shared on purpose: numba's disk cache beside the kernels'
sources (per-worker caches would compile every kernel once per worker; on a whole-suite run
the controller fills it before the workers start, Note [numba compiled once per test run] in
``tests/numba_cache.py``, so two workers never compile one signature at once), and the
Hypothesis example database.

A test marked ``serial`` runs while no other test runs: it takes this run's lock exclusively and
every other test takes it shared, around setup, call and teardown, so module fixtures (a Ray
head, a browser) start and stop under the lock too. A second lock, the turnstile, gives the
exclusive taker precedence: a serial test takes the turnstile before waiting for the room,
and an ordinary test passes the turnstile before taking its shared lock, so a worker running
short tests back to back cannot keep a serial test waiting. Serial tests are collected last
(``tests/conftest.py``), where the other worker is idle or nearly. Without xdist (one process) the
locks are never contended and cost two ``flock`` calls a test. The locks live in the base temporary
folder that the workers of one run share (``run_folder``), so two runs (another worktree's) never
wait for each other.

What a run computes once for several tests is kept in ``run_folder``, so a second worker reuses it
(test_sweep's local done-when sweep, which the Ray test compares against); ``xdist_group`` keeps
the tests of one group on one worker (under ``--dist loadgroup``), for a module fixture too
expensive to build twice (the browser).
"""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

TURNSTILE, ROOM = "gnnbench-serial.turnstile", "gnnbench-serial.room"


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base temporary folder of this run, shared by its workers (each worker's own is inside it)."""
    base = tmp_path_factory.getbasetemp()
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # xdist names a worker's folder popen-<worker> inside the run's
    return base.parent if worker and base.name.endswith(worker) else base


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def hold_slot(folder: Path, alone: bool) -> Iterator[None]:
    """Hold the room of the run whose ``run_folder`` is ``folder`` for one test: exclusively if ``alone``,
    else shared (Note [parallel tests])."""
    turnstile, room = folder / TURNSTILE, folder / ROOM
    if alone:
        with _flock(turnstile, fcntl.LOCK_EX), _flock(room, fcntl.LOCK_EX):
            yield
        return
    with _flock(turnstile, fcntl.LOCK_EX):
        pass
    with _flock(room, fcntl.LOCK_SH):
        yield
