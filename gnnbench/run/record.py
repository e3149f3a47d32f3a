"""One builder for every stored row: :func:`run_record`, whatever the outcome.

A row of a run that succeeded, failed, crashed, ran out of memory, timed out
or was skipped has the same columns (every one of
:class:`~gnnbench.results.row.RunResult`'s columns but ``id``), the canonical dataset name,
the ``hyperparameters`` object of the same shape, and a ``timestamp`` set
here only: when the run started. Identity columns come from the
configuration, so a crashed run's row has the provenance a successful run of
the same configuration would have had (Note [provenance] in
:mod:`gnnbench.run.sweep`).
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from gnnbench.results.row import IDENTITY_FIELDS, RUN_COLUMNS, Extra, RunResult

__all__ = ["run_record", "run_result", "identity_columns", "bad_input_error", "STDERR_KEPT", "BAD_INPUT"]

#: characters of a failed run's stderr kept in its row (the whole of it is in a log file)
STDERR_KEPT = 20000

#: the ``extra`` key, true on the ``failed`` row of a run whose worker refused its input
#: (Note [bad input in a worker] in :mod:`gnnbench.run.runner`)
BAD_INPUT = "bad_input"

_COLUMNS = frozenset(f.name for f in RUN_COLUMNS if f.name != "id")


def bad_input_error(row: Mapping[str, Any]) -> str | None:
    """The one-line error of a run whose worker refused its input, else None (Note [bad input in a worker])."""
    if row.get("status") == "failed" and Extra.of(row).bad_input:
        return row.get("error") or "bad input"
    return None


def identity_columns(config, hashes: dict[str, str | None] | None = None, resolved=None) -> dict[str, Any]:
    """The columns a run of ``config`` stores whatever its outcome, computed without running it.

    Args:
        hashes (dict, optional): system name -> its hash, filled as systems are met (a sweep's cache).
        resolved (ResolvedRun, optional): ``config`` resolved (Note [a run resolved once]); default: resolved
            here, and a configuration that cannot be resolved stores null hyperparameters.
    """
    from gnnbench.run.allocator import resolve_allocator
    from gnnbench.run.environment import git_commit
    from gnnbench.errors import UserError
    from gnnbench.run.resolved import ResolvedRun
    from gnnbench.runtime.registry import system_hash, system_info

    hashes = {} if hashes is None else hashes
    if config.system not in hashes:
        try:
            hashes[config.system] = system_hash(config.system)
        except UserError:  # an unknown system still deserves a row saying so
            hashes[config.system] = None
    try:
        version = system_info(config.system).version
    except UserError:
        version = None
    try:
        resolved = resolved or ResolvedRun.of(config)
        hyperparameters, epochs = copy.deepcopy(dict(resolved.stored)), resolved.hyper.epochs
    except UserError:
        hyperparameters, epochs = None, config.epochs
    try:
        allocator = resolve_allocator(config.allocator).name
    except UserError:
        allocator = None
    # the columns a configuration does not name as they are stored; every other identity column is the
    # configuration's field of the same name (a new RunConfig field tagged IDENTITY in RunResult needs nothing here)
    derived = {"system_version": version, "system_hash": hashes[config.system], "hyperparameters": hyperparameters,
               "epochs": epochs, "allocator": allocator, "git_commit": git_commit()}
    return {name: derived[name] if name in derived else getattr(config, name, None) for name in IDENTITY_FIELDS}


def run_record(config, status: str, measured: Mapping[str, Any] | None = None, *, error: str | None = None,
               stderr: str | None = None, timestamp: str | None = None, identity: Mapping[str, Any] | None = None,
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The row of one run of ``config``.

    Args:
        config (RunConfig): what ran.
        status (str): one of :data:`~gnnbench.results.store.STATUSES`.
        measured (dict, optional): the harness's figures (a successful run), each named by its column; they win
            over identity columns.
        error (str, optional): one line saying why the run did not succeed.
        stderr (str, optional): the worker's stderr; its last :data:`STDERR_KEPT` characters are kept.
        timestamp (str, optional): when the run started, UTC ISO 8601 (default: now).
        identity (dict, optional): precomputed :func:`identity_columns`.
        extra (dict, optional): merged into the ``extra`` column.

    Raises:
        ValueError: a ``measured`` name that is no column (a misspelled figure would otherwise be lost).
    """
    return run_result(config, status, measured, error=error, stderr=stderr, timestamp=timestamp,
                      identity=identity, extra=extra).to_row()


def run_result(config, status: str, measured: Mapping[str, Any] | None = None, *, error: str | None = None,
               stderr: str | None = None, timestamp: str | None = None, identity: Mapping[str, Any] | None = None,
               extra: Mapping[str, Any] | None = None) -> RunResult:
    """The :class:`~gnnbench.results.row.RunResult` of one run of ``config`` (arguments as :func:`run_record`)."""
    from gnnbench.results.store import STATUSES, utc_now

    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)} (got {status!r})")
    row: dict[str, Any] = dict(identity if identity is not None else identity_columns(config))
    unknown = sorted(set(measured or ()) - _COLUMNS)
    if unknown:
        raise ValueError(f"unknown measured value(s) {', '.join(unknown)}; the known ones are the columns "
                         f"{', '.join(sorted(_COLUMNS))}")
    if measured:
        row.update({k: v for k, v in measured.items() if v is not None})
    row["status"] = status
    row["error"] = None if status == "ok" else (error or status)
    row["stderr"] = stderr[-STDERR_KEPT:] if stderr else None
    row["dataset"] = config.dataset  # canonical (RunConfig made it so)
    row["timestamp"] = timestamp or utc_now()
    merged = {**(row.get("extra") or {}), **(extra or {})}
    row["extra"] = merged or None
    return RunResult.from_row(row)
