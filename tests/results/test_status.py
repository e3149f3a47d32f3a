"""gnnbench/results/status.py: a row counts by its build's latest verification, looked up when shown."""
from __future__ import annotations

from gnnbench.results.status import verification_status, with_current_status
from gnnbench.results.store import ResultsStore


def test_status_follows_the_latest_record_of_the_same_build(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert verification_status(store, "fast", "h1") == "unverified"
        assert verification_status(store, None, "h1") == "unverified"
        store.record_verification("fast", "1.0", "h1", "failed", {"spmm": "max error 1e-2"})
        assert verification_status(store, "fast", "h1") == "failed"
        store.record_verification("fast", "1.0", "h1", "passed", {"spmm": "ok"})
        assert verification_status(store, "fast", "h1") == "passed"
        assert verification_status(store, "fast", "h2") == "unverified"  # another build


def test_rows_are_copied_with_their_build_status(tmp_path):
    rows = [{"system": "fast", "system_hash": "h1", "verified": "unverified"},
            {"system": "fast", "system_hash": "h2", "verified": "unverified"}]
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.record_verification("fast", "1.0", "h1", "passed", {})
        fresh = with_current_status(store, rows)
    assert [r["verified"] for r in fresh] == ["passed", "unverified"]
    assert rows[0]["verified"] == "unverified"  # the stored rows are not changed
