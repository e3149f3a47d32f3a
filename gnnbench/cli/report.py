"""``gnnbench report``: a static HTML report of stored runs (opens from file://, no server)."""
from __future__ import annotations

from gnnbench.core.oracle import REFERENCE

from ._common import add_results_option

HELP = "write a static HTML report: comparison tables, figures, systems, provenance of every run"


def add_arguments(p) -> None:
    p.add_argument("--out", required=True, metavar="DIR", help="folder for index.html and figures/")
    p.add_argument("--baseline", default=REFERENCE, help="system the speedups are against (default: reference)")
    p.add_argument("--system", action="append", help="only these systems (repeatable)")
    p.add_argument("--model", action="append")
    p.add_argument("--dataset", action="append")
    p.add_argument("--include-unverified", action="store_true",
                   help="show speedups of systems that failed or never ran `gnnbench verify`")
    p.add_argument("--title", default="gnnbench report", help="page title (default: gnnbench report)")
    add_results_option(p)


def run(store_path=None, out_dir="report", baseline=REFERENCE, systems=None, models=None, datasets=None,
        include_unverified=False, title="gnnbench report"):
    """Builds the report and returns the path of its ``index.html``."""
    from gnnbench.results.frame import load_results
    from gnnbench.results.report import build_report
    from gnnbench.results.store import default_results_path

    path = store_path or default_results_path()
    filters = {k: v for k, v in (("system", systems), ("model", models), ("dataset", datasets)) if v}
    return build_report(load_results(path, **filters), out_dir, baseline=baseline,
                        include_unverified=include_unverified, title=title, source=str(path))


def main(args) -> int:
    from gnnbench.paths import check_output_dir

    check_output_dir(args.out, "--out folder")  # before reading anything: a bad folder is a line, not a traceback
    index = run(args.results, args.out, args.baseline, args.system, args.model, args.dataset,
                args.include_unverified, args.title)
    print(index.resolve().as_uri())
    return 0
