"""Pinned against unpinned: what ``--cpus`` does to a one-thread run's figure and its spread (Note [pinned runs]).

    python benchmarks/studies/bench_pinning.py [--condition quiet|loaded] [--rounds N] [--dry-run] [--render-only]

The runs are the campaign ``campaigns/pinning.toml``: the A/A benchmark's
configuration (GCN on a small R-MAT graph, one thread, ``aa_one``) unpinned
and pinned to CPU 1, interleaved round by round, each run its own process,
stored in one results store per condition. ``--condition loaded`` runs beside
the load generator of ``bench_aa.py`` (``_common.load_generator``), on a CPU
the pinned runs do not use.

For each arm the table gives the figure (median of per-process medians), the
spread across processes (standard deviation of the process medians over their
mean), the median within-process spread (IQR / median), how many processes
passed :data:`~gnnbench.core.stability.SPREAD_LIMIT` within, and the range of
process medians; then the speedup of pinned over unpinned with its
two-level bootstrap interval (:func:`gnnbench.core.statistics.speedup`).

Writes results/studies/pinning.{md,json}, both conditions in one table.
"""
from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import (ROOT, Parser, Table, campaign, count, measured_note,  # noqa: E402
                     out_path, print_plan, provenance, put_on_systems_path, rows_load, run_script,
                     write_results)

CAMPAIGN = "pinning"
SYSTEMS_DIR = ROOT / "benchmarks" / "aa_systems"
CONDITIONS = {"quiet": "nothing else started", "loaded": "beside the load generator on the other CPU"}


def store_of(condition: str) -> Path:
    return ROOT / "results" / f"pinning_{condition}.sqlite"


def arm_of(row: Mapping[str, Any]) -> str:
    """``pinned to CPU N`` or ``unpinned``, from the request the row stores (``hyperparameters.cpus``)."""
    hyper = row.get("hyperparameters")
    cpus = hyper.get("cpus") if isinstance(hyper, Mapping) else None
    return f"pinned to CPU {cpus}" if cpus else "unpinned"


def summarise(condition: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Each arm's figure and spreads, and pinned's speedup over unpinned (None while an arm is missing)."""
    from gnnbench.core.measurement import Measurement
    from gnnbench.core.stability import SPREAD_LIMIT
    from gnnbench.core.statistics import Processes, speedup

    arms: dict[str, list[Measurement]] = {}
    for row in rows:
        if (row.get("status") or "ok") == "ok":
            arms.setdefault(arm_of(row), []).append(Measurement.from_row(row))
    out: dict[str, Any] = {"condition": condition, "arms": {}}
    for name in sorted(arms, key=lambda a: a != "unpinned"):  # unpinned first
        p = Processes(tuple(arms[name]))
        out["arms"][name] = {"processes": len(p), "median_s": p.median, "between_spread": p.between_spread,
                             "within_spread": p.within_spread,
                             "noisy_processes": sum(m.relative_spread > SPREAD_LIMIT for m in p.measurements),
                             "process_medians_s": [float(v) for v in p.medians]}
    pinned = [a for a in arms if a != "unpinned"]
    if "unpinned" in arms and pinned:
        ratio, low, high = speedup(Processes(tuple(arms["unpinned"])), Processes(tuple(arms[pinned[0]])))
        out["speedup"] = {"pinned": pinned[0], "ratio": ratio, "low": low, "high": high}
    return out


def _pct(value: float) -> str:
    return "-" if value != value else f"{value:.0%}"  # NaN: one process


def render(summaries: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> str:
    header = ["condition", "arm", "processes", "epoch (median of process medians)", "spread across processes",
              "spread within (median IQR/median)", "processes noisy within", "process medians"]
    rows = []
    for s in summaries:
        if not s["arms"]:
            rows.append([s["condition"], "not measured", "-", "-", "-", "-", "-", "-"])
        for name, a in s["arms"].items():
            medians = a["process_medians_s"]
            rows.append([s["condition"], name, str(a["processes"]), f"{a['median_s'] * 1e3:.2f} ms",
                         _pct(a["between_spread"]), _pct(a["within_spread"]),
                         f"{a['noisy_processes']} of {a['processes']}",
                         f"{min(medians) * 1e3:.1f}-{max(medians) * 1e3:.1f} ms"])
    lines = ["# Pinned against unpinned runs (Note [pinned runs])", "",
             f"Campaign `campaigns/{CAMPAIGN}.toml` (`python benchmarks/studies/bench_pinning.py --condition quiet|loaded`): "
             f"`aa_one` (mkl's kernels) training GCN on `{meta['dataset']}`, {meta['epochs']} epochs "
             f"({meta['warmup']} untimed warm-up), {meta['threads']} thread, unpinned and `--cpus 1`, interleaved "
             "round by round, every run its own process. Conditions: "
             + "; ".join(f"{k}: {v}" for k, v in CONDITIONS.items()) + ".", "",
             Table(header, rows, [False, False, True, True, True, True, True, True]).render("markdown").rstrip("\n"),
             ""]
    for s in summaries:
        sp = s.get("speedup")
        if sp:
            interval = "" if sp["low"] is None else f" (95% CI {sp['low']:.2f}-{sp['high']:.2f})"
            lines.append(f"{s['condition']}: {sp['pinned']} is {sp['ratio']:.2f}x unpinned's speed{interval}.")
    lines.append("")
    for s in summaries:
        lines.append(f"{s['condition']}: " + (measured_note(s.get("load"), meta.get("measured_at")) if s["arms"]
                                              else "not measured yet."))
    return "\n".join(lines) + "\n"


def _measure(args, the_campaign, condition: str) -> tuple[list[dict], tuple]:
    from gnnbench.results.frame import frame_records, load_results
    from _common import run_beside_load

    if not args.render_only:
        pinned = next(c.cpus for m in the_campaign.matrices for c in m.configs if c.cpus)
        load = run_beside_load(the_campaign, store_of(condition), condition == "loaded", avoid=pinned)
    else:
        load = (None, None)
    if not store_of(condition).exists():
        return [], load
    return frame_records(load_results(store_of(condition))), load


def _run(args) -> int:
    put_on_systems_path(SYSTEMS_DIR)  # aa_one lives outside systems/
    the_campaign = campaign(CAMPAIGN, rounds=args.rounds)
    if args.dry_run:
        return print_plan("bench_pinning", the_campaign, store_of(args.condition))
    config = the_campaign.matrices[0].configs[0]
    summaries, commits = [], set()
    for condition in CONDITIONS:
        measure = condition == args.condition or args.render_only
        rows, load = _measure(args, the_campaign, condition) if measure else ([], (None, None))
        if not measure and store_of(condition).exists():  # the other condition, as measured before
            from gnnbench.results.frame import frame_records, load_results

            rows = frame_records(load_results(store_of(condition)))
        commits |= {r.get("git_commit") for r in rows if r.get("git_commit")}
        summary = summarise(condition, rows)
        summary["load"] = rows_load(rows) if load[0] is None else load
        summaries.append(summary)
    meta = provenance(campaign=CAMPAIGN, dataset=config.dataset, epochs=config.epochs, warmup=config.warmup,
                      threads=config.threads, measured_at=sorted(commits))
    write_results(args.out, {"meta": meta, "conditions": summaries}, render(summaries, meta))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--condition", choices=tuple(CONDITIONS), default="quiet",
                        help="run quiet, or beside the load generator (default: quiet)")
    parser.add_argument("--rounds", type=count, default=None, help="rounds to run (default: the campaign's)")
    parser.add_argument("--dry-run", action="store_true", help="print the runs the campaign would make; run nothing")
    parser.add_argument("--render-only", action="store_true", help="run nothing; render what the stores hold")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "pinning"))
    return run_script("bench_pinning", parser, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
