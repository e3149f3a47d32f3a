"""``gnnbench sweep``: run a matrix of configurations, each in its own process, and store every outcome."""
from __future__ import annotations

import sys
from dataclasses import replace

from gnnbench.errors import UserError
from gnnbench.results.row import Extra
from gnnbench.text import printable

from ._common import add_results_option, print_json

HELP = "run systems x models x datasets x frameworks x seeds (or a TOML campaign), resumably, with failures recorded"

def add_arguments(p) -> None:
    from gnnbench.run.config import add_config_flags

    p.add_argument("--campaign", metavar="TOML", help="campaign file (see campaigns/); replaces the matrix flags")
    add_config_flags(p, sweep=True)  # derived from RunConfig (Note [campaign keys] in gnnbench.run.sweep)
    p.add_argument("--rounds", metavar="N", help="processes per configuration, each its own stored row, interleaved "
                   "round by round with the systems innermost (default: 1, or the campaign's; Note [repetitions])")
    p.add_argument("--repeat", metavar="N", help="the same as --rounds N, as on `gnnbench run`")
    p.add_argument("--rerun", action="store_true", default=None,
                   help="run configurations again even when already stored with the same provenance")
    p.add_argument("--retry-failed", action="store_true", default=None,
                   help="run again the stored configurations that did not succeed")
    p.add_argument("--executor", choices=("local", "ray"), help="where runs go (default: local)")
    p.add_argument("--ray-address", metavar="ADDR", help="Ray cluster for --executor ray (default: $RAY_ADDRESS)")
    p.add_argument("--name", help="campaign name stored with each row (default: the TOML file's stem, or 'sweep')")
    p.add_argument("--baseline", metavar="SYSTEM", help="with --decide: the system every configuration is decided "
                   "against (campaign key 'baseline')")
    p.add_argument("--decide", action="store_true", default=None,
                   help="run each configuration in paired rounds against --baseline until a sequential test "
                        "decides, as `gnnbench ab` (Note [deciding campaigns] in gnnbench/run/ab.py)")
    p.add_argument("--budget", metavar="TIME", help="with --decide: each comparison's time budget (default: 10m)")
    p.add_argument("--threshold", metavar="FRACTION", help="with --decide: the smallest change called faster or "
                   "slower (default: 5%%)")
    p.add_argument("--processes", choices=("warm", "fresh"), help="with --decide: how each process starts, as "
                   "`gnnbench ab --processes` (default: warm, or the campaign's 'processes')")
    p.add_argument("--dry-run", action="store_true", help="print what would run; run and store nothing")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    add_results_option(p)


def campaign_from_args(args):
    """The :class:`~gnnbench.run.sweep.Campaign` the flags describe (file first, run-control flags on top)."""
    from gnnbench.run.config import config_fields, config_values_from_flags
    from gnnbench.run.sweep import campaign_from_mapping, load_campaign, with_rounds

    fields = config_fields()
    given = {(fields[name].sweep or fields[name].key): value for name, value in config_values_from_flags(args).items()}
    # one count, two names, and the invocation's to choose, a campaign's too (Note [repetitions])
    count = {key: getattr(args, key) for key in ("rounds", "repeat") if getattr(args, key) is not None}
    if args.campaign:
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given).replace("--options", "--option")
            raise UserError(f"{flags}: the matrix comes from {args.campaign}; edit the file or drop --campaign")
        campaign = with_rounds(load_campaign(args.campaign), count)
    else:
        campaign = campaign_from_mapping({**given, **count}, "command line", flags=True)
    overrides = {k: v for k, v in (("name", args.name), ("results", args.results), ("executor", args.executor),
                                   ("ray_address", args.ray_address), ("rerun", args.rerun),
                                   ("retry_failed", args.retry_failed), ("baseline", args.baseline),
                                   ("decide", args.decide), ("processes", args.processes)) if v is not None}
    if args.budget is not None or args.threshold is not None:
        from gnnbench.run.ab import parse_budget, parse_threshold

        if args.budget is not None:
            overrides["budget"] = parse_budget(args.budget)
        if args.threshold is not None:
            overrides["threshold"] = parse_threshold(args.threshold)
    campaign = replace(campaign, **overrides)
    if campaign.decide and not campaign.baseline:
        raise UserError("--decide needs --baseline SYSTEM (or 'baseline' in the campaign) to decide against")
    if args.processes is not None and not campaign.decide:
        raise UserError("--processes applies with --decide; a sweep starts a fresh worker for each run")
    return campaign


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class _SweepProgress:
    """Sweep events drawn through :func:`gnnbench.progress.progress`.

    On a terminal: a rich bar naming the run in progress, with unsuccessful runs
    and other sweeps' work logged above it. Elsewhere (a log, a pipe): one plain
    line when a run starts and one when it ends, each with the sweep's own
    estimate of the time left (:class:`~gnnbench.run.sweep.SweepEvent`).
    """

    def __init__(self, bar):
        self.bar = bar

    def __call__(self, event) -> None:
        bar = self.bar
        counter = f"[{event.done}/{event.total}]"
        left = f"{_duration(event.eta_s)} left" if event.eta_s is not None else "time left unknown yet"
        what = printable(event.task.describe())
        if event.kind == "finish":
            row = event.row
            status = row.get("status")
            detail = (f"{row['epoch_time_median_s'] * 1e3:.2f} ms/epoch" if status == "ok"
                      and row.get("epoch_time_median_s") is not None else printable(row.get("error") or ""))
            bar.update(event.done - 1, event.total)
            if bar.live:
                if status != "ok":  # failures stay on screen above the bar
                    bar.log(f"{counter} {status} {what}: {detail}")
                bar.advance(description="done: " + what)
            else:
                bar.advance(description=f"{status} {what}: {detail} ({left})")  # "[done/total] ..."
        elif event.kind in ("meanwhile", "claimed"):
            bar.update(event.done, event.total)
            bar.log(f"{counter} " + ("already stored by another sweep: " if event.kind == "meanwhile"
                                     else "being run by another sweep: ") + what)
        elif bar.live:
            bar.update(event.done, event.total)
            bar.describe(what)
        else:
            bar.log(f"{counter} running {what} ({left})")


def run(campaign, progress: bool = True, dry_run: bool = False, stream=None):
    """Run ``campaign`` with progress on ``stream`` (default: stderr); return the
    :class:`~gnnbench.run.sweep.SweepReport`."""
    from gnnbench.progress import progress as progress_display
    from gnnbench.run.sweep import run_sweep

    if not progress or dry_run:
        return run_sweep(campaign, dry_run=dry_run)
    with progress_display(None, "sweep", stream=stream, plain_steps=True) as bar:
        executor = None
        if bar.live and campaign.executor == "local":  # the bar also names the current run's epoch
            from gnnbench.run.executors import LocalExecutor

            from ._run_progress import RunBar

            executor = LocalExecutor(run_events=lambda task: RunBar(bar, task.describe(), count=False))
        return run_sweep(campaign, executor=executor, on_event=_SweepProgress(bar), dry_run=dry_run)


def summary(report, results_path: str) -> str:
    counts = report.counts()
    ran = sum(n for s, n in counts.items() if s != "skipped")
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s != "skipped")
    lines = [f"sweep '{report.campaign}': {report.planned} configurations; {report.already_stored} already stored"
             + (f", {report.meanwhile} stored meanwhile by another sweep" if report.meanwhile else "")
             + (f", {report.claimed_elsewhere} left to another sweep running them" if report.claimed_elsewhere
                else "")
             + (f"; would run {len(report.todo)}" if report.dry_run else
                f"; ran {ran}" + (f" ({parts})" if parts else "") + f" in {_duration(report.elapsed_s)}")
             + (f"; {counts.get('skipped', 0)} newly skipped as unavailable" if counts.get("skipped") else "")
             + (f"; {report.known_skips} still unavailable" if report.known_skips else "")]
    if report.dry_run:
        lines += [f"  {t.describe()}" for t in report.todo]
        if report.unavailable:
            lines.append(f"would skip {len(report.unavailable)} as unavailable here:")
            lines += [f"  {t.describe()}: {t.unavailable}" for t in report.unavailable]
    failures = [r for r in report.rows if r.get("status") not in ("ok",)]
    if failures:
        from gnnbench.results.tables import Table

        lines.append("not successful:")
        table = Table(["status", "run", "error"],
                      [[r["status"], printable(f"{r['system']} {r['model']} {r['dataset']} {r['framework']} "
                                               f"seed={r['seed']}"), printable(r.get("error"))] for r in failures])
        lines += ["  " + line for line in table.render("text").splitlines()]
        for r in failures:
            where = Extra.of(r).stderr_path
            if where and r.get("status") in ("crashed", "failed", "oom", "timeout"):
                lines.append(f"  whole stderr of run {r.get('id')}: {where}")
    for saved, error in report.unsaved:
        lines.append(f"could not store a row ({error}); it is saved in {saved}")
    if not report.dry_run:
        lines.append(f"results in {results_path}; see `gnnbench compare --results {results_path}`")
    return "\n".join(lines)


def _main_decided(args, campaign) -> int:
    """``decide = true``: a verdict line per configuration as it is decided (Note [deciding campaigns])."""
    from gnnbench.progress import progress
    from gnnbench.run.ab import ROUND_RUNNERS, comparisons, decide_campaign

    from ._common import open_store
    from .ab import unverified_warning, verdict_line
    from .run import _store, failure_lines

    pairs = comparisons(campaign)
    if args.dry_run:
        for system_config, baseline_config in pairs:
            print(f"would decide {system_config.system} against {baseline_config.system}: {system_config.model} on "
                  f"{system_config.dataset} {system_config.framework} seed={system_config.seed}")
        return 0
    if campaign.executor != "local":
        raise UserError("decide = true runs its paired rounds on this machine; drop --executor ray")
    results = []
    with open_store(campaign.results, create=True) as db, \
            progress(len(pairs), f"sweep '{campaign.name}'", plain_steps=not args.no_progress) as bar:
        def on_result(result) -> None:
            results.append(result)
            bar.advance(description=f"{result.system} against {result.baseline}: {result.verdict.word}")
            if args.json:
                return
            if bar.live:  # above the bar
                bar.log(verdict_line(result))
            else:
                print(verdict_line(result), flush=True)

        decide_campaign(campaign, runner=ROUND_RUNNERS[campaign.processes], on_row=lambda row: _store(db, row),
                        on_result=on_result,
                        on_round=lambda i, r: bar.describe(f"{r.system} against {r.baseline}: round {i + 1}"))
    if args.json:
        print_json([{**r.as_dict(), "line": verdict_line(r)} for r in results])
    for result in results:
        for row in result.failed:
            for line in failure_lines(row, campaign.results):
                print(line, file=sys.stderr)
        if unverified_warning(result):
            print(unverified_warning(result), file=sys.stderr)
    return 1 if any(r.stopped == "failed" for r in results) else 0


def main(args) -> int:
    from gnnbench.results.store import default_results_path

    campaign = campaign_from_args(args)
    if campaign.decide:
        return _main_decided(args, campaign)
    report = run(campaign, progress=not args.no_progress and not args.json, dry_run=args.dry_run)
    if args.json:
        print_json(report.as_dict())
    else:
        print(summary(report, str(campaign.results or default_results_path())))
    return 1 if report.failures else 0
