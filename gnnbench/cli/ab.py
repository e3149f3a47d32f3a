"""``gnnbench ab``: is this system faster than that one here? Paired rounds until a sequential test decides.

Rounds of ABBA processes (Note [paired rounds] in
:mod:`gnnbench.core.sequential`) run until the sequential test decides
faster, slower or the same (Note [sequential test]) or the budget is spent
(undecided). Every process is stored as a row, paired through ``extra.ab``
(Note [paired rows] in :mod:`gnnbench.results.paired`), so ``compare`` pools
them and the verdict can be rebuilt from the store.

The rounds run in :func:`gnnbench.run.ab.run_paired`; this command renders them.
"""
from __future__ import annotations

import sys

from gnnbench.core.sequential import THRESHOLD
from gnnbench.errors import UserError
from gnnbench.results.paired import duration, ratio_text
from gnnbench.results.paired import verdict_line as paired_line
from gnnbench.run.ab import BUDGET, PROCESSES, ROUND_RUNNERS, AbResult, parse_budget, parse_threshold

from ._common import add_results_option, open_store, print_json

HELP = "is one system faster than another here? paired ABBA rounds until a sequential test decides"
EPILOG = """The verdict line always holds one of the words faster, slower, same or undecided
(Note [sequential test] in gnnbench/core/sequential.py).

exit status:
  0  a verdict was printed (undecided too: out of budget)
  1  a process did not succeed; the rounds before it are judged and every row is stored
  2  bad input"""



def add_arguments(p) -> None:
    from gnnbench.run.config import add_config_flags

    add_config_flags(p)  # the flags `run` takes (Note [one run configuration]); --system is the one judged
    p.add_argument("--baseline", required=True, metavar="SYSTEM", help="the system --system is compared with")
    p.add_argument("--budget", default=BUDGET, metavar="TIME",
                   help=f"stop undecided when the next round would pass this much time: 90s, 10m, 1h "
                        f"(default: {BUDGET})")
    p.add_argument("--threshold", default=f"{THRESHOLD:.0%}", metavar="FRACTION",
                   help="the smallest change called faster or slower, as 5%% or 0.05 (default: %(default)s)")
    p.add_argument("--processes", choices=("fresh", "warm"), default=PROCESSES,
                   help="warm: forked from a parent started once a round, about 1 s a process (Note [cheap "
                        "processes] in gnnbench/run/warm.py); fresh: a worker process started for each "
                        "measurement, as `run` does (default: warm)")
    p.add_argument("--no-store", action="store_true", help="do not write the rows to the results store")
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    add_results_option(p)


def run(system_config, baseline_config, *, budget_s: float, threshold: float = THRESHOLD, runner=None,
        store_path: str | None = None, store: bool = True, on_round=None) -> AbResult:
    """:func:`~gnnbench.run.ab.run_paired` with each row stored as it arrives (Note [store first]); the
    result's rows carry their store ids."""
    from gnnbench.run.ab import fresh_round, run_paired

    from .run import _store

    db = open_store(store_path, create=True) if store else None
    try:
        return run_paired(system_config, baseline_config, budget_s=budget_s, threshold=threshold,
                          runner=runner or fresh_round, on_row=None if db is None else lambda row: _store(db, row),
                          on_round=on_round)
    finally:
        if db is not None:
            db.close()


# ---------------------------------------------------------------- rendering

def verdict_line(result: AbResult) -> str:
    """The one line ``gnnbench ab`` prints; it always holds faster, slower, same or undecided (the same line a
    stored comparison gives: :func:`gnnbench.results.paired.verdict_line`)."""
    return paired_line(result.system, result.baseline, result.verdict, processes=len(result.rows),
                       elapsed_s=result.elapsed_s, budget_s=result.budget_s, stopped=result.stopped)


def _progress_text(index: int, result: AbResult) -> str:
    return (f"round {index + 1}: {result.system} {ratio_text(result.verdict, result.baseline)} so far, "
            f"{duration(result.elapsed_s)} of {duration(result.budget_s)}")


def main(args) -> int:
    from gnnbench.progress import progress
    from gnnbench.run.config import config_values_from_flags, make_config

    from .run import failure_lines, validate

    budget_s = parse_budget(args.budget)
    threshold = parse_threshold(args.threshold)
    values = config_values_from_flags(args)
    if args.baseline == values.get("system"):
        raise UserError(f"--system and --baseline both name {args.baseline}; name two systems to compare")
    system_config = make_config(values)
    baseline_config = make_config({**values, "system": args.baseline})
    validate(system_config)
    validate(baseline_config)
    with progress(None, f"{system_config.system} against {baseline_config.system}", plain_steps=True) as bar:
        def on_round(index: int, result: AbResult) -> None:
            bar.advance(description=_progress_text(index, result))

        result = run(system_config, baseline_config, budget_s=budget_s, threshold=threshold,
                     runner=ROUND_RUNNERS[args.processes], store_path=args.results, store=not args.no_store,
                     on_round=on_round)
    if args.json:
        print_json({**result.as_dict(), "line": verdict_line(result)})
    else:
        print(verdict_line(result))
    for row in result.failed:
        for line in failure_lines(row, args.results):
            print(line, file=sys.stderr)
    warning = unverified_warning(result)
    if warning:
        print(warning, file=sys.stderr)
    return 1 if result.stopped == "failed" else 0


def unverified_warning(result: AbResult) -> str | None:
    """A line when the judged system's stored rows say it did not pass ``gnnbench verify`` (correct before
    fast: a verdict on a wrong kernel is no result), as ``gnnbench run`` warns; None otherwise."""
    status = next((row.get("verified") for row in result.rows
                   if row.get("system") == result.system and row.get("verified")), None)
    if status is None or status == "passed":
        return None
    return (f"warning: {result.system} is {status}: run `gnnbench verify --system {result.system}` before "
            "trusting this verdict")
