"""The results store: every benchmark run as one row of an embedded SQLite file.

One tuple, :data:`RUN_FIELDS` (derived from :class:`~gnnbench.results.row.RunResult`), drives the ``runs`` table, :meth:`ResultsStore.rows`,
the CSV columns and ``docs/results-schema.md`` (:func:`store_markdown`), as
pytest-benchmark's ``Stats.fields`` drives its tables. Raw per-epoch samples are
kept (``epoch_times`` ...) so statistics can be recomputed later.

Note [schema versions]
    The ``meta`` table holds ``schema_version``. A database written by a newer
    gnnbench is refused (never downgraded); an older one is upgraded in place by
    the named steps in ``_UPGRADES`` (asv ``update_to_2``, sqlite-utils
    ``Migrations``), all in one transaction. A step's SQL is frozen text, never
    derived from the current field tuples, so that replaying it on an old file
    stays correct after later steps change those tuples.
    Version 1: ``meta`` and ``runs``. Version 2: adds ``verifications``.
    Version 3: kernel time and allocator columns. Version 4: adds ``claims``.
    Version 5: the phases and throughputs of sampled runs (``--batching sampled``).
    Version 6: ``machine_state``, the machine around the timed epochs.

Note [store first]
    A command that will store a measurement opens the store before it
    measures: the file is created or upgraded and a write is tried, within
    ``_OPEN_TIMEOUT_S`` seconds. A read-only, locked, corrupt or too-new
    store therefore fails in seconds with one line, before hours of
    training. Should the final write still fail, :func:`save_unsaved` writes
    the row as JSON beside the store (or in a fallback folder) and the
    command prints where: a finished measurement is never lost. Commands
    that only read (``results``, ``compare``, ``plot``) open with
    ``create=False``: a missing file is an error and no folder is created.

Note [claims]
    Concurrent sweeps on one file split the work: before running a
    configuration a sweep claims its key (provenance and occurrence) in the
    ``claims`` table, whose key is unique, in one write transaction; a
    configuration claimed by another live sweep is left to it. A claim
    expires at ``expires_at`` (the run's time limit plus a margin), so a
    sweep that was killed does not hold its configurations forever; the
    claim is released when the row is stored.

Note [store concurrency]
    Two ``gnnbench run`` processes may write one file at once. The file is in
    WAL mode, each connection waits up to ``busy_timeout`` for the write lock,
    and every write is one ``BEGIN IMMEDIATE`` transaction: no row is lost,
    none is duplicated, and an interrupted insert leaves no half row.
"""
from __future__ import annotations

import csv
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gnnbench.errors import UserError
from gnnbench.text import printable
from gnnbench.results.row import RUN_COLUMNS, Field, json_problem

__all__ = [
    "Field", "RUN_FIELDS", "VERIFICATION_FIELDS", "SCHEMA_VERSION", "STATUSES",
    "VERIFIED", "ResultsStore", "default_results_path", "store_markdown", "utc_now", "save_unsaved",
    "export_rows_csv",
]

SCHEMA_VERSION = 6
STATUSES = ("ok", "failed", "skipped", "timeout", "oom", "crashed")
VERIFIED = ("passed", "failed", "unverified")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_BUSY_TIMEOUT_S = 60.0   # a write waits this long for another writer's lock
_OPEN_TIMEOUT_S = 5.0    # opening (create, upgrade, write test) fails after this (Note [store first])


_F = Field
#: The ``runs`` table, derived from :class:`~gnnbench.results.row.RunResult` (each column declared there, once).
RUN_FIELDS: tuple[Field, ...] = RUN_COLUMNS
VERIFICATION_FIELDS: tuple[Field, ...] = (
    _F("id", "INTEGER", "Row id, assigned on insert."),
    _F("timestamp", "TEXT", "When the verification ran, UTC ISO 8601."),
    _F("system", "TEXT", "Kernel system name."),
    _F("system_version", "TEXT", "The system's declared version."),
    _F("system_hash", "TEXT", "Hash of spec + generated glue + kernels that was verified."),
    _F("status", "TEXT", "`passed` or `failed`."),
    _F("details", "JSON", "Object: per-operator results, tolerances, worst errors. `settings.dtypes` lists the "
                          "float types checked (rows of the second are labelled `[float32]`), and `largest_graph` "
                          "(`graph`, `nodes`, `edges`, `check`) the graph with the most edges any check ran on; see "
                          "Note [what runs] in `gnnbench/check/dims.py`."),
)
del _F
_RUN_NAMES = frozenset(f.name for f in RUN_FIELDS)
_RUN_JSON = frozenset(f.name for f in RUN_FIELDS if f.sqltype == "JSON")
_RUN_TYPES = {f.name: f.sqltype for f in RUN_FIELDS}


def utc_now() -> str:
    """The current time as UTC ISO 8601 with seconds, the format of ``timestamp``."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def default_results_path() -> Path:
    """``$GNNBENCH_RESULTS`` if set, else ``results/gnnbench.sqlite`` under the cwd."""
    env = os.environ.get("GNNBENCH_RESULTS")
    return Path(env) if env else Path.cwd() / "results" / "gnnbench.sqlite"


def _connect(path: Path, readonly: bool) -> sqlite3.Connection:
    """A connection that waits at most ``_OPEN_TIMEOUT_S`` for locks while opening."""
    if str(path) == ":memory:":
        return sqlite3.connect(":memory:", isolation_level=None)
    if readonly:
        uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?mode=ro"
        return sqlite3.connect(uri, uri=True, timeout=_OPEN_TIMEOUT_S, isolation_level=None)
    return sqlite3.connect(path, timeout=_OPEN_TIMEOUT_S, isolation_level=None)


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _store_error(path: Path, exc: sqlite3.Error) -> UserError:
    """One line for an SQLite failure while opening (Note [store first])."""
    text = str(exc)
    if "readonly" in text.lower() or "read-only" in text.lower():
        return UserError(f"results database {path} is read-only here ({text}); choose a writable --results path "
                         f"or fix its permissions")
    if _is_busy(exc):
        return UserError(f"results database {path} is locked by another process (waited {_OPEN_TIMEOUT_S:g} s); "
                         f"try again, or choose another --results path")
    return UserError(f"cannot open results database {path} ({text}); choose another --results path")


def _check_path(path: Path, create: bool) -> None:
    """One-line errors for paths SQLite would fail on less clearly, before anything is created."""
    from gnnbench.paths import check_output_file, check_path_length

    check_path_length(path, "results database")
    if path.is_dir():
        raise UserError(f"results database {path} is a folder: expected an SQLite file path")
    from gnnbench.results.rows_file import is_rows_file

    if is_rows_file(path):  # Note [committed rows]: read by load_results, never written run by run
        raise UserError(f"{path} is a committed rows file, which compare, plot and report read; "
                        + ("runs are stored in an SQLite file: pass --results PATH.sqlite" if create else
                           "this command needs an SQLite results database"))
    if not create:
        if not path.exists():
            raise UserError(f"no results database at {path}; run `gnnbench run` or `gnnbench sweep` first, "
                            f"or pass --results PATH")
        return
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create the folder of results database {path}: {exc.strerror or exc}") from None
    check_output_file(path, "results database")


def save_unsaved(row: Mapping[str, Any], store_path: str | os.PathLike) -> Path:
    """Write a row that could not be stored as JSON, beside the store or in a fallback folder (Note [store first]).

    Tries ``<store>.unsaved/``, then ``$GNNBENCH_CACHE/unsaved`` (``~/.cache/gnnbench/unsaved``), then the
    temp folder. Returns the file written; load it later with ``ResultsStore.insert(json.load(...))``.
    """
    import tempfile

    store_path = Path(store_path)
    name = f"run-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%f')}-{os.getpid()}.json"
    cache = Path(os.environ.get("GNNBENCH_CACHE") or Path.home() / ".cache" / "gnnbench")
    text = json.dumps(dict(row), default=float, indent=1)
    for folder in (store_path.parent / (store_path.name + ".unsaved"), cache / "unsaved",
                   Path(tempfile.gettempdir()) / "gnnbench-unsaved"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / name
            target.write_text(text, encoding="utf-8")
            return target
        except OSError:
            continue
    raise OSError(f"could not write the row anywhere (tried beside {store_path}, {cache} and the temp folder)")


def _table_sql(table: str, fields: Iterable[Field]) -> str:
    cols = []
    for f in fields:
        decl = "TEXT" if f.sqltype == "JSON" else f.sqltype  # JSON would get NUMERIC affinity
        cols.append(f"{f.name} {decl} PRIMARY KEY AUTOINCREMENT" if f.name == "id" else f"{f.name} {decl}")
    return f"CREATE TABLE {table} (\n  " + ",\n  ".join(cols) + "\n)"


def _create_current(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(_table_sql("runs", RUN_FIELDS))
    conn.execute("CREATE INDEX runs_group ON runs (dataset, model, framework, system)")
    conn.execute(_table_sql("verifications", VERIFICATION_FIELDS))
    conn.execute("CREATE INDEX verifications_system ON verifications (system, system_hash)")
    conn.execute(_CLAIMS_SQL)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


def _upgrade_1_to_2(conn: sqlite3.Connection) -> None:
    """Adds the ``verifications`` table: outcomes of ``gnnbench verify`` per system and hash."""
    conn.execute(
        "CREATE TABLE verifications (\n  id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
        "  timestamp TEXT,\n  system TEXT,\n  system_version TEXT,\n  system_hash TEXT,\n"
        "  status TEXT,\n  details TEXT\n)")
    conn.execute("CREATE INDEX verifications_system ON verifications (system, system_hash)")


def _upgrade_2_to_3(conn: sqlite3.Connection) -> None:
    """Adds ``runs.kernel_median_s``, ``runs.kernel_times`` (time inside the system's kernels) and
    ``runs.allocator`` (the memory allocator of the run's process); null for older runs."""
    for column, sqltype in (("kernel_median_s", "REAL"), ("kernel_times", "TEXT"), ("allocator", "TEXT")):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column} {sqltype}")


_CLAIMS_SQL = "CREATE TABLE claims (\n  key TEXT PRIMARY KEY,\n  owner TEXT NOT NULL,\n  expires_at REAL NOT NULL\n)"


def _upgrade_3_to_4(conn: sqlite3.Connection) -> None:
    """Adds the ``claims`` table: configurations a running sweep has taken (Note [claims])."""
    conn.execute("CREATE TABLE claims (\n  key TEXT PRIMARY KEY,\n  owner TEXT NOT NULL,\n"
                 "  expires_at REAL NOT NULL\n)")


def _upgrade_4_to_5(conn: sqlite3.Connection) -> None:
    """Adds the sampled-run columns (``sample_median_s`` ... ``accuracy_method``); null for older runs."""
    for column, sqltype in (("sample_median_s", "REAL"), ("gather_median_s", "REAL"),
                            ("block_prepare_median_s", "REAL"), ("sample_times", "TEXT"), ("gather_times", "TEXT"),
                            ("block_prepare_times", "TEXT"), ("seeds_per_s", "REAL"), ("edges_per_s", "REAL"),
                            ("accuracy_method", "TEXT")):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column} {sqltype}")


def _upgrade_5_to_6(conn: sqlite3.Connection) -> None:
    """Adds ``runs.machine_state``: load, other processes' CPU share, affinity, quota and frequency around the
    timed epochs (Note [machine state] in gnnbench/run/machine_state.py); null for older runs."""
    conn.execute("ALTER TABLE runs ADD COLUMN machine_state TEXT")


_UPGRADES = {1: _upgrade_1_to_2, 2: _upgrade_2_to_3, 3: _upgrade_3_to_4, 4: _upgrade_4_to_5,
             5: _upgrade_5_to_6}  # from version -> step to version + 1


def _encode(name: str, kind: str, value: Any) -> Any:
    """Checks one value against its column type and turns it into what SQLite stores."""
    if value is None:
        return None
    if hasattr(value, "tolist"):  # NumPy / torch scalars and arrays become Python values
        value = value.tolist()
    if kind == "JSON":
        try:
            return json.dumps(value, separators=(",", ":"))
        except TypeError as exc:
            raise ValueError(f"field '{name}' must be JSON-serialisable (got {type(value).__name__}): "
                             f"{exc}") from None
    ok = {"INTEGER": isinstance(value, int),
          "REAL": isinstance(value, (int, float)) and not isinstance(value, bool),
          "TEXT": isinstance(value, str)}[kind]
    if not ok:
        raise ValueError(f"field '{name}' expects {kind} (got {type(value).__name__} {value!r})")
    return int(value) if kind == "INTEGER" else value


#: What SQLite hands back for a well-formed value of each declared type (JSON is stored as TEXT).
_READ_TYPES = {"INTEGER": (int,), "REAL": (int, float), "TEXT": (str,), "JSON": (str,)}


def _decode(fields: tuple[Field, ...], values: Iterable[Any]) -> dict[str, Any]:
    """One stored row as Python values; ``ValueError`` names a column a hand edit left malformed."""
    out = {}
    for f, v in zip(fields, values):
        if v is not None:
            if not isinstance(v, _READ_TYPES[f.sqltype]):
                raise ValueError(f"column {f.name} holds {_shown(v)}, not a{'n' if f.sqltype == 'INTEGER' else ''} "
                                 f"{f.sqltype}")
            if f.sqltype == "JSON":
                try:
                    v = json.loads(v)
                except ValueError:
                    raise ValueError(f"column {f.name} holds {_shown(v)}, not JSON") from None
                if v is not None and not _has_shape(v, f.shape):
                    raise ValueError(f"column {f.name} holds {_shown(v)}, not {_shape_name(f.shape)}")
                problem = json_problem(f.name, v) if v is not None and f in RUN_FIELDS else None
                if problem:  # Note [JSON columns checked when read] in gnnbench/results/row.py
                    raise ValueError(f"column {f.name}: {problem}")
        out[f.name] = v
    return out


def _shape_name(shape: str) -> str:
    return "a list of numbers" if shape == "list[float]" else "a list" if shape.startswith("list") else "an object"


def _has_shape(value: Any, shape: str) -> bool:
    """Whether a decoded JSON value is what its column's annotation says (a hand edit may have changed it)."""
    if shape == "list[float]":
        return isinstance(value, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)
    if shape.startswith("list"):
        return isinstance(value, list)
    return isinstance(value, dict) if shape else True  # dict[...], Extra and MachineState are JSON objects


def _shown(value: Any) -> str:
    """A stored value in a message: its repr, at most 40 characters, control characters escaped."""
    text = repr(value)
    return printable(text if len(text) <= 40 else text[:37] + "...")


class ResultsStore:
    """An open results database.

    Args:
        path (str or Path): the SQLite file (default: :func:`default_results_path`).
        create (bool): open to write (default): create the file and its folder if
            missing, upgrade an older schema and try a write (Note [store first]).
            With False, open to read: the file must exist and nothing is created.

    Raises:
        UserError: the file is not a gnnbench results database (it is then left
            untouched), its schema is newer than this gnnbench understands, or it
            cannot be written (read-only, locked), each in one line within seconds.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, create: bool = True):
        self.path = Path(path) if path is not None else default_results_path()
        self.readonly = False
        if str(self.path) != ":memory:":
            _check_path(self.path, create)
            self._check_header()
        self.readonly = not create
        try:
            self._conn = _connect(self.path, self.readonly)
        except sqlite3.Error as exc:
            raise _store_error(self.path, exc) from None
        try:
            self._open()
        except sqlite3.Error as exc:
            self._conn.close()
            raise _store_error(self.path, exc) from None
        except BaseException:
            self._conn.close()
            raise
        self._conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")

    def _check_header(self) -> None:
        # Refuse before connecting: SQLite would happily turn junk into a new database.
        if self.path.exists() and self.path.stat().st_size > 0:
            try:
                with open(self.path, "rb") as fh:
                    head = fh.read(len(_SQLITE_MAGIC))
            except OSError as exc:
                raise UserError(f"cannot read results database {self.path}: {exc.strerror or exc}") from None
            if head != _SQLITE_MAGIC:
                raise UserError(f"{self.path} is not a gnnbench results database (not an SQLite file); "
                                f"it was left untouched: move it aside or choose another results path")

    def _version(self) -> int | None:
        """The stored schema version; None for an empty file. Only reads."""
        try:
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                                            "AND name NOT LIKE 'sqlite_%'")}
            if not tables:
                return None
            if "meta" not in tables:
                raise UserError(f"{self.path} is an SQLite file but not a gnnbench results database "
                                f"(tables: {', '.join(sorted(tables))}); it was left untouched")
            row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError as exc:
            if _is_busy(exc) or "readonly" in str(exc) or "unable to open" in str(exc):
                raise
            raise UserError(f"{self.path} is not a readable gnnbench results database ({exc}); "
                            f"it was left untouched: move it aside or choose another results path") from None
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.path} is not a readable gnnbench results database ({exc}); "
                            f"it was left untouched: move it aside or choose another results path") from None
        if row is None:
            raise UserError(f"results database {self.path} has no schema_version in its meta table; "
                            f"it was left untouched")
        text = str(row[0]).strip()
        if not (text.isascii() and text.isdigit()):
            raise UserError(f"results database {self.path} has schema_version {row[0]!r}, not a whole number; "
                            f"it was left untouched: move it aside or choose another results path")
        if "runs" not in tables and int(text) <= SCHEMA_VERSION:  # a newer schema is refused as such in _open
            raise UserError(f"results database {self.path} has no runs table (tables: {', '.join(sorted(tables))}); "
                            f"it was left untouched: move it aside or choose another results path")
        return int(text)

    def _open(self) -> None:
        version = self._version()
        if version is not None and version > SCHEMA_VERSION:
            raise UserError(f"results database {self.path} has schema version {version}, newer than "
                            f"this gnnbench understands ({SCHEMA_VERSION}): update gnnbench")
        if self.readonly:
            if version is None:
                raise UserError(f"{self.path} holds no results yet (an empty file)")
            if version < SCHEMA_VERSION:
                try:
                    self._conn.close()
                    self._conn = _connect(self.path, readonly=False)
                    self.readonly = False
                except sqlite3.Error as exc:
                    raise _store_error(self.path, exc) from None
            else:
                return
        else:  # a reader upgrades an older store but leaves its journal mode as it found it
            self._journal_wal()
        with self._write():
            version = self._version()  # again, under the write lock: another process may have won
            if version is None:
                _create_current(self._conn)
            elif version < SCHEMA_VERSION:
                for v in range(version, SCHEMA_VERSION):
                    _UPGRADES[v](self._conn)
                self._conn.execute("UPDATE meta SET value=? WHERE key='schema_version'",
                                   (str(SCHEMA_VERSION),))
            else:  # the write test of Note [store first]
                self._conn.execute("UPDATE meta SET value=value WHERE key='schema_version'")

    def _journal_wal(self) -> None:
        # Switching to WAL takes an exclusive lock and does not wait on the busy
        # handler, so retry while another process holds the file (Note [store concurrency]).
        deadline = time.monotonic() + _OPEN_TIMEOUT_S
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction, taken at once (Note [store concurrency])."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:  # SQLite may have rolled back already
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # -- runs ---------------------------------------------------------------

    def _insert_run(self, row: Mapping[str, Any]) -> int:
        unknown = sorted(set(row) - _RUN_NAMES)
        if unknown:
            raise ValueError(f"unknown run field(s) {unknown}; valid fields are {[f.name for f in RUN_FIELDS]}")
        for key, allowed in (("status", STATUSES), ("verified", VERIFIED)):
            if row.get(key) is not None and row[key] not in allowed:
                raise ValueError(f"field '{key}' must be one of {list(allowed)} (got {row[key]!r})")
        names = list(row)
        values = [_encode(n, _RUN_TYPES[n], row[n]) for n in names]
        sql = (f"INSERT INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
               if names else "INSERT INTO runs DEFAULT VALUES")
        return self._conn.execute(sql, values).lastrowid

    def insert(self, row: Mapping[str, Any]) -> int:
        """Stores one run (one transaction) and returns its id.

        Args:
            row (dict): field name -> value; missing fields are stored as NULL.

        Raises:
            ValueError: a key is not in :data:`RUN_FIELDS`, or a value has the wrong type.
        """
        with self._write():
            return self._insert_run(row)

    def insert_many(self, rows: Iterable[Mapping[str, Any]]) -> list[int]:
        """Stores several runs in one transaction: all of them or none."""
        with self._write():
            return [self._insert_run(r) for r in rows]

    def rows(self, **filters: Any) -> list[dict[str, Any]]:
        """Runs matching every filter, ordered by id, JSON fields decoded.

        ``field=value`` matches by equality, ``field=None`` matches NULL, and a
        list, tuple or set matches any of its values, e.g.
        ``rows(dataset="cora", system=["reference", "fast"])``.
        """
        unknown = sorted(set(filters) - _RUN_NAMES)
        if unknown:
            raise ValueError(f"unknown filter field(s) {unknown}; valid fields are "
                             f"{[f.name for f in RUN_FIELDS]}")
        where, params = [], []
        for name, value in filters.items():
            if value is None:
                where.append(f"{name} IS NULL")
            elif isinstance(value, (list, tuple, set, frozenset)) and name not in _RUN_JSON:
                values = [_encode(name, _RUN_TYPES[name], v) for v in value]
                where.append(f"{name} IN ({', '.join('?' * len(values))})" if values else "0")
                params += values
            else:
                where.append(f"{name} = ?")
                params.append(_encode(name, _RUN_TYPES[name], value))
        sql = f"SELECT {', '.join(f.name for f in RUN_FIELDS)} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._decoded(RUN_FIELDS, r, "run") for r in self._conn.execute(sql + " ORDER BY id", params)]

    def _decoded(self, fields: tuple[Field, ...], values: tuple[Any, ...], what: str) -> dict[str, Any]:
        try:
            return _decode(fields, values)
        except ValueError as exc:  # a hand edit or another tool: one line naming the row, not a traceback later
            raise UserError(f"results database {self.path}: {what} {values[0]}: {exc}; fix or delete that row "
                            f"(e.g. with sqlite3)") from None

    def get(self, run_id: int) -> dict[str, Any] | None:
        """The run with this id, or ``None``."""
        found = self.rows(id=run_id)
        return found[0] if found else None

    def export_csv(self, file_or_path: Any, rows: Iterable[Mapping[str, Any]] | None = None) -> int:
        """Writes runs (default: all) as CSV with one column per field; returns the row count.

        JSON fields are written as compact JSON text, NULL as an empty cell.
        """
        return export_rows_csv(file_or_path, self.rows() if rows is None else rows)

    # -- claims (Note [claims]) ----------------------------------------------

    def claim(self, key: str, owner: str, ttl_s: float) -> bool:
        """Take ``key`` for ``owner`` until ``ttl_s`` seconds from now; False if another live owner has it."""
        now = time.time()
        with self._write():
            self._conn.execute("DELETE FROM claims WHERE key = ? AND expires_at < ?", (key, now))
            cur = self._conn.execute("INSERT OR IGNORE INTO claims VALUES (?, ?, ?)", (key, owner, now + ttl_s))
            if cur.rowcount == 1:
                return True
            held = self._conn.execute("SELECT owner FROM claims WHERE key = ?", (key,)).fetchone()
            return held is not None and held[0] == owner

    def release(self, key: str, owner: str) -> None:
        """Give ``key`` back (after its row is stored, or when the run was not started)."""
        with self._write():
            self._conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

    def claims(self) -> dict[str, str]:
        """Live claims: key -> owner."""
        rows = self._conn.execute("SELECT key, owner FROM claims WHERE expires_at >= ?", (time.time(),))
        return dict(rows.fetchall())

    # -- verifications ------------------------------------------------------

    def record_verification(self, system: str, system_version: str | None, system_hash: str | None,
                            status: str, details: Any = None, timestamp: str | None = None) -> int:
        """Stores the outcome of verifying a system against ``reference``; returns its id.

        Args:
            status (str): ``passed`` or ``failed``.
            details: JSON-serialisable detail (per-operator errors, tolerances).
            timestamp (str, optional): UTC ISO 8601 (default: now).
        """
        if status not in ("passed", "failed"):
            raise ValueError(f"verification status must be 'passed' or 'failed' (got {status!r})")
        values = (timestamp or utc_now(), system, system_version, system_hash, status,
                  _encode("details", "JSON", details))
        with self._write():
            return self._conn.execute(
                "INSERT INTO verifications (timestamp, system, system_version, system_hash, status, "
                "details) VALUES (?, ?, ?, ?, ?, ?)", values).lastrowid

    def latest_verification(self, system: str, system_hash: str | None = None) -> dict[str, Any] | None:
        """The most recent verification of ``system`` (of that hash if given), or ``None``."""
        sql = f"SELECT {', '.join(f.name for f in VERIFICATION_FIELDS)} FROM verifications WHERE system = ?"
        params: list[Any] = [system]
        if system_hash is not None:
            sql += " AND system_hash = ?"
            params.append(system_hash)
        row = self._conn.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
        return self._decoded(VERIFICATION_FIELDS, row, "verification") if row else None

    # -- lifetime -----------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.path)!r})"


def export_rows_csv(file_or_path: Any, rows: Iterable[Mapping[str, Any]]) -> int:
    """Writes rows as CSV with one column per field (see :meth:`ResultsStore.export_csv`); returns the count.

    A path is written to a temporary file beside it and renamed, so a failure leaves nothing half-written.
    """
    if isinstance(file_or_path, (str, os.PathLike)):
        target = Path(file_or_path)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                count = _write_csv(fh, rows)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return count
    return _write_csv(file_or_path, rows)


def _write_csv(fh: Any, rows: Iterable[Mapping[str, Any]]) -> int:
    writer = csv.writer(fh)
    writer.writerow([f.name for f in RUN_FIELDS])
    count = 0
    for row in rows:
        out = []
        for f in RUN_FIELDS:
            v = row.get(f.name)
            if v is None:
                out.append("")
            elif f.sqltype == "JSON":
                out.append(json.dumps(v, separators=(",", ":")))
            else:
                out.append(v)
        writer.writerow(out)
        count += 1
    return count


def _fields_table(fields: tuple[Field, ...]) -> list[str]:
    lines = ["| column | type | description |", "| --- | --- | --- |"]
    lines += [f"| `{f.name}` | {f.sqltype} | {f.description} |" for f in fields]
    return lines


def store_markdown() -> list[str]:
    """The store's sections of ``docs/results-schema.md`` (:mod:`gnnbench.results.schema_doc`), from the field
    tuples."""
    return [
        "# Results database schema",
        "",
        f"gnnbench stores results in one SQLite file (default `results/gnnbench.sqlite`, or "
        f"`$GNNBENCH_RESULTS`). This page describes schema version {SCHEMA_VERSION}.",
        "",
        "Columns of type JSON hold JSON text and are decoded to Python objects by "
        "`ResultsStore.rows()`. Times are seconds; memory is bytes; NULL means not measured.",
        "",
        "## `runs`: one row per benchmark run",
        "",
        *_fields_table(RUN_FIELDS),
        "",
        "## `verifications`: one row per `gnnbench verify` of a system",
        "",
        *_fields_table(VERIFICATION_FIELDS),
        "",
        "## `meta`",
        "",
        "Key/value text pairs. `schema_version` is the version of the schema above. "
        "gnnbench refuses a database with a newer version (update gnnbench) and upgrades "
        "an older one in place, one named step per version:",
        "",
        "| version | change |",
        "| --- | --- |",
        "| 1 | `meta` and `runs` |",
        *[f"| {v + 1} | {' '.join((step.__doc__ or '').split()).replace('``', '`')} |"
          for v, step in sorted(_UPGRADES.items())],
        "",
    ]
