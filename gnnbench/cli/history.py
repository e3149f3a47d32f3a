"""``gnnbench history A..B``: a campaign once per commit of a git range, each in its own clean worktree."""
from __future__ import annotations

import sys

from ._common import add_results_option, print_json

HELP = "run a campaign at every commit of a git range of a systems repository, into one store"
EPILOG = """Each commit is checked out with `git worktree add` into a temporary folder; its systems
(NAME/NAME.gnn under --systems-dir) go first on GNNBENCH_SYSTEMS_PATH and their glue is
generated there. Commits already measured with the same provenance are skipped; a commit
that fails stores failed rows and the walk goes on (Note [failing commits] in
gnnbench/run/history.py). Then `gnnbench compare --by build --system NAME` and
`gnnbench regressions` read the store.

exit status:
  0  every commit was walked (some may have stored failures)
  1  with --strict only: a regression, a failing commit, or a step that claims no significance
     (~: one process per commit, or an unstable figure; Note [step test]) was found
  2  bad input, nothing written: not a git range, uncommitted changes without --allow-dirty,
     a campaign that does not parse at some commit, a store that cannot be opened"""


def add_arguments(p) -> None:
    p.add_argument("range", metavar="A..B", help="the commits reachable from B and not from A, oldest first")
    p.add_argument("--campaign", metavar="TOML", required=True,
                   help="campaign file, as `gnnbench sweep --campaign` takes; one inside the repository is "
                        "read as each commit has it")
    p.add_argument("--repo", default=".", metavar="DIR", help="the systems repository (default: .)")
    p.add_argument("--systems-dir", default=".", metavar="DIR",
                   help="folder inside the repository holding NAME/NAME.gnn (default: its top)")
    p.add_argument("--allow-dirty", action="store_true", help="walk even with uncommitted changes")
    p.add_argument("--retry-failed", action="store_true",
                   help="try again the commits an earlier walk stored as failing")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a regression, a failing commit or an unclaimed step (~) is found")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    add_results_option(p)


def run(range_spec, campaign, repo=".", results=None, allow_dirty=False, systems_dir=".", retry_failed=False,
        stream=None):
    """Walk the range (progress lines on ``stream``) and return the :class:`~gnnbench.run.history.HistoryReport`."""
    from gnnbench.run.history import run_history
    from gnnbench.text import printable

    def progress(index, total, outcome):
        if stream is not None:
            print(f"[{index + 1}/{total}] {printable(outcome.describe())}", file=stream, flush=True)

    return run_history(range_spec, campaign, repo=repo, results=results, allow_dirty=allow_dirty,
                       systems_dir=systems_dir, retry_failed=retry_failed, on_commit=progress)


def main(args) -> int:
    from gnnbench.results.frame import load_results
    from gnnbench.results.regression import FAILING, find_regressions
    from gnnbench.text import printable

    report = run(args.range, args.campaign, args.repo, args.results, args.allow_dirty, args.systems_dir,
                 args.retry_failed, stream=None if args.json else sys.stderr)
    shas = {o.commit.sha for o in report.outcomes}
    frame = load_results(report.results)
    mine = [isinstance(e, dict) and (e.get("history") or {}).get("commit") in shas for e in frame["extra"]]
    steps = find_regressions(frame[mine]) if any(mine) else []
    if args.json:
        print_json({**report.as_dict(), "regressions": [str(s) for s in steps]})
    else:
        print(f"history {report.range}: {len(report.outcomes)} commits; results in {report.results}")
        for s in steps:
            print(printable(str(s)))
        if not steps:
            print("no regression beyond noise")
    return 1 if args.strict and any(s.kind in FAILING for s in steps) else 0
