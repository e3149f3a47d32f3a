"""Stored runs as a committed text file: one JSON object a line, gzip-compressed when the name ends ``.gz``.

Note [committed rows]
    A published table must re-render from a clean clone, and the SQLite
    stores are git-ignored (they grow with every run and are binary). So a
    campaign writes the runs behind its tables to ``results/rows/NAME.jsonl.gz``
    (:mod:`gnnbench.campaign`): every process a table pools, each as the
    store returned it (``ResultsStore.rows()``), in id order, less its
    ``stderr`` (warnings text, kept in the store) and the machine's host
    name; every sample stays, so any statistic can be recomputed. The text is
    canonical (keys sorted, no spaces) and the gzip header carries neither a
    time nor a name, so writing the same rows twice gives the same bytes and
    ``git status`` stays clean. :func:`gnnbench.load_results` reads such a file
    as it reads a store, so ``compare``, ``plot`` and ``report`` take
    ``--results results/rows/NAME.jsonl.gz``; verification is then the status
    each run stored (there is no verifications table to join).
"""
from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["ROWS_SUFFIXES", "is_rows_file", "read_rows", "write_rows", "rows_text"]

#: the names a rows file may end with
ROWS_SUFFIXES = (".jsonl", ".jsonl.gz")


def is_rows_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a rows file (by its suffix) rather than a SQLite store."""
    return str(path).endswith(ROWS_SUFFIXES)


def rows_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """The canonical text of ``rows``: one JSON object a line, keys sorted."""
    return "".join(json.dumps(dict(r), sort_keys=True, separators=(",", ":"), default=str) + "\n" for r in rows)


def write_rows(path: str | os.PathLike, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Writes ``rows`` to ``path`` (Note [committed rows]): the same rows give the same bytes."""
    path = Path(path)
    data = rows_text(rows).encode("utf-8")
    if str(path).endswith(".gz"):
        buffer = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
            out.write(data)
        data = buffer.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)  # never half a file under the real name
    return path


def read_rows(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The runs in a rows file, in file order.

    Raises:
        UserError: no such file, or a line that is not a JSON object (named by its line number).
    """
    from gnnbench.errors import UserError

    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"no rows file at {path}") from None
    except OSError as err:
        raise UserError(f"cannot read rows file {path}: {err.strerror or err}") from None
    try:
        text = (gzip.decompress(raw) if str(path).endswith(".gz") else raw).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: not a gzip-compressed UTF-8 rows file ({err})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise UserError(f"{path}:{number}: not JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise UserError(f"{path}:{number}: expected one JSON object a line (got {type(row).__name__})")
        rows.append(row)
    return rows
