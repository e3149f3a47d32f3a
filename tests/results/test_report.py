"""Tests of gnnbench.results.report (without a browser): contents, escaping, PIM breakdown, errors."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gnnbench.errors import UserError
from gnnbench.results.report import build_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HOSTILE = '<script>alert("x")</script>'


def _fixture_rows() -> list[dict]:
    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", FIXTURES / "results_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fixture_rows()


def _pim_row(rows: list[dict]) -> dict:
    base = next(r for r in rows if r["system"] == "fused" and r["status"] == "ok")
    report = {"modeled_aggregation_s": {"forward": {"transfer_s": 1e-3, "kernel_s": 2e-3, "retrieve_s": 5e-4,
                                                    "merge_s": 2.5e-4, "total_s": 3.75e-3, "calls": 10,
                                                    "per_call_s": 3.75e-4}},
              "summary": ["modeled PIM forward aggregation: 3.75 ms over 10 calls"]}
    return dict(base, system="pim", system_hash="h-pim", timestamp="2024-05-01T13:00:00+00:00",
                extra={"system_report": report})


def test_report_holds_tables_provenance_and_pim(tmp_path):
    rows = _fixture_rows()
    index = build_report(rows + [_pim_row(rows)], tmp_path / "r", figures=False, source="fixture.sqlite")
    page = index.read_text(encoding="utf-8")
    assert index.name == "index.html" and page.startswith("<!DOCTYPE html>")
    assert page.count('<table class="sortable"') == 4  # cora, pubmed, pim breakdown, runs
    assert "cora · gcn · torch" in page and 'class="insignificant"' in page and 'class="faster"' not in page
    assert '<td class="unstable num"' in page and "1 process: no significance claimed" in page  # one process each
    assert "Example CPU @ 3.0GHz" in page and "bench-1" in page and "abc1234" in page and "numpy 2.0" in page
    assert "PIM: modeled breakdown" in page and "3.750" in page and "over 10 calls" in page
    assert 'id="system-reference"' in page and "Pure PyTorch ops" in page  # registry summary
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page  # offline


def test_everything_user_written_is_escaped(tmp_path):
    rows = _fixture_rows()
    for row in rows:
        if row["system"] == "huge":
            row.update(system=HOSTILE, error=f"failed at {HOSTILE}", dataset=HOSTILE)
        if row["system"] == "fused":
            row["machine"] = dict(row["machine"], hostname=HOSTILE)
    page = build_report(rows, tmp_path, figures=False, title=HOSTILE).read_text(encoding="utf-8")
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # the report's own sorting script


def test_no_runs_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="nothing to report"):
        build_report([], tmp_path / "r")
    assert not (tmp_path / "r").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="is a file: expected a folder"):
        build_report(_fixture_rows(), tmp_path / "file", figures=False)
