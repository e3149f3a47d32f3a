"""Output paths checked before any work starts: one line naming the flag, never a traceback later.

:func:`check_output_file` and :func:`check_output_dir` probe the place a
command will write (a CSV, a figure folder, a report, the results store) by
creating and removing a temporary file there, so that a missing folder,
``/proc``, a directory in the place of a file, a read-only mount or a name
longer than the file system allows all fail at once, whoever runs the
command (root passes ``os.access`` checks that the write would still fail).
Nothing is left behind.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import UserError

__all__ = ["check_output_file", "check_output_dir", "check_path_length"]


def check_path_length(path: Path, what: str) -> None:
    """A path (or one of its names) longer than the file system allows is one line, not an OSError."""
    text = os.fsencode(str(path))
    max_path = os.pathconf("/", "PC_PATH_MAX") if hasattr(os, "pathconf") else 4096
    if len(text) >= max_path:
        raise UserError(f"{what} path is {len(text)} bytes long, more than the file system allows ({max_path - 1})")
    for part in path.parts:
        if len(os.fsencode(part)) > 255:
            raise UserError(f"{what} path has a name of {len(os.fsencode(part))} bytes ({part[:20]}...), more than "
                            f"the file system allows (255)")


def _refuse_empty(path: str | os.PathLike, what: str, kind: str) -> None:
    """``''`` would mean the current folder to :class:`Path`: a slip, never an intended place to write."""
    if not os.fspath(path).strip():
        raise UserError(f"{what} is empty: give a {kind} path")


def _probe(folder: Path, what: str, target: Path) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".gnnbench-probe-", dir=folder)
    except OSError as exc:
        raise UserError(f"cannot write {what} {target}: {exc.strerror or exc} in {folder}") from None
    os.close(fd)
    os.unlink(probe)


def check_output_file(path: str | os.PathLike, what: str) -> Path:
    """Check that ``path`` can be written as a file; return it as a Path.

    Raises:
        UserError: the folder is missing, the path is a folder, or nothing can be written there.
    """
    _refuse_empty(path, what, "file")
    path = Path(path)
    check_path_length(path, what)
    if path.is_dir():
        raise UserError(f"{what} {path} is a folder: expected a file path")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UserError(f"cannot write {what} {path}: folder {folder} does not exist; create it first")
    if path.exists():
        if not path.is_file():
            raise UserError(f"{what} {path} exists and is not a regular file")
        try:
            with open(path, "ab"):
                pass
        except OSError as exc:
            raise UserError(f"cannot write {what} {path}: {exc.strerror or exc}") from None
    else:
        _probe(folder, what, path)
    return path


def check_output_dir(path: str | os.PathLike, what: str) -> Path:
    """Check that files can be written in folder ``path`` (created later if missing, under an existing parent).

    Raises:
        UserError: the path is a file, its parent is missing, or nothing can be written there.
    """
    _refuse_empty(path, what, "folder")
    path = Path(path)
    check_path_length(path, what)
    if path.exists() and not path.is_dir():
        raise UserError(f"{what} {path} is a file: expected a folder")
    if path.is_dir():
        _probe(path, what, path)
        return path
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"cannot create {what} {path}: folder {parent} does not exist; create it first")
    _probe(parent, what, path)
    return path
