"""The temp folder of one isolated run, and the folders killed runs left behind (Note [run folders]).

Note [run folders]
    Each isolated run hands its worker its configuration and gets its row back through a
    temp folder ``gnnbench-run-<pid>-*`` named after the process that made it.
    A normal exit, an exception or Ctrl-C removes it; SIGKILL (or a power
    cut) cannot, so each new run folder first removes the ``gnnbench-run-*``
    folders whose process no longer runs on this host. Folders of live
    processes, and those from before this naming (no pid), are left alone.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from gnnbench.run.claimant import process_gone

__all__ = ["run_folder", "remove_stale_run_folders"]

_PREFIX = "gnnbench-run-"
_NAMED = re.compile(rf"^{_PREFIX}([0-9]+)-")


def remove_stale_run_folders(root: str | os.PathLike | None = None) -> list[Path]:
    """Remove the run folders in ``root`` (default: the temp folder) of processes gone; returns them."""
    root = Path(root if root is not None else tempfile.gettempdir())
    removed = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _NAMED.match(entry.name)
        if match and int(match.group(1)) != os.getpid() and entry.is_dir() and not entry.is_symlink() \
                and process_gone(int(match.group(1))):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


@contextmanager
def run_folder() -> Iterator[str]:
    """A fresh temp folder for one run, removed afterwards (Note [run folders])."""
    remove_stale_run_folders()
    with tempfile.TemporaryDirectory(prefix=f"{_PREFIX}{os.getpid()}-") as folder:
        yield folder
