"""``gnnbench compare --by build`` and ``--baseline-results``: builds of a system, or two stores, side by side."""
from __future__ import annotations

import sys

from gnnbench.errors import UserError

from ._common import strict_status


def add_arguments(p) -> None:
    p.add_argument("--by", choices=("system", "build"), default="system",
                   help="system: every system against --baseline (default); build: every stored build "
                        "(system_hash) of one --system, oldest first")
    p.add_argument("--baseline-build", metavar="PREFIX",
                   help="with --by build: the build the speedups are against, a system_hash or history commit "
                        "prefix (default: the oldest build)")
    p.add_argument("--baseline-results", metavar="OTHER.sqlite",
                   help="compare each system with the same system in another results database")


def run(store_path=None, by="system", systems=None, models=None, datasets=None, baseline_build=None,
        baseline_results=None):
    """The :class:`~gnnbench.results.by_build.BuildComparison` the flags describe."""
    from gnnbench.results.by_build import compare_builds, compare_stores
    from gnnbench.results.frame import load_results

    filters = {k: v for k, v in (("system", systems), ("model", models), ("dataset", datasets)) if v}
    if by == "build":
        if baseline_results:
            raise UserError("--by build compares the builds inside one store; drop --baseline-results, or "
                            "drop --by build to compare two stores")
        if not systems or len(systems) != 1:
            raise UserError(f"--by build needs exactly one --system (got {len(systems or [])})")
        rows = load_results(store_path, **filters)
        if rows.empty:
            raise UserError(f"no stored runs of system {systems[0]!r} match; run `gnnbench run` or "
                            f"`gnnbench history` first")
        return compare_builds(rows, systems[0], baseline_build)
    if baseline_build:
        raise UserError("--baseline-build needs --by build")
    rows, base = load_results(store_path, **filters), load_results(baseline_results, **filters)
    if rows.empty or base.empty:
        which = baseline_results if base.empty else (store_path or "the results database")
        raise UserError(f"no stored runs match in {which}")
    return compare_stores(rows, base)


def main(args) -> int:
    from gnnbench.text import printable

    result = run(args.results, args.by, args.system, args.model, args.dataset, args.baseline_build,
                 args.baseline_results)
    if args.format == "text":
        from gnnbench.results.tables import print_table

        print_table(result.table())
    else:
        sys.stdout.write(result.render(args.format))
    for warning in result.warnings:
        print(f"warning: {printable(warning)}", file=sys.stderr)
    return strict_status(args.strict, result)
