"""Importing OGB without the PyPI request its import makes, for every importer (ogbn-mag's reader and DGL).

Note [ogb's version check]
    ``import ogb`` runs ``ogb/version.py``, which imports the ``outdated``
    package and starts a thread that asks PyPI whether ogb is outdated. OGB
    is imported by gnnbench's ogbn-mag reader and, through ``dgl.data``, by
    every ``import dgl``: so, unchecked, every run of ``dgl`` or
    ``dgl-native`` and every ogbn-mag load would reach the network, from a
    thread still alive while the run sets up (a request on a machine with
    no route waits for its timeout), and every test that imports DGL would
    too. gnnbench never reaches the network outside ``datasets fetch``, so
    OGB is imported with ``outdated`` hidden (:func:`without_pypi_check`):
    ``from outdated import`` fails, and ogb skips its check as it does when
    the package is absent. An ``outdated`` imported by someone else first
    is left as it was.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

__all__ = ["without_pypi_check"]

_ABSENT = object()


@contextlib.contextmanager
def without_pypi_check() -> Iterator[None]:
    """Within it, a first ``import ogb`` (direct, or DGL's) starts no PyPI request (Note [ogb's version check])."""
    if "ogb" in sys.modules:  # imported already: its check, if any, has run
        yield
        return
    saved = sys.modules.get("outdated", _ABSENT)
    sys.modules["outdated"] = None  # type: ignore[assignment]  # ogb's `from outdated import` raises ImportError
    try:
        yield
    finally:
        if saved is _ABSENT:
            del sys.modules["outdated"]
        else:
            sys.modules["outdated"] = saved
