"""``gnnbench results``: stored runs as one table, missing values as ``-``, numbers right-aligned."""
from __future__ import annotations

from gnnbench.cli.results import table


def test_table_text():
    rows = [dict(id=1, status="ok", system="reference", model="gcn", framework="torch", epoch_time_median_s=0.01234,
                 test_accuracy=0.8, dataset="karate"),
            dict(id=2, status="oom", system="x", model=None, framework=None, epoch_time_median_s=None,
                 test_accuracy=None, dataset="sbm")]
    assert table(rows).render("text").splitlines() == [
        "  id  status    system     model    framework      epoch ms    test acc  dataset",
        "----  --------  ---------  -------  -----------  ----------  ----------  ---------",
        "   1  ok        reference  gcn      torch             12.34       0.800  karate",
        "   2  oom       x          -        -                     -           -  sbm",
    ]
