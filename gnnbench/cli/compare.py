"""``gnnbench compare``: stored runs pivoted by dataset and model, with speedups and their confidence."""
from __future__ import annotations

import sys

from gnnbench.core.oracle import REFERENCE

from ._common import add_results_option, strict_status

HELP = ("compare stored runs, every run of a configuration pooled as one process: median epoch time, speedup "
        "with 95% CI, memory, accuracy, correctness")
EPILOG = """exit status:
  0  the table was printed (also when some rows failed, crashed or were skipped: they are shown as such)
  1  with --strict only: a result is marked + (significantly slower than the baseline) or ! (its runs
     did not succeed: failed, crashed, oom, timeout), or a speedup claims no significance because a
     figure is unstable (one process, too few, too spread, a busy machine: the CI cell says why;
     Note [between-process statistics] in gnnbench/core/statistics.py): a gate that cannot see fails
  2  bad input: an unknown flag, no results database, no stored runs match"""


def add_arguments(p) -> None:
    p.add_argument("--baseline", help="system the speedups are against (default: reference)")
    p.add_argument("--format", default="text", choices=("text", "markdown", "csv", "html"))
    p.add_argument("--metric", default="epoch-time", choices=("epoch-time", "time-to-accuracy"),
                   help="epoch-time: median epoch time over processes; time-to-accuracy: time to the target "
                        "validation accuracy of runs made with --target-accuracy, over seeds (Note [time-to-accuracy "
                        "marks]) (default: epoch-time)")
    p.add_argument("--profile", action="store_true",
                   help="show where each system's epoch goes instead, side by side: the latest run of each made "
                        "with `gnnbench run --profile`, its costliest operators per phase (Note [profiled epochs])")
    p.add_argument("--system", action="append", help="only these systems (repeatable)")
    p.add_argument("--model", action="append")
    p.add_argument("--dataset", action="append")
    p.add_argument("--include-unverified", action="store_true",
                   help="show speedups of systems that failed or never ran `gnnbench verify`")
    p.add_argument("--strict", action="store_true",
                   help="exit with status 1 when a selected run did not succeed, a system regressed, or a "
                        "speedup is unclaimed because a figure is unstable (for CI; default: exit 0 whenever the "
                        "table is printed)")
    add_results_option(p)
    from ._by_build import add_arguments as add_build_arguments

    add_build_arguments(p)  # --by build, --baseline-build, --baseline-results (gnnbench/cli/_by_build.py)


def run(store_path=None, baseline=None, systems=None, models=None, datasets=None,
        include_unverified=False):
    from gnnbench.results.compare import compare
    from gnnbench.errors import UserError
    from gnnbench.results.frame import load_results

    filters = {k: v for k, v in (("system", systems), ("model", models), ("dataset", datasets)) if v}
    rows = load_results(store_path, **filters)  # verification joined by build hash (gnnbench/results/frame.py)
    if rows.empty:
        raise UserError("no stored runs match; run `gnnbench run` or `gnnbench sweep` first")
    present = sorted(set(rows["system"]))
    if baseline is not None and baseline not in present and (not systems or baseline in systems):
        # a store without reference runs compares without speedups; a named baseline must exist
        raise UserError(f"--baseline {baseline} has no stored runs; systems present: {', '.join(present)}")
    return compare(rows, baseline=REFERENCE if baseline is None else baseline, include_unverified=include_unverified)


def main(args) -> int:
    from gnnbench.text import printable

    if args.by == "build" or args.baseline_results or args.baseline_build:
        from ._by_build import main as by_build

        return by_build(args)

    if args.profile:
        return _profiles(args)
    if args.metric == "time-to-accuracy":
        return _time_to_accuracy(args)
    result = run(args.results, args.baseline, args.system, args.model, args.dataset, args.include_unverified)
    if args.format == "text":  # rich on a terminal, aligned plain text in a pipe
        from gnnbench.results.tables import print_table

        print_table(result.table(warnings=False))
    else:
        sys.stdout.write(result.render(args.format, warnings=False))
    for warning in result.warnings:
        print(f"warning: {printable(warning)}", file=sys.stderr)
    return strict_status(args.strict, result)


def _time_to_accuracy(args) -> int:
    """``--metric time-to-accuracy``: the runs made with a target, over seeds."""
    from gnnbench.errors import UserError
    from gnnbench.results.frame import load_results
    from gnnbench.results.time_to_accuracy import compare_time_to_accuracy

    filters = {k: v for k, v in (("system", args.system), ("model", args.model), ("dataset", args.dataset)) if v}
    rows = load_results(args.results, **filters)
    result = compare_time_to_accuracy(rows, baseline=args.baseline or REFERENCE,
                                      include_unverified=args.include_unverified)
    if not result.results:
        raise UserError("no stored run was made with --target-accuracy; run `gnnbench run ... --target-accuracy A` "
                        "or the campaign campaigns/time_to_accuracy.toml first")
    present = sorted({r.system for r in result.results})
    if args.baseline is not None and args.baseline not in present:
        raise UserError(f"--baseline {args.baseline} has no stored runs with --target-accuracy; systems present: "
                        f"{', '.join(present)}")
    if args.format == "text":
        from gnnbench.results.tables import print_table

        print_table(result.table())
    else:
        sys.stdout.write(result.render(args.format))
    if args.strict and result.regressions:
        print(f"gnnbench compare: --strict: {len(result.regressions)} result(s) later (+), failed (!), short of "
              "the target (n) or converging suspiciously early (c)", file=sys.stderr)
        return 1
    return 0


def _profiles(args) -> int:
    """``--profile``: the latest profiled run of each system, side by side, a table per group."""
    from gnnbench.errors import UserError
    from gnnbench.results.compare import compare_profiles
    from gnnbench.results.frame import load_results

    if args.metric != "epoch-time":
        raise UserError("--profile shows where an epoch goes; drop --metric")
    filters = {k: v for k, v in (("system", args.system), ("model", args.model), ("dataset", args.dataset)) if v}
    rows = load_results(args.results, **filters)
    tables = compare_profiles(rows, baseline=args.baseline or REFERENCE) if not rows.empty else []
    if not tables:
        raise UserError("no stored run was made with --profile; run `gnnbench run ... --profile` first")
    if args.format == "text":
        from gnnbench.results.tables import print_table

        for table in tables:
            print_table(table)
    else:
        sys.stdout.write("\n".join(table.render(args.format) for table in tables))
    return 0
