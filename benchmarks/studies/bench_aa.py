"""The A/A benchmark: does ``compare`` claim differences that are not there, and see the one that is? (issue 42)

    python benchmarks/studies/bench_aa.py [--condition quiet|loaded] [--trials N] [--dry-run] [--render-only]
    python benchmarks/studies/bench_aa.py --decide [--condition quiet|loaded] [--trials N] [--budget 10m]
                                          [--processes warm]

The runs are the campaign ``campaigns/aa.toml``: GCN on one small R-MAT graph
with three systems of ``benchmarks/aa_systems`` (Note [A/A trials]), each run
its own process, interleaved round by round through ``gnnbench sweep``, stored
in one results store per condition. ``--condition loaded`` runs the same
campaign beside a load generator (``_common.load_generator``): a process that
keeps one core busy with a memory-bound loop (copies between two 64 MiB
arrays), pinned to a CPU the campaign's runs do not use, started by this
script and killed when it ends.

Note [A/A trials]
    A *trial* is :data:`~gnnbench.core.stability.MIN_PROCESSES` consecutive
    rounds of the campaign: that many processes of each system, the default a
    comparison asks for. Each trial is compared on its own, with the rows of
    its processes only, through :func:`gnnbench.results.compare.compare`, the
    function behind ``gnnbench compare``:

    * ``aa_two`` against ``aa_one`` (two identically built systems, the same
      configuration): a ``-`` or ``+`` mark is a *false positive*;
    * ``aa_slow`` (the same kernels plus a fixed amount of extra work) against
      ``aa_one``: a ``+`` mark, or a significant slowdown at any factor, is a
      *detection*; their share of the trials is the statistics' *power*.

    The slowdown ``aa_slow`` really has is stated beside it: the ratio of the
    medians of per-process medians over every process of the condition. The
    three systems compute ``mkl``'s results bit for bit, so the comparison
    includes them unverified (``include_unverified``): the point here is the
    statistics, not the kernels.

Note [A/A with the stopping rule]
    ``--decide`` judges the same three systems as ``gnnbench ab`` does
    (issue 54): a trial is two paired comparisons against ``aa_one``, one of
    ``aa_two`` and one of ``aa_slow``, each run in ABBA rounds until the
    sequential test decides or ``--budget`` is spent (Note [sequential test]
    in gnnbench/core/sequential.py), through :func:`gnnbench.cli.ab.run`, into
    ``results/aa_decide_{condition}.sqlite``. ``aa_two`` called faster or
    slower is a false positive; ``aa_slow`` called slower is a detection. The
    table gives the share of each, and the median and 90th percentile of the
    processes and minutes a comparison took, from its stored rows alone
    (Note [paired rows] in gnnbench/results/paired.py).

Writes results/studies/aa.{md,json}, both conditions in one table (a condition not
measured yet shows as such).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import (ROOT, Parser, Table, campaign, count, load_generator, measured_note, ok,  # noqa: E402
                     other_cpu, out_path, print_plan, provenance, put_on_systems_path, rows_load, run_script,
                     write_results)

CAMPAIGN = "aa"
SYSTEMS_DIR = ROOT / "benchmarks" / "aa_systems"
BASELINE, TWIN, SLOW = "aa_one", "aa_two", "aa_slow"
CONDITIONS = {"quiet": "nothing else started", "loaded": "beside a load generator keeping one core busy "
                                                        "(memory-bound copy loop)"}
#: campaigns/aa_length.toml's store: ``aa_one`` with short and long processes (Note [process length])
LENGTH_STORE = ROOT / "results" / "aa_length.sqlite"


def store_of(condition: str) -> Path:
    return ROOT / "results" / f"aa_{condition}.sqlite"


def round_of(row: Mapping[str, Any]) -> int | None:
    """The sweep round a row was run in (``extra.sweep.round``, kept by the sweep), or None."""
    extra = row.get("extra")
    sweep = extra.get("sweep") if isinstance(extra, Mapping) else None
    return sweep.get("round") if isinstance(sweep, Mapping) else None


def trials(rows: Sequence[Mapping[str, Any]], size: int) -> list[list[Mapping[str, Any]]]:
    """The rows grouped into trials of ``size`` consecutive rounds (Note [A/A trials]); a trial missing a
    round of some system (not run yet, or failed) is left out, so every trial compares ``size`` processes."""
    by_trial: dict[int, list[Mapping[str, Any]]] = {}
    for row in rows:
        r = round_of(row)
        if r is not None:
            by_trial.setdefault(r // size, []).append(row)
    complete = []
    for number in sorted(by_trial):
        trial = by_trial[number]
        if all(sum(1 for row in trial if row.get("system") == s and ok(row)) == size for s in (BASELINE, TWIN, SLOW)):
            complete.append(trial)
    return complete


def judge(trial: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One trial's verdicts: ``compare``'s result for the twin and for the slow system."""
    from gnnbench.results.compare import compare

    results = {r.system: r for r in compare(list(trial), baseline=BASELINE, include_unverified=True).results}
    twin, slow = results[TWIN], results[SLOW]
    return {"twin_mark": twin.mark, "twin_speedup": twin.speedup, "twin_significant": twin.significant,
            "twin_interval": _excludes_one(twin), "slow_mark": slow.mark, "slow_speedup": slow.speedup,
            "slow_significant": slow.significant, "slow_interval": _excludes_one(slow) and slow.speedup < 1,
            "slow_withheld": slow.withheld}


def _excludes_one(result) -> bool:
    """The speedup's interval lies wholly on one side of 1, whatever the stability flags say."""
    return result.ci_low is not None and (result.ci_high < 1 or result.ci_low > 1)


#: the instability reasons a withheld comparison's note gives (Note [between-process statistics]), as counted
_REASONS = {"processes needed": "processes, ", "epoch spread within processes": "epoch spread",
            "spread across processes": "across", "an outlier process": "from the median",
            "busy machine": "busy machine"}


def withheld_reasons(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How often each instability reason stood behind ``aa_slow``'s unmarked comparisons."""
    counts = dict.fromkeys(_REASONS, 0)
    for v in verdicts:
        if v["slow_mark"] != "+" and v.get("slow_withheld"):
            for name, words in _REASONS.items():
                counts[name] += words in v["slow_withheld"]
    return {k: n for k, n in counts.items() if n}


def true_slowdown(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """``aa_slow``'s median of per-process medians over ``aa_one``'s, every process of the condition."""
    import numpy as np

    from gnnbench.core.measurement import Measurement

    def centre(system: str) -> float | None:
        medians = [Measurement.from_row(r).median for r in rows if r.get("system") == system and ok(r)]
        return float(np.median(medians)) if medians else None

    base, slow = centre(BASELINE), centre(SLOW)
    return slow / base if base and slow else None


def summarise(condition: str, rows: Sequence[Mapping[str, Any]], size: int) -> dict[str, Any]:
    verdicts = [judge(t) for t in trials(rows, size)]
    n = len(verdicts)
    false = sum(v["twin_mark"] in ("-", "+") for v in verdicts)
    marked = sum(v["slow_mark"] == "+" for v in verdicts)
    significant = sum(bool(v["slow_significant"]) and (v["slow_speedup"] or 1) < 1 for v in verdicts)
    return {"condition": condition, "trials": n, "processes": size, "false_positives": false,
            "twin_intervals": sum(v["twin_interval"] for v in verdicts), "slow_marked": marked,
            "slow_significant": significant, "slow_intervals": sum(v["slow_interval"] for v in verdicts),
            "withheld": withheld_reasons(verdicts), "true_slowdown": true_slowdown(rows),
            "baseline_noise": baseline_noise(rows), "verdicts": verdicts}


def baseline_noise(rows: Sequence[Mapping[str, Any]]) -> dict[str, float] | None:
    """How noisy ``aa_one`` was over the whole condition: its processes' figure and the two spreads."""
    from gnnbench.core.measurement import Measurement
    from gnnbench.core.statistics import Processes

    measured = tuple(Measurement.from_row(r) for r in rows if r.get("system") == BASELINE and ok(r))
    if len(measured) < 2:
        return None
    p = Processes(measured)
    return {"processes": len(p), "median_s": p.median, "low_s": float(p.medians.min()),
            "high_s": float(p.medians.max()), "between_spread": p.between_spread, "within_spread": p.within_spread}


def process_lengths(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``aa_one``'s processes grouped by their epochs, shortest first: how many, the timed seconds of one, and
    the spreads across and within them.

    Note [process length]
        Is the spread across processes slow swings of a shared host, which
        a longer process would average away, or something each process keeps
        for its whole life (where its memory landed, which host core it
        shares)? ``campaigns/aa_length.toml`` answers it for the A/A
        configuration: 40 processes of 20 timed epochs and 40 of 200,
        interleaved. The answer decides whether precision is bought with
        longer processes or only with more of them.
    """
    from gnnbench.core.statistics import Processes

    by_epochs: dict[int, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("system") == BASELINE and ok(r):
            by_epochs.setdefault(int(r["epochs"]), []).append(r)
    out = []
    for epochs, group in sorted(by_epochs.items()):
        p = Processes.from_rows(group)
        timed = epochs - int(group[0].get("warmup") or 0)
        out.append({"epochs": timed, "processes": len(p), "median_s": p.median, "seconds": p.median * timed,
                    "between_spread": p.between_spread, "within_spread": p.within_spread})
    return out


def _lengths_section(lengths: Sequence[Mapping[str, Any]], measured: str | None) -> list[str]:
    if len(lengths) < 2:
        return []
    short, long = lengths[0], lengths[-1]
    verdict = (f"{long['epochs'] // short['epochs']}x the epochs leave the spread across processes where it was "
               f"({short['between_spread']:.1%}, then {long['between_spread']:.1%}): each process keeps its speed "
               "for its whole life, so precision is bought with more processes, not longer ones"
               if long["between_spread"] >= 0.8 * short["between_spread"] else
               f"{long['epochs'] // short['epochs']}x the epochs narrow the spread across processes from "
               f"{short['between_spread']:.1%} to {long['between_spread']:.1%}")
    cells = [[str(x["epochs"]), str(x["processes"]), f"{x['seconds']:.2f}", f"{x['median_s'] * 1e3:.1f}",
              f"{x['between_spread']:.1%}", f"{x['within_spread']:.1%}"] for x in lengths]
    return ["## Longer processes", "",
            "`aa_one` alone, the same configuration, processes of two lengths interleaved round by round "
            "(`campaigns/aa_length.toml`, Note [process length] in benchmarks/studies/bench_aa.py):", "",
            Table(["timed epochs", "processes", "timed s a process", "epoch ms", "spread across processes",
                   "within a process"], cells, [True] * 6).render("markdown").rstrip("\n"), "",
            verdict + "." + (f" {measured}" if measured else ""), ""]


def _share(k: int, n: int) -> str:
    return f"{k} of {n} ({k / n:.0%})" if n else "-"


def _power_note(spread: float, slowdown: float | None) -> str:
    """What the spread asks of a campaign that is to see ``aa_slow``'s slowdown 90 % of the time."""
    from gnnbench.core.statistics import processes_for_power

    needed = None if slowdown is None else processes_for_power(spread, abs(slowdown - 1))
    return "" if needed is None else (f" At that spread, seeing a {abs(slowdown - 1):.1%} slowdown in 90 % of "
                                      f"comparisons takes about {needed} processes a system (Note [processes for "
                                      "power] in gnnbench/core/statistics.py).")


def render(summaries: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> str:
    header = ["condition", "trials", "processes a system per trial", "A/A pairs marked different",
              "A/A intervals excluding 1 (flags aside)", "aa_slow marked + (slower beyond factor)",
              "aa_slow significantly slower", "aa_slow's interval below 1 (flags aside)", "aa_slow's true slowdown"]
    rows = [[s["condition"], str(s["trials"]), str(s["processes"]), _share(s["false_positives"], s["trials"]),
             _share(s["twin_intervals"], s["trials"]), _share(s["slow_marked"], s["trials"]),
             _share(s["slow_significant"], s["trials"]), _share(s["slow_intervals"], s["trials"]),
             "-" if s["true_slowdown"] is None else f"{(s['true_slowdown'] - 1):+.1%}"] for s in summaries]
    lines = ["# A/A: false positives and power of compare's statistics (issue 42)", "",
             f"Campaign `campaigns/{CAMPAIGN}.toml` "
             "(`python benchmarks/studies/bench_aa.py --condition quiet|loaded`): "
             f"GCN on `{meta['dataset']}`, {meta['epochs']} epochs ({meta['warmup']} untimed warm-up), "
             f"{meta['threads']} thread(s), pinned to CPU {meta.get('cpus')}, every run its own process, "
             f"interleaved. A trial is {meta['processes']} consecutive rounds: that many processes of each of "
             "`aa_one`, `aa_two` (built identically) and `aa_slow` (the same kernels plus extra in-place passes "
             "over each SpMM output), compared by `gnnbench.results.compare.compare` against `aa_one` (Note [A/A "
             "trials] in benchmarks/studies/bench_aa.py); the same processes are also judged in trials of twice as "
             "many. "
             "\"Flags aside\" counts the comparisons whose bootstrap interval alone excludes 1, before the "
             "stability flags withhold a mark. Conditions: "
             + "; ".join(f"{k}: {v}" for k, v in CONDITIONS.items()) + ".", "",
             Table(header, rows, [False, True, True, False, False, False, False, False, True])
             .render("markdown").rstrip("\n"), "",
             "Targets (issue 42): A/A pairs marked different in at most 5 % of at least 40 trials in each "
             "condition; `aa_slow` marked slower in at least 90 % of its comparisons.", ""]
    for s in summaries:
        if s["withheld"]:
            reasons = ", ".join(f"{name} {n}" for name, n in s["withheld"].items())
            lines.append(f"{s['condition']}, {s['processes']} processes a trial: `aa_slow`'s unmarked comparisons "
                         f"were flagged unstable for: {reasons} (of {s['trials'] - s['slow_marked']}).")
    for s in summaries:
        noise = s.get("baseline_noise")
        if noise and s["processes"] == meta["processes"]:
            lines.append(f"{s['condition']}: `aa_one` over all {noise['processes']} of its processes: "
                         f"{noise['median_s'] * 1e3:.1f} ms (process medians {noise['low_s'] * 1e3:.1f}-"
                         f"{noise['high_s'] * 1e3:.1f} ms), spread across processes {noise['between_spread']:.0%}, "
                         f"within a process {noise['within_spread']:.0%} (median IQR / median)."
                         + _power_note(noise["between_spread"], s["true_slowdown"]))
    lines.append("")
    lines += _lengths_section(meta.get("lengths") or [], meta.get("lengths_note"))
    for condition in dict.fromkeys(s["condition"] for s in summaries):
        measured = [s for s in summaries if s["condition"] == condition and s["trials"]]
        lines.append(f"{condition}: " + (measured_note(measured[0].get("load"),
                                                       measured[0].get("measured_at", meta.get("measured_at")))
                                         if measured else "not measured yet."))
    return "\n".join(lines) + "\n"


def decide_store_of(condition: str) -> Path:
    return ROOT / "results" / f"aa_decide_{condition}.sqlite"


def _minutes(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """A comparison's minutes from its rows' start times: their span, plus one process's mean share of it."""
    from datetime import datetime

    stamps = sorted(datetime.fromisoformat(r["timestamp"]) for r in rows if r.get("timestamp"))
    if len(stamps) < 2:
        return None
    span = (stamps[-1] - stamps[0]).total_seconds()
    return span * len(stamps) / (len(stamps) - 1) / 60


def _other_cpu_sentence(d: Mapping[str, Any]) -> str:
    found = d.get("other_cpu")
    if not found:
        return "Other processes' share of the measured CPU: not recorded."
    median, most, n = found
    return (f"Other processes took a median {median:.0%} (at most {most:.0%}) of the measured CPU while each of "
            f"the {n} processes timed its epochs.")


def summarise_decided(condition: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The stopping rule's trials of one condition (Note [A/A with the stopping rule])."""
    import numpy as np

    from gnnbench.results.paired import pairing, paired_rounds

    sessions = paired_rounds(rows)
    by_session: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        ab = pairing(row)
        if ab is not None:
            by_session.setdefault(str(ab["session"]), []).append(row)
    out: dict[str, Any] = {"condition": condition, "load": rows_load(rows), "other_cpu": other_cpu(rows),
                           "measured_at": sorted({r["git_commit"] for r in rows if r.get("git_commit")})}
    for system in (TWIN, SLOW):
        mine = [s for s in sessions.values() if s.system == system]
        words = [s.verdict().word for s in mine]
        processes = [s.processes for s in mine]
        minutes = [m for m in (_minutes(by_session[s.session]) for s in mine) if m is not None]
        quantile = lambda xs, q: float(np.percentile(xs, q)) if xs else None  # noqa: E731
        out[system] = {"trials": len(mine), **{w: words.count(w) for w in ("faster", "slower", "same", "undecided")},
                       "processes_median": quantile(processes, 50), "processes_p90": quantile(processes, 90),
                       "minutes_median": quantile(minutes, 50), "minutes_p90": quantile(minutes, 90),
                       "threshold": mine[0].threshold if mine else None}
    return out


def _decided_section(decided: Sequence[Mapping[str, Any]]) -> list[str]:
    measured = [d for d in decided if d[TWIN]["trials"] or d[SLOW]["trials"]]
    if not measured:
        return []
    number = lambda x, digits=0: "-" if x is None else f"{x:.{digits}f}"  # noqa: E731
    cells = []
    for d in measured:
        for system, what in ((TWIN, "called faster or slower"), (SLOW, "called slower")):
            s = d[system]
            hit = s["faster"] + s["slower"] if system == TWIN else s["slower"]
            cells.append([d["condition"], f"`{system}`", str(s["trials"]), f"{what}: {_share(hit, s['trials'])}",
                          str(s["same"]), str(s["undecided"]),
                          f"{number(s['processes_median'])} / {number(s['processes_p90'])}",
                          f"{number(s['minutes_median'], 1)} / {number(s['minutes_p90'], 1)}"])
    threshold = next(d[s]["threshold"] for d in measured for s in (TWIN, SLOW) if d[s]["threshold"])
    return ["## With the stopping rule", "",
            f"Each trial two paired comparisons against `aa_one`, in ABBA rounds until the sequential test "
            f"decides at a {threshold:.0%} threshold (alpha = beta = 0.05) or the budget is spent "
            "(`python benchmarks/studies/bench_aa.py --decide`, Note [A/A with the stopping rule]):", "",
            Table(["condition", "system", "trials", "verdict", "same", "undecided",
                   "processes (median / 90th pct)", "minutes (median / 90th pct)"], cells,
                  [False, False, True, False, True, True, True, True]).render("markdown").rstrip("\n"), "",
            "Targets (issue 54): `aa_two` called different in at most 5 % of at least 40 trials; `aa_slow` "
            "called slower in at least 90 %.", "",
            *(f"{d['condition']}: {measured_note(d.get('load'), d.get('measured_at', []))} "
              f"{_other_cpu_sentence(d)}" for d in measured), ""]


def _measure_decided(args, the_campaign, condition: str) -> None:
    """``args.trials`` trials with the stopping rule, stored in :func:`decide_store_of` (Note [A/A with the
    stopping rule])."""
    from dataclasses import replace

    from gnnbench.cli import ab

    config = the_campaign.matrices[0].configs[0]
    budget_s = ab.parse_budget(args.budget)
    generator = load_generator(avoid=config.cpus) if condition == "loaded" else None
    try:
        for trial in range(args.trials or 40):
            for system in (TWIN, SLOW):
                result = ab.run(replace(config, system=system), replace(config, system=BASELINE),
                                budget_s=budget_s, runner=ab.ROUND_RUNNERS[args.processes],
                                store_path=str(decide_store_of(condition)))
                print(f"trial {trial + 1}: {ab.verdict_line(result)}", file=sys.stderr, flush=True)
    finally:
        if generator is not None:
            generator.kill()
            generator.wait()


def _measure(args, the_campaign, condition: str) -> tuple[list[dict], tuple]:
    from gnnbench.results.frame import frame_records, load_results
    from _common import run_beside_load

    if args.render_only:
        if not store_of(condition).exists():
            return [], (None, None)
        return frame_records(load_results(store_of(condition))), (None, None)
    load = run_beside_load(the_campaign, store_of(condition), condition == "loaded",
                           avoid=the_campaign.matrices[0].configs[0].cpus)
    return frame_records(load_results(store_of(condition))), load


def _stored(path: Path) -> list[dict]:
    from gnnbench.results.frame import frame_records, load_results

    return frame_records(load_results(path))


def _run(args) -> int:
    from gnnbench.core.stability import MIN_PROCESSES

    put_on_systems_path(SYSTEMS_DIR)  # the A/A systems live outside systems/
    the_campaign = campaign(CAMPAIGN, rounds=None if args.trials is None else args.trials * MIN_PROCESSES)
    if args.dry_run:
        return print_plan("bench_aa", the_campaign, store_of(args.condition))
    config = the_campaign.matrices[0].configs[0]
    if args.decide and not args.render_only:
        _measure_decided(args, the_campaign, args.condition)
    summaries, commits = [], set()
    for condition in CONDITIONS:
        if (condition == args.condition and not args.decide) or args.render_only:
            rows, load = _measure(args, the_campaign, condition)
        else:
            rows, load = ([], (None, None))
            if store_of(condition).exists():  # the other condition, as measured before
                from gnnbench.results.frame import frame_records, load_results

                rows = frame_records(load_results(store_of(condition)))
        measured_at = sorted({r.get("git_commit") for r in rows if r.get("git_commit")})
        commits |= set(measured_at)
        for size in (MIN_PROCESSES, 2 * MIN_PROCESSES):  # the default, and what twice the processes buy
            summary = summarise(condition, rows, size)
            summary["load"] = rows_load(rows) if load[0] is None else load
            summary["measured_at"] = measured_at
            summaries.append(summary)
    lengths, lengths_note = [], None
    if LENGTH_STORE.exists():  # Note [process length]
        from gnnbench.results.frame import frame_records, load_results

        length_rows = frame_records(load_results(LENGTH_STORE))
        lengths = process_lengths(length_rows)
        lengths_note = measured_note(rows_load(length_rows),
                                     sorted({r["git_commit"] for r in length_rows if r.get("git_commit")}))
    decided = [summarise_decided(c, _stored(decide_store_of(c))) for c in CONDITIONS if decide_store_of(c).exists()]
    meta = provenance(campaign=CAMPAIGN, dataset=config.dataset, epochs=config.epochs, warmup=config.warmup,
                      threads=config.threads, cpus=config.cpus, processes=MIN_PROCESSES, measured_at=sorted(commits),
                      lengths=lengths, lengths_note=lengths_note)
    classic = any(s["trials"] for s in summaries)  # the stores of the trials without the rule are local
    page = render(summaries, meta) if classic else (
        f"# A/A with the stopping rule (issue 54)\n\nCampaign `campaigns/aa.toml`: GCN on `{config.dataset}`, "
        f"{config.epochs} epochs ({config.warmup} untimed warm-up), {config.threads} thread(s), pinned to CPU "
        f"{config.cpus}; `{TWIN}` is built as `{BASELINE}` is, `{SLOW}` adds extra work to its kernels.\n\n")
    write_results(args.out, {"meta": meta, "conditions": summaries, "decided": decided},
                  page + "\n".join(_decided_section(decided)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--condition", choices=tuple(CONDITIONS), default="quiet",
                        help="run quiet, or beside a load generator keeping one core busy (default: quiet)")
    parser.add_argument("--trials", type=count, default=None,
                        help="trials to run (default: the campaign's rounds / processes per trial)")
    parser.add_argument("--dry-run", action="store_true", help="print the runs the campaign would make; run nothing")
    parser.add_argument("--render-only", action="store_true", help="run nothing; render what the stores hold")
    parser.add_argument("--decide", action="store_true",
                        help="run trials of paired comparisons with the stopping rule instead (Note [A/A with the "
                             "stopping rule]); --trials defaults to 40")
    parser.add_argument("--budget", default="10m", help="--decide: each comparison's time budget (default: 10m)")
    parser.add_argument("--processes", choices=("fresh", "warm"), default="warm",
                        help="--decide: forked from a warm parent each round (default), or fresh worker processes")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "aa"))
    return run_script("bench_aa", parser, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
