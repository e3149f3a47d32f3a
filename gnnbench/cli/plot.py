"""``gnnbench plot``: PNG and SVG figures of stored runs."""
from __future__ import annotations

import sys

from ._common import add_results_option

HELP = "draw epoch time, memory and scaling figures (PNG and SVG) from stored runs"


def add_arguments(p) -> None:
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the figures")
    p.add_argument("--system", action="append")
    p.add_argument("--dataset", action="append")
    add_results_option(p)


def main(args) -> int:
    from gnnbench.results.frame import load_results
    from gnnbench.paths import check_output_dir
    from gnnbench.results.plot import plot

    check_output_dir(args.out, "--out folder")  # before reading anything
    filters = {k: v for k, v in (("system", args.system), ("dataset", args.dataset)) if v}
    rows = load_results(args.results, **filters)
    paths = plot(rows, args.out)
    for path in paths:
        print(path)
    if not any(path.stem == "scaling" for path in paths):
        from gnnbench.results.history_figure import single_size_note

        print(single_size_note(rows) or "Epoch time against graph size is not drawn: the runs drawn have one "
              "graph size.", file=sys.stderr)
    return 0
