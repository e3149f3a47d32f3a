"""The one writer of downloads and generated files: never through a symbolic link (Note [writes refuse links]).

Note [writes refuse links]
    gnnbench writes files in places others prepare: a data root, a systems
    repository checked out at some commit, a system's folder. A symbolic link
    there, committed or planted, would turn a write into a write elsewhere: a
    ``.downloads`` folder linking to a dataset's folder had fetch overwrite a
    file there and then delete it; a committed ``_glue.tmp`` linking out had
    ``gen`` overwrite its target; a committed system folder linking out had
    ``history`` regenerate glue in it. So every download and generated file is
    written through this module, which refuses (one
    :class:`~gnnbench.errors.UserError` line naming the link) a link on any
    component it creates or replaces: each folder from ``within`` (a place the
    caller trusts, e.g. the data root the user named, itself never checked) down
    to the file, and the file itself. A file is written whole beside its place
    under a fresh name (``mkstemp``: ``O_EXCL``, never following a link) and
    renamed over it, so a crash leaves the old file and a reader never sees half
    of one. An append (a resumed download) opens with ``O_NOFOLLOW``.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gnnbench.errors import UserError

__all__ = ["check_no_links", "make_folder", "write_file", "open_append"]


def _refuse(path: Path) -> None:
    target = os.readlink(path) if path.is_symlink() else "?"
    raise UserError(f"{path} is a symbolic link (to {target}); remove it and try again: gnnbench writes only its "
                    f"own files, never through a link (Note [writes refuse links])")


def _components(path: Path, within: Path | None) -> list[Path]:
    """``path`` and its parents below ``within`` (all of them when ``within`` is None: only ``path``)."""
    path = Path(os.path.abspath(path))
    if within is None:
        return [path]
    within = Path(os.path.abspath(within))
    if not path.is_relative_to(within):
        raise UserError(f"{path} is outside {within}, where gnnbench writes (Note [writes refuse links])")
    out = []
    while path != within:
        out.append(path)
        path = path.parent
    return out[::-1]


def check_no_links(path: str | os.PathLike, within: str | os.PathLike | None = None) -> Path:
    """``path`` when neither it nor a folder between ``within`` and it is a symbolic link; returns it absolute.

    Raises:
        UserError: naming the first link, outermost first.
    """
    parts = _components(Path(path), None if within is None else Path(within))
    for part in parts:
        if part.is_symlink():
            _refuse(part)
    return parts[-1] if parts else Path(os.path.abspath(path))


def make_folder(path: str | os.PathLike, within: str | os.PathLike | None = None) -> Path:
    """Create ``path`` and the folders between ``within`` and it, refusing a link among them (or a file).

    Raises:
        UserError: a link or a file in the way, or a folder that cannot be created.
    """
    path = Path(path)
    parts = _components(path, None if within is None else Path(within)) if within is not None else \
        [Path(os.path.abspath(path))]
    for part in parts:
        if part.is_symlink():
            _refuse(part)
        if not part.exists():
            try:
                part.mkdir(parents=within is None)
            except FileExistsError:  # made meanwhile: checked again below
                pass
            except OSError as err:
                raise UserError(f"cannot create the folder {part}: {err.strerror or err}") from None
        if part.is_symlink():
            _refuse(part)
        if not part.is_dir():
            raise UserError(f"{part} is a file where gnnbench needs a folder; move it away and try again")
    return Path(os.path.abspath(path))


def write_file(path: str | os.PathLike, data: str | bytes, within: str | os.PathLike | None = None) -> Path:
    """Write ``data`` to ``path`` whole (Note [writes refuse links]): text as UTF-8, bytes as they are.

    Args:
        path: the file; a link there is refused, an old file replaced.
        data: its content.
        within: a folder the caller trusts; the folders below it down to ``path`` are checked as well
            (default: only ``path`` and the temporary file are).

    Raises:
        UserError: a link on the way, or a place that cannot be written.
    """
    path = check_no_links(path, within)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
        if path.is_symlink():  # planted while we wrote
            _refuse(path)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def open_append(path: str | os.PathLike, within: str | os.PathLike | None = None, *, append: bool = True):
    """``path`` opened to write bytes at its end (``append``) or from empty, never through a link.

    Raises:
        UserError: ``path`` or a folder below ``within`` is a link.
    """
    path = check_no_links(path, within)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | (os.O_APPEND if append else os.O_TRUNC)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        if path.is_symlink():
            _refuse(path)
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None
    return os.fdopen(fd, "ab" if append else "wb")
