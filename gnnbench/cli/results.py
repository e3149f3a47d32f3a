"""``gnnbench results``: list stored runs, or export them to CSV."""
from __future__ import annotations

import sys

from gnnbench.text import printable

from ._common import add_results_option, open_store, print_json

HELP = "list stored runs (filter by system/model/dataset) or export them as CSV"


def add_arguments(p) -> None:
    p.add_argument("--system")
    p.add_argument("--model")
    p.add_argument("--dataset")
    p.add_argument("--csv", metavar="PATH", help="export the selected rows to PATH ('-' for stdout)")
    p.add_argument("--json", action="store_true")
    add_results_option(p)


def run(store_path=None, **filters) -> list[dict]:
    from gnnbench.results.status import with_current_status

    with open_store(store_path, create=False) as db:   # Note [status by build hash]
        return with_current_status(db, db.rows(**{k: v for k, v in filters.items() if v is not None}))


def main(args) -> int:
    from gnnbench.paths import check_output_file
    from gnnbench.results.store import export_rows_csv

    if args.csv is not None and args.csv != "-":
        check_output_file(args.csv, "--csv")  # before reading anything
    rows = run(args.results, system=args.system, model=args.model, dataset=args.dataset)
    if args.csv is not None:
        if args.csv == "-":
            export_rows_csv(sys.stdout, rows)
        else:
            n = export_rows_csv(args.csv, rows)
            print(f"wrote {n} rows to {args.csv}")
        return 0
    if args.json:
        print_json(rows)
        return 0
    if not rows:  # a table of no rows reads like a bug; a typo in a filter is the usual cause
        from gnnbench.errors import UserError

        chosen = [f"--{k} {printable(v)}" for k, v in (("system", args.system), ("model", args.model),
                                            ("dataset", args.dataset)) if v]
        raise UserError(f"no stored runs match{' ' + ' '.join(chosen) if chosen else ''}; "
                        f"run `gnnbench run` or `gnnbench sweep` first")
    from gnnbench.results.tables import print_table

    print_table(table(rows))
    return 0


def table(rows: list[dict]):
    """The stored runs as a :class:`~gnnbench.results.tables.Table`, one line per run."""
    from gnnbench.results.tables import Table

    def cell(row: dict, key: str, fmt) -> str:
        return fmt(row[key]) if row.get(key) is not None else "-"

    return Table(["id", "status", "system", "model", "framework", "epoch ms", "test acc", "dataset"],
                 [[r["id"], r["status"], printable(r["system"] or "-"), r["model"] or "-", r["framework"] or "-",
                   cell(r, "epoch_time_median_s", lambda s: f"{s * 1e3:.2f}"),
                   cell(r, "test_accuracy", lambda a: f"{a:.3f}"), printable(r["dataset"])] for r in rows],
                 numeric=[True, False, False, False, False, True, True, False])
