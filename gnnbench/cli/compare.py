"""``gnnbench compare``: stored runs pivoted by dataset and model, with speedups and their confidence."""
from __future__ import annotations

import sys

from ._common import add_results_option, open_store

HELP = "compare stored runs: median epoch time, speedup with 95% CI, memory, accuracy, correctness"


def add_arguments(p) -> None:
    p.add_argument("--baseline", default="reference", help="system the speedups are against (default: reference)")
    p.add_argument("--format", default="text", choices=("text", "markdown", "csv", "html"))
    p.add_argument("--system", action="append", help="only these systems (repeatable)")
    p.add_argument("--model", action="append")
    p.add_argument("--dataset", action="append")
    p.add_argument("--include-unverified", action="store_true",
                   help="show speedups of systems that failed or never ran `gnnbench verify`")
    add_results_option(p)


def run(store_path=None, baseline="reference", systems=None, models=None, datasets=None,
        include_unverified=False):
    from gnnbench.compare import compare
    from gnnbench.verify_status import with_current_status
    from gnnbench.errors import UserError

    with open_store(store_path) as db:
        filters = {k: v for k, v in (("system", systems), ("model", models), ("dataset", datasets)) if v}
        rows = with_current_status(db, db.rows(**filters))   # Note [status by build hash]
    if not rows:
        raise UserError("no stored runs match; run `gnnbench run` or `gnnbench sweep` first")
    return compare(rows, baseline=baseline, include_unverified=include_unverified)


def main(args) -> int:
    result = run(args.results, args.baseline, args.system, args.model, args.dataset, args.include_unverified)
    text = result.render(args.format, warnings=False)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 1 if result.regressions else 0
