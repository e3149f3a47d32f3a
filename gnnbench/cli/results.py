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
    from gnnbench.check.status import with_current_status

    with open_store(store_path, create=False) as db:   # Note [status by build hash]
        return with_current_status(db, db.rows(**{k: v for k, v in filters.items() if v is not None}))


def main(args) -> int:
    from gnnbench.paths import check_output_file
    from gnnbench.results.store import export_rows_csv

    if args.csv and args.csv != "-":
        check_output_file(args.csv, "--csv")  # before reading anything
    rows = run(args.results, system=args.system, model=args.model, dataset=args.dataset)
    if args.csv:
        if args.csv == "-":
            export_rows_csv(sys.stdout, rows)
        else:
            n = export_rows_csv(args.csv, rows)
            print(f"wrote {n} rows to {args.csv}")
        return 0
    if args.json:
        print_json(rows)
        return 0
    print(f"{'id':>4}  {'status':<7} {'system':<12} {'model':<5} {'framework':<10} {'epoch ms':>9} {'test acc':>8}  dataset")
    for r in rows:
        ms = f"{r['epoch_time_median_s'] * 1e3:.2f}" if r.get("epoch_time_median_s") is not None else "-"
        acc = f"{r['test_accuracy']:.3f}" if r.get("test_accuracy") is not None else "-"
        print(f"{r['id']:>4}  {r['status']:<7} {printable(r['system'] or '-'):<12} {r['model'] or '-':<5} "
              f"{r['framework'] or '-':<10} {ms:>9} {acc:>8}  {printable(r['dataset'])}")
    return 0
