"""``gnnbench regressions``: where each benchmark's median stepped beyond noise, build to build."""
from __future__ import annotations

from ._common import add_results_option, print_json

HELP = "find the builds (commits) where a benchmark's median epoch time stepped beyond noise, with a 95% CI"
EPILOG = """exit status:
  0  the steps were printed (none is also 0)
  1  with --strict only: a regression, a newly failing build, or a step beyond compare's factor that
     claims no significance (~: one process or an unstable figure; Note [step test]) was found
  2  bad input: no results database, a store of another schema"""


def add_arguments(p) -> None:
    p.add_argument("--system", action="append", help="only these systems (repeatable)")
    p.add_argument("--model", action="append")
    p.add_argument("--dataset", action="append")
    p.add_argument("--improvements", action="store_true", help="also list significant speed-ups")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a regression, a failure or an unclaimed step (~) is found")
    p.add_argument("--json", action="store_true", help="print the steps as JSON")
    add_results_option(p)


def run(store_path=None, systems=None, models=None, datasets=None, improvements=False):
    from gnnbench.results.frame import load_results
    from gnnbench.results.regression import find_regressions

    filters = {k: v for k, v in (("system", systems), ("model", models), ("dataset", datasets)) if v}
    return find_regressions(load_results(store_path, **filters), improvements=improvements)


def main(args) -> int:
    from gnnbench.text import printable

    from gnnbench.results.regression import FAILING

    steps = run(args.results, args.system, args.model, args.dataset, args.improvements)
    if args.json:
        print_json([{"benchmark": s.name, "kind": s.kind, "at": s.where, "system_hash": s.build.system_hash,
                     "commit": s.build.commit, "change": s.change, "low": s.low, "high": s.high, "why": s.why}
                    for s in steps])
    else:
        for s in steps:
            print(printable(str(s)))
    return 1 if args.strict and any(s.kind in FAILING for s in steps) else 0
