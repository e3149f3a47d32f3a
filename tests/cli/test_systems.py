"""``gnnbench systems``: the table of systems, a broken one with its error, a hostile folder name escaped."""
from __future__ import annotations

from gnnbench.cli.systems import table


def test_table_text():
    rows = [dict(name="bad\nname", kind="kernel", broken=True, available=False, summary="s",
                 reason="spec: line 1: oops"),
            dict(name="reference", kind="kernel", broken=False, available=True, summary="The oracle", reason=""),
            dict(name="cusparse", kind="kernel", broken=False, available=False, summary="cuSPARSE",
                 reason="runs on cuda only")]
    assert table(rows).render("text").splitlines() == [
        "system       kind    state        summary, or why not",
        "-----------  ------  -----------  ---------------------",
        "bad\\x0aname  kernel  broken       spec: line 1: oops",
        "reference    kernel  available    The oracle",
        "cusparse     kernel  unavailable  runs on cuda only",
    ]
