"""tests/parallel.py: a serial test holds the run's room alone; a worker's run folder is the run's."""
from __future__ import annotations

import fcntl
import os
from types import SimpleNamespace

import pytest

from tests.parallel import ROOM, TURNSTILE, hold_slot, run_folder


def _free(path, mode) -> bool:
    """Whether another holder could take ``path`` in ``mode`` now (a second open file is another holder)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_a_shared_slot_admits_other_tests_but_no_serial_one(tmp_path):
    with hold_slot(tmp_path, alone=False):
        assert _free(tmp_path / ROOM, fcntl.LOCK_SH) and not _free(tmp_path / ROOM, fcntl.LOCK_EX)
        assert _free(tmp_path / TURNSTILE, fcntl.LOCK_EX)  # passed, not held
    assert _free(tmp_path / ROOM, fcntl.LOCK_EX)


def test_a_serial_slot_admits_no_other_test_and_bars_the_turnstile(tmp_path):
    with hold_slot(tmp_path, alone=True):
        assert not _free(tmp_path / ROOM, fcntl.LOCK_SH) and not _free(tmp_path / TURNSTILE, fcntl.LOCK_EX)
    assert _free(tmp_path / ROOM, fcntl.LOCK_EX) and _free(tmp_path / TURNSTILE, fcntl.LOCK_EX)


@pytest.mark.parametrize("worker, base, expected", [("gw1", "run/popen-gw1", "run"), (None, "run", "run"),
                                                    ("gw1", "run/inner-pytest-3", "run/inner-pytest-3")])
def test_the_run_folder_is_the_one_a_worker_s_folder_sits_in(monkeypatch, tmp_path, worker, base, expected):
    if worker is None:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    factory = SimpleNamespace(getbasetemp=lambda: tmp_path / base)
    assert run_folder(factory) == tmp_path / expected
