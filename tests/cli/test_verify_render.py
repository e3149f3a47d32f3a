"""verify's text report: a detail's line breaks show as line breaks inside its column, indented, never as escapes."""
from __future__ import annotations

from gnnbench.check.conformance import CaseResult
from gnnbench.cli.verify import render
from gnnbench.verify.suite import VerifyReport


def test_a_details_line_breaks_are_line_breaks_indented():
    failure = "spmm(reduce=sum) out on 'hub' (int32, F=1, H=1, float64)\nworst at row 3: got 1.0, expected 2.0"
    report = VerifyReport("demo", "0.1", "abc123", "failed", seconds=1.25, recorded_id=None, operators=[
        CaseResult("spmm(reduce=sum)", "failed", cases=4, failed_cases=1, failures=[failure], failed_graphs=["hub"],
                   seconds=1.0),
        CaseResult("edge_softmax", "skipped", reason="no kernel\nfor this operator")])
    assert render(report) == """\
verify demo 0.1 (hash abc123) against reference
check             status      cases    time  detail
----------------  --------  -------  ------  --------------------------------------------------------
spmm(reduce=sum)  FAILED          4   1.0 s  1 of 4 cases failed (graphs: hub)
                                             spmm(reduce=sum) out on 'hub' (int32, F=1, H=1, float64)
                                               worst at row 3: got 1.0, expected 2.0
edge_softmax      skipped         -       -  no kernel
                                               for this operator
verdict: failed in 1.2 s; not recorded"""
    assert "\\x0a" not in render(report)


def test_a_stored_name_in_another_column_stays_escaped():
    report = VerifyReport("demo", "0.1", "abc123", "passed", operators=[CaseResult("bad\nname", detail="ok")])
    assert "bad\\x0aname" in render(report)
