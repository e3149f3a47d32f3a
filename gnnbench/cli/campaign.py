"""``gnnbench campaign run|render NAME``: a campaign file's runs, committed rows and declared tables."""
from __future__ import annotations

HELP = "run a campaign of campaigns/ and render the tables it declares, or only render them from committed rows"
EPILOG = """NAME is a campaign file's stem under campaigns/ (`gnnbench campaign render scaling` reads
campaigns/scaling.toml). `run` runs (or resumes) the campaign through the sweep, writes every stored process
to results/rows/NAME.jsonl.gz and renders; `render` renders from those committed rows alone. Both then
rewrite the index of published results (results/README.md and README's figures table), which `index`
rewrites alone. A campaign with `decide = true` runs each comparison against its baseline in paired rounds
until decided or out of its budget, prints a verdict line for each, skips those the store already answers
and commits the processes of each answer (Note [resuming decided comparisons] in gnnbench/campaign/publish.py)."""


def add_arguments(p) -> None:
    p.add_argument("action", choices=("run", "render", "index"),
                   help="run (then render), render only, or only rewrite the index of published results")
    p.add_argument("name", metavar="NAME", nargs="?", help="a campaign file's stem under campaigns/")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="processes per configuration (default: the campaign's)")
    p.add_argument("--results", metavar="PATH", default=None,
                   help="the SQLite store `run` measures into (default: the campaign's `results`)")
    p.add_argument("--dry-run", action="store_true", help="`run`: print what would run; run nothing")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def _printed(rendered, root) -> None:
    for path in rendered.written:
        print(f"wrote {path.relative_to(root)}")
    for path in rendered.unchanged:
        print(f"unchanged {path.relative_to(root)}")


def _indexed(root) -> None:
    from gnnbench.campaign.manifest import write_index

    for path in write_index(root):
        print(f"wrote {path.relative_to(root)}")


def main(args) -> int:
    from gnnbench.campaign.publish import ROOT, campaign_names, load, render_campaign, run_campaign
    from gnnbench.errors import UserError

    if args.action == "index":
        _indexed(ROOT)
        return 0
    if args.name is None:
        raise UserError(f"{args.action} needs NAME, one of: {', '.join(campaign_names())}")
    if args.action == "render":
        _printed(render_campaign(args.name), ROOT)
        _indexed(ROOT)
        return 0
    if args.rounds is not None and args.rounds < 1:
        raise UserError(f"--rounds must be at least 1 (got {args.rounds})")
    campaign, _ = load(args.name)  # an unknown name or a bad file is one line before anything starts
    store = args.results or campaign.results or f"results/{args.name}.sqlite"
    if campaign.decide:
        return _main_decided(args, store)
    from .sweep import run as sweep_with_progress, summary

    report, rendered = run_campaign(
        args.name, rounds=args.rounds, results=args.results, dry_run=args.dry_run,
        sweep=lambda campaign, dry_run: sweep_with_progress(campaign, progress=not args.no_progress,
                                                            dry_run=dry_run))
    print(summary(report, str(store)))
    if rendered is not None:
        _printed(rendered, ROOT)
        _indexed(ROOT)
    return 1 if report.failures else 0


def _main_decided(args, store: str) -> int:
    """``decide = true``: a verdict line per comparison as it is decided, then what ran and what was stored
    (Note [deciding campaigns] in gnnbench/run/ab.py)."""
    import sys

    from gnnbench.campaign.publish import ROOT, run_campaign
    from gnnbench.progress import progress

    from .ab import unverified_warning, verdict_line
    from .run import failure_lines

    with progress(None, f"campaign {args.name}", plain_steps=not args.no_progress) as bar:
        def on_result(result) -> None:
            if bar.live:  # above the bar
                bar.log(verdict_line(result))
            else:
                print(verdict_line(result), flush=True)

        report, rendered = run_campaign(
            args.name, results=args.results, dry_run=args.dry_run, rounds=args.rounds, on_result=on_result,
            on_round=lambda i, r: bar.describe(f"{r.system} against {r.baseline}: round {i + 1}"))
    print(decided_summary(report, store))
    for result in report.ran:
        for row in result.failed:
            for line in failure_lines(row, store):
                print(line, file=sys.stderr)
        if unverified_warning(result):
            print(unverified_warning(result), file=sys.stderr)
    if rendered is not None:
        _printed(rendered, ROOT)
        _indexed(ROOT)
    return 1 if report.failures else 0


def decided_summary(report, store: str) -> str:
    """What a deciding campaign's run did: the comparisons already answered (their verdict lines, rebuilt from
    the store), and what ran or would run."""
    lines = [f"campaign '{report.campaign}': {report.comparisons} comparison{'s' * (report.comparisons != 1)}; "
             f"{len(report.stored)} already answered in the store"
             + (f"; would decide {len(report.todo)}" if report.dry_run else f"; ran {len(report.ran)}")]
    lines += [f"  already answered: {session.line()}" for session in report.stored]
    if report.dry_run:
        lines += [f"  would decide {a.system} against {b.system}: {a.model} on {a.dataset} {a.framework} "
                  f"seed={a.seed}" for a, b in report.todo]
    for saved, error in report.unsaved:
        lines.append(f"could not store a row ({error}); it is saved in {saved}")
    if not report.dry_run:
        lines.append(f"results in {store}; see `gnnbench compare --results {store}`")
    return "\n".join(lines)
