"""Tests of gnnbench.results.store: round trips, filters, CSV, schema versions, bad files, concurrency."""
from __future__ import annotations

import csv
import json
import multiprocessing
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from gnnbench.results import store as store_mod
from gnnbench.errors import UserError
from gnnbench.results.schema_doc import schema_markdown
from gnnbench.results.store import RUN_FIELDS, SCHEMA_VERSION, ResultsStore, default_results_path

DOC = Path(__file__).resolve().parents[2] / "docs" / "results-schema.md"
_SAMPLE = {"INTEGER": 7, "REAL": 0.125, "TEXT": "text with 'quotes' and ünïcode"}


def full_row() -> dict:
    """A run with every field but ``id`` set to a value of its type."""
    row = {}
    for f in RUN_FIELDS:
        if f.name == "id":
            continue
        if f.sqltype == "JSON":
            row[f.name] = [0.5, 0.25, 1e-6] if f.name.endswith("_times") else {"k": [1, "two", None], "n": 3}
        else:
            row[f.name] = _SAMPLE[f.sqltype]
    row.update(status="ok", verified="passed", timestamp="2024-05-01T12:00:00+00:00")
    return row


def test_round_trip_every_field(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        row = full_row()
        run_id = store.insert(row)
        got = store.get(run_id)
    assert got == {"id": run_id, **row}
    assert isinstance(got["epoch_times"], list) and isinstance(got["machine"], dict)


def test_missing_fields_are_null_and_numpy_values_are_stored(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        run_id = store.insert({"system": "s", "seed": np.int64(3), "test_accuracy": np.float32(0.5),
                               "epoch_times": np.array([0.25])})
        got = store.get(run_id)
    assert got["seed"] == 3 and got["test_accuracy"] == 0.5 and got["epoch_times"] == [0.25]
    assert got["dataset"] is None and got["extra"] is None


def test_bad_rows_are_refused(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(ValueError, match=r"unknown run field\(s\) \['bogus', 'nope'\]"):
            store.insert({"system": "s", "nope": 1, "bogus": 2})
        with pytest.raises(ValueError, match="field 'threads' expects INTEGER"):
            store.insert({"threads": "four"})
        with pytest.raises(ValueError, match="field 'status' must be one of"):
            store.insert({"status": "great"})
        with pytest.raises(ValueError, match="unknown filter field"):
            store.rows(sytem="s")
        assert store.rows() == []
        assert store.get(1) is None


def test_filters(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        ids = store.insert_many([
            {"system": "a", "dataset": "cora", "threads": 1},
            {"system": "b", "dataset": "cora", "threads": 2},
            {"system": "a", "dataset": "pubmed"},
        ])
        assert [r["id"] for r in store.rows()] == ids
        assert [r["id"] for r in store.rows(system="a")] == [ids[0], ids[2]]
        assert [r["id"] for r in store.rows(system="a", dataset="cora")] == [ids[0]]
        assert [r["id"] for r in store.rows(threads=None)] == [ids[2]]
        assert [r["id"] for r in store.rows(system=["b", "c"])] == [ids[1]]
        assert store.rows(system=[]) == []


def test_export_csv(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.insert(full_row())
        store.insert({"system": "other", "status": "failed", "error": "boom"})
        assert store.export_csv(tmp_path / "out.csv") == 2
        with open(tmp_path / "out.csv", newline="", encoding="utf-8") as fh:
            table = list(csv.DictReader(fh))
        assert list(table[0]) == [f.name for f in RUN_FIELDS]
        assert json.loads(table[0]["epoch_times"]) == [0.5, 0.25, 1e-6]
        assert table[0]["system"] == full_row()["system"] and table[1]["dataset"] == ""
        only = store.rows(system="other")
        assert store.export_csv(tmp_path / "one.csv", rows=only) == 1


def test_creates_parent_folder_and_default_path(tmp_path, monkeypatch):
    path = tmp_path / "a" / "b" / "r.sqlite"
    ResultsStore(path).close()
    assert path.is_file()
    monkeypatch.delenv("GNNBENCH_RESULTS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_results_path() == tmp_path / "results" / "gnnbench.sqlite"
    monkeypatch.setenv("GNNBENCH_RESULTS", str(path))
    assert default_results_path() == path


def test_verifications(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.latest_verification("fast") is None
        store.record_verification("fast", "1.0", "h1", "failed", {"spmm": "max error 1e-2"})
        last = store.record_verification("fast", "1.1", "h2", "passed", {"spmm": "ok"})
        store.record_verification("other", "1.0", "h9", "passed")
        got = store.latest_verification("fast")
        assert got["id"] == last and got["status"] == "passed" and got["details"] == {"spmm": "ok"}
        assert store.latest_verification("fast", "h1")["status"] == "failed"
        with pytest.raises(ValueError, match="'passed' or 'failed'"):
            store.record_verification("fast", "1", "h", "maybe")


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "r.sqlite"
    ResultsStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(UserError) as err:
        ResultsStore(path)
    assert str(err.value) == (f"results database {path} has schema version 99, newer than this "
                              f"gnnbench understands ({SCHEMA_VERSION}): update gnnbench")
    assert path.read_bytes() == before


@pytest.mark.parametrize("content", [
    os.urandom(4096),
    b"SQLite format 3\x00" + bytes(range(256)) * 16,  # right magic, garbage pages
], ids=["random-bytes", "corrupt-sqlite"])
def test_corrupt_file_is_refused_and_untouched(tmp_path, content):
    path = tmp_path / "r.sqlite"
    path.write_bytes(content)
    with pytest.raises(UserError, match=str(path)):
        ResultsStore(path)
    assert path.read_bytes() == content


def test_foreign_sqlite_file_is_refused_and_untouched(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(UserError, match="not a gnnbench results database .tables: people."):
        ResultsStore(path)
    assert path.read_bytes() == before


def _columns(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                         "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    out = {t: conn.execute(f"PRAGMA table_info({t})").fetchall() for t in tables}
    conn.close()
    return out


def test_upgrade_from_version_1(tmp_path):
    # A version-1 file as gnnbench 0.1 wrote it: meta and runs, no verifications.
    # The runs table of version 1 is RUN_FIELDS without the columns later versions appended.
    old = tmp_path / "v1.sqlite"
    conn = sqlite3.connect(old)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    later = ("kernel_median_s", "kernel_times", "allocator") + _SCHEMA_5_COLUMNS + _SCHEMA_6_COLUMNS
    conn.execute(store_mod._table_sql("runs", [f for f in RUN_FIELDS if f.name not in later]))
    conn.execute("INSERT INTO runs (system, status, epoch_times) VALUES ('old', 'ok', '[0.5]')")
    conn.commit()
    conn.close()

    with ResultsStore(old) as store:
        assert store.rows()[0]["system"] == "old" and store.rows()[0]["epoch_times"] == [0.5]
        assert store.rows()[0]["allocator"] is None
        store.record_verification("old", "1", "h", "passed")
        assert store.latest_verification("old")["status"] == "passed"
    conn = sqlite3.connect(old)
    assert conn.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
    conn.close()
    fresh = tmp_path / "fresh.sqlite"
    ResultsStore(fresh).close()
    assert _columns(old) == _columns(fresh)  # the upgraded schema is the one a new file gets


_SCHEMA_5_COLUMNS = ("sample_median_s", "gather_median_s", "block_prepare_median_s", "sample_times", "gather_times",
                     "block_prepare_times", "seeds_per_s", "edges_per_s", "accuracy_method")


def test_upgrade_from_version_4_adds_the_sampled_columns_as_null(tmp_path):
    old = tmp_path / "v4.sqlite"
    ResultsStore(old).close()
    conn = sqlite3.connect(old)  # make it a version-4 file: the runs table without schema 5's columns
    for column in _SCHEMA_5_COLUMNS + _SCHEMA_6_COLUMNS:
        conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.execute("INSERT INTO runs (system, status, epoch_times) VALUES ('old', 'ok', '[0.5]')")
    conn.commit()
    conn.close()
    with ResultsStore(old) as store:
        row = store.rows()[0]
        assert row["system"] == "old" and all(row[c] is None for c in _SCHEMA_5_COLUMNS)
    fresh = tmp_path / "fresh.sqlite"
    ResultsStore(fresh).close()
    assert _columns(old) == _columns(fresh)


_SCHEMA_6_COLUMNS = ("machine_state",)


def test_upgrade_from_version_5_adds_the_machine_state_as_null_and_new_rows_keep_it(tmp_path):
    """Note [machine state]: rows stored before it load with a null ``machine_state``; a new one round-trips."""
    old = tmp_path / "v5.sqlite"
    ResultsStore(old).close()
    conn = sqlite3.connect(old)
    conn.execute("ALTER TABLE runs DROP COLUMN machine_state")
    conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    conn.execute("INSERT INTO runs (system, status, epoch_times) VALUES ('old', 'ok', '[0.5]')")
    conn.commit()
    conn.close()
    state = {"load_before": [3.0, 2.0, 1.0], "other_cpu_share": 0.48, "unreadable": {"governor": "no cpufreq"}}
    with ResultsStore(old) as store:
        store.insert({"system": "new", "status": "ok", "machine_state": state})
        rows = store.rows()
    assert rows[0]["machine_state"] is None and rows[1]["machine_state"] == state
    fresh = tmp_path / "fresh.sqlite"
    ResultsStore(fresh).close()
    assert _columns(old) == _columns(fresh)


def test_every_old_version_has_a_named_upgrade_step():
    for v in range(1, SCHEMA_VERSION):
        assert store_mod._UPGRADES[v].__name__ == f"_upgrade_{v}_to_{v + 1}"


def test_interrupted_insert_leaves_no_row(tmp_path):
    class Boom:
        def tolist(self):
            raise KeyboardInterrupt  # as if the user hit Ctrl-C half way through

    with ResultsStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(KeyboardInterrupt):
            store.insert_many([{"system": "a"}, {"system": "b", "extra": Boom()}])
        with pytest.raises(ValueError, match="JSON-serialisable"):
            store.insert_many([{"system": "a"}, {"system": "b", "extra": {"x": object()}}])
        assert store.rows() == []
        store.insert({"system": "c"})  # no transaction was left open
        assert [r["system"] for r in store.rows()] == ["c"]


def _writer(path: str, worker: int, barrier) -> None:
    barrier.wait()  # both processes create and write the file at the same moment
    with ResultsStore(path) as store:
        for i in range(200):
            store.insert({"system": f"w{worker}", "seed": i, "status": "ok"})


def test_concurrent_writers_lose_and_duplicate_nothing(tmp_path):
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:
        pytest.skip("needs the fork start method")
    path = str(tmp_path / "shared.sqlite")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(path, w, barrier)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    with ResultsStore(path) as store:
        rows = store.rows()
    assert len(rows) == 400
    assert len({r["id"] for r in rows}) == 400
    assert {(r["system"], r["seed"]) for r in rows} == {(f"w{w}", i) for w in range(2) for i in range(200)}


def test_schema_doc_is_current():
    assert DOC.read_text(encoding="utf-8") == schema_markdown(), (
        "docs/results-schema.md is stale: run `python -m gnnbench.results.schema_doc > docs/results-schema.md`")


# ---------------------------------------------------------------- store first (Note [store first])

def test_a_read_only_store_fails_at_once_with_one_line(tmp_path, monkeypatch):
    path = tmp_path / "r.sqlite"
    ResultsStore(path).close()
    real = store_mod._connect
    monkeypatch.setattr(store_mod, "_connect", lambda p, readonly: real(p, True))  # as on a read-only mount
    with pytest.raises(UserError, match=r"results database .* is read-only here .*; choose a writable --results"):
        ResultsStore(path)


def test_a_locked_store_fails_after_the_open_timeout_not_the_write_timeout(tmp_path, monkeypatch):
    path = tmp_path / "r.sqlite"
    ResultsStore(path).close()
    monkeypatch.setattr(store_mod, "_OPEN_TIMEOUT_S", 0.1)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(UserError, match=r"is locked by another process \(waited 0.1 s\)"):
            ResultsStore(path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_schema_version_that_is_not_a_number_is_refused_and_untouched(tmp_path):
    path = tmp_path / "r.sqlite"
    ResultsStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value='3.x' WHERE key='schema_version'")
    before = path.read_bytes()
    with pytest.raises(UserError, match=r"has schema_version '3.x', not a whole number; it was left untouched"):
        ResultsStore(path)
    assert path.read_bytes() == before


def test_reading_a_missing_store_creates_nothing(tmp_path):
    path = tmp_path / "no" / "such" / "r.sqlite"
    with pytest.raises(UserError, match=r"no results database at .*r.sqlite; run `gnnbench run`"):
        ResultsStore(path, create=False)
    assert not (tmp_path / "no").exists()


def test_reading_a_current_store_takes_no_write_lock(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultsStore(path) as store:
        store.insert({"system": "s", "status": "ok"})
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer is busy
    try:
        with ResultsStore(path, create=False) as store:
            assert [r["system"] for r in store.rows()] == ["s"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_upgrade_from_version_3_adds_claims(tmp_path):
    path = tmp_path / "r.sqlite"
    ResultsStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE claims")
        for column in _SCHEMA_5_COLUMNS + _SCHEMA_6_COLUMNS:  # a version-3 table lacks later columns too
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    with ResultsStore(path) as store:
        assert store.claim("k", "me", 60) and store.claims() == {"k": "me"}


def test_claims_are_unique_expire_and_are_released(tmp_path, monkeypatch):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.claim("k", "a", 60)
        assert store.claim("k", "a", 60)       # its own claim again
        assert not store.claim("k", "b", 60)   # held by a live owner
        store.release("k", "b")                # only the owner releases
        assert store.claims() == {"k": "a"}
        store.release("k", "a")
        assert store.claim("k", "b", 60)
        assert store.claim("stale", "dead", -1)  # expired at once: a sweep that was killed
        assert store.claim("stale", "b", 60) and store.claims()["stale"] == "b"


def test_an_unsaved_row_goes_beside_the_store_as_json(tmp_path):
    row = {"status": "ok", "system": "s", "epoch_times": [0.5]}
    saved = store_mod.save_unsaved(row, tmp_path / "r.sqlite")
    assert saved.parent == tmp_path / "r.sqlite.unsaved" and json.loads(saved.read_text()) == row
    with ResultsStore(tmp_path / "r.sqlite") as store:  # it loads back as it is
        store.insert(json.loads(saved.read_text()))


def test_an_unsaved_row_falls_back_when_beside_the_store_is_not_writable(tmp_path, monkeypatch):
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path / "cache"))
    saved = store_mod.save_unsaved({"status": "ok"}, "/proc/r.sqlite")
    assert saved.parent == tmp_path / "cache" / "unsaved"


def _store_with_one_run(path: Path) -> Path:
    with ResultsStore(path) as store:
        store.insert({"system": "s", "status": "ok", "epoch_times": [0.5], "epoch_time_median_s": 0.5})
    return path


@pytest.mark.parametrize("column,value,problem", [
    ("epoch_times", "[0.5, oops", "epoch_times holds '[0.5, oops', not JSON"),
    ("epoch_time_median_s", "fast", "epoch_time_median_s holds 'fast', not a REAL"),
    ("epochs", 2.5, "epochs holds 2.5, not an INTEGER"),
    ("system", b"\x00bin", "system holds b'\\x00bin', not a TEXT"),
])
def test_a_hand_edited_value_is_one_line_naming_the_run_and_column(tmp_path, column, value, problem):
    path = _store_with_one_run(tmp_path / "r.sqlite")
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE runs SET {column} = ?", (value,))
    with ResultsStore(path, create=False) as store, pytest.raises(UserError) as err:
        store.rows()
    assert str(err.value) == (f"results database {path}: run 1: column {problem}; fix or delete that row "
                              f"(e.g. with sqlite3)")


def test_a_store_without_its_runs_table_is_one_line_and_untouched(tmp_path):
    path = _store_with_one_run(tmp_path / "r.sqlite")
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE runs")
    before = path.read_bytes()
    for create in (False, True):
        with pytest.raises(UserError) as err:
            ResultsStore(path, create=create)
        assert str(err.value) == (f"results database {path} has no runs table (tables: claims, meta, verifications); "
                                  f"it was left untouched: move it aside or choose another results path")
    assert path.read_bytes() == before


def test_reading_an_older_store_keeps_its_journal_mode(tmp_path):
    path = tmp_path / "v4.sqlite"
    ResultsStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        for column in _SCHEMA_5_COLUMNS + _SCHEMA_6_COLUMNS:
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with ResultsStore(path, create=False) as store:
        assert store.rows() == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_a_json_column_of_the_wrong_shape_is_one_line_naming_the_row(tmp_path):
    """A hand edit that leaves valid JSON of the wrong shape must not reach compare as a traceback."""
    import sqlite3

    from gnnbench.cli import main as cli

    path = tmp_path / "store.sqlite"
    with ResultsStore(path) as db:
        run_id = db.insert({"system": "reference", "model": "gcn", "dataset": "karate", "status": "ok",
                            "epoch_times": [0.01, 0.02, 0.03]})
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET epoch_times = ? WHERE id = ?", ('{"a": 1}', run_id))
    with ResultsStore(path, create=False) as db, pytest.raises(UserError) as err:
        db.rows()
    assert str(err.value) == (f"results database {path}: run {run_id}: column epoch_times holds {{'a': 1}}, not a "
                              "list of numbers; fix or delete that row (e.g. with sqlite3)")
    assert cli(["compare", "--results", str(path)]) == 2
