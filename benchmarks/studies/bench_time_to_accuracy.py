"""Time to accuracy: which system trains a usable model sooner, over seeds (issue 45).

    python benchmarks/studies/bench_time_to_accuracy.py [--dry-run] [--render-only] [--results PATH] [--out PATH]

The runs are the campaign ``campaigns/time_to_accuracy.toml``: GCN, GAT and
SAGE on Cora and CiteSeer trained until the validation accuracy reaches the
campaign's target, on every CPU kernel system and both native baselines,
full-graph and sampled, five seeds a configuration, pim in int32 beside
float32, and ``demo_converges_early`` (tests/demo_systems) beside reference;
each run its own process through ``gnnbench sweep``, stored with its
provenance in ``results/studies/time_to_accuracy.sqlite``. This script only renders:

* the figures of ``gnnbench compare --metric time-to-accuracy`` (MLPerf's mean
  with the fastest and slowest seed dropped, a bootstrap over seeds, the marks
  ``n`` and ``c``; :mod:`gnnbench.results.time_to_accuracy`), one table per
  dataset and batching;
* three answers, each with its interval over seeds (Note [seed statistics]):
  which system reaches the target first, whether sampled training reaches it
  sooner than full-graph training, and what pim's int32 arithmetic costs in
  epochs against its float32 mode;
* the convergence check's verdicts: which systems it marked, and why.

Writes results/studies/time_to_accuracy.{md,json}; ``--dry-run`` prints the plan and
runs nothing; ``--render-only`` renders what the database holds.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import (ROOT, Parser, Table, campaign, measured_note, out_path, print_plan,  # noqa: E402
                     put_on_systems_path, rows_load, run_campaign, run_script, versions, write_results)

CAMPAIGN = "time_to_accuracy"
#: where demo_converges_early lives (the campaign runs it beside reference for the convergence check)
DEMO_SYSTEMS = ROOT / "tests" / "demo_systems"
#: pim's two arithmetics, as runs_by_group labels them
PIM_INT32, PIM_FLOAT32 = "pim", "pim [arithmetic=float32]"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return "not reached" if value == float("inf") else f"{value:.2f}"


def _epochs(value: float) -> str:
    return "not reached" if value == float("inf") else f"{value:.2f}"


def _interval(speedup: float, low: float | None, high: float | None) -> str:
    if not math.isfinite(speedup):
        return "-"
    if low is None:
        return f"{speedup:.2f}x (no interval)"
    return f"{speedup:.2f}x [{low:.2f}, {high:.2f}]"


def _excludes_one(low: float | None, high: float | None) -> bool:
    return low is not None and (low > 1 or high < 1)


def figures_by_group(rows: Sequence[Mapping[str, Any]]) -> dict[tuple, dict[str, dict[str, Any]]]:
    """group -> system label -> its seeds' seconds and epochs to the target (``inf`` for a miss), and whether
    its seconds are a simulation's wall time (then only its epochs count: Note [modeled rows])."""
    from gnnbench.results.time_to_accuracy import runs_by_group, seed_figures, simulated

    out: dict[tuple, dict[str, dict[str, Any]]] = {}
    for key, systems in runs_by_group(rows).items():
        for label, by_seed in systems.items():
            seconds, epochs, limit = seed_figures(list(by_seed.values()))
            out.setdefault(key, {})[label] = {"seconds": seconds, "epochs": epochs, "max_epochs": limit,
                                              "simulated": simulated(list(by_seed.values()))}
    return out


def first_to_target(results, figures) -> list[dict[str, Any]]:
    """Per group: the system with the lowest figure among those not marked ``c`` or ``n`` and not failed by
    ``gnnbench verify``, and its ratio over the runner-up with an interval over seeds (the runner-up's figure /
    the first's)."""
    from gnnbench.core.statistics import seed_speedup
    from gnnbench.results.time_to_accuracy import GROUP

    by_group: dict[tuple, list] = {}
    for r in results:
        if r.seconds is not None and r.seconds != float("inf") and "c" not in r.mark and r.verified != "failed":
            by_group.setdefault(tuple(r.group[g] for g in GROUP), []).append(r)
    out = []
    for key, entries in by_group.items():
        ranked = sorted(entries, key=lambda r: r.seconds)
        first = ranked[0]
        entry = {"group": dict(first.group), "first": first.system, "seconds": first.seconds}
        if len(ranked) > 1:
            second = ranked[1]
            speedup, low, high = seed_speedup(figures[key][second.system]["seconds"],
                                              figures[key][first.system]["seconds"])
            entry.update(runner_up=second.system, runner_up_seconds=second.seconds, ratio=speedup, low=low,
                         high=high, decided=_excludes_one(low, high))
        out.append(entry)
    return out


def sampled_against_full(figures) -> list[dict[str, Any]]:
    """Per dataset, model and system: full-graph's figure / sampled's, with an interval over seeds (epochs
    only for a simulated system)."""
    from gnnbench.core.statistics import seed_speedup, trimmed_mean

    out = []
    for key, systems in figures.items():
        dataset, model, framework, batching, target = key
        if batching != "sampled":
            continue
        full = figures.get((dataset, model, framework, "full", target), {})
        for label, sampled in systems.items():
            if label not in full:
                continue
            entry = {"dataset": dataset, "model": model, "system": label, "target": target,
                     "full_epochs": trimmed_mean(full[label]["epochs"]),
                     "sampled_epochs": trimmed_mean(sampled["epochs"]), "full_s": None, "sampled_s": None,
                     "ratio": None, "low": None, "high": None}
            if not (sampled["simulated"] or full[label]["simulated"]):
                speedup, low, high = seed_speedup(full[label]["seconds"], sampled["seconds"])
                entry.update(full_s=trimmed_mean(full[label]["seconds"]), sampled_s=trimmed_mean(sampled["seconds"]),
                             ratio=speedup, low=low, high=high)
            out.append(entry)
    return out


def pim_quantisation(figures) -> list[dict[str, Any]]:
    """Per full-graph group: pim int32's epochs to the target against pim float32's (pim's times are a
    simulation's wall time, Note [modeled rows]: only epochs count)."""
    from gnnbench.core.statistics import seed_speedup, trimmed_mean

    out = []
    for (dataset, model, framework, batching, target), systems in figures.items():
        if batching != "full" or PIM_INT32 not in systems or PIM_FLOAT32 not in systems:
            continue
        int32, float32 = systems[PIM_INT32], systems[PIM_FLOAT32]
        epochs, e_low, e_high = seed_speedup(int32["epochs"], float32["epochs"])
        out.append({"dataset": dataset, "model": model, "target": target,
                    "int32_epochs": trimmed_mean(int32["epochs"]), "float32_epochs": trimmed_mean(float32["epochs"]),
                    "epochs_ratio": epochs, "epochs_low": e_low, "epochs_high": e_high,
                    "int32_reached": sum(map(math.isfinite, int32["epochs"].values())), "seeds": len(int32["epochs"])})
    return out


def convergence_marks(results) -> list[dict[str, Any]]:
    """Every result the convergence check marked (``c``), with its p-value."""
    return [{"group": dict(r.group), "system": r.system, "p": r.convergence_p, "epochs": r.epochs}
            for r in results if "c" in r.mark]


def _group_tables(comparison) -> list[str]:
    from gnnbench.results.time_to_accuracy import TtaComparison

    lines = []
    groups = dict.fromkeys((r.group["dataset"], r.group["batching"]) for r in comparison.results)
    for dataset, batching in groups:
        mine = TtaComparison([r for r in comparison.results
                              if (r.group["dataset"], r.group["batching"]) == (dataset, batching)],
                             comparison.baseline)
        table = mine.table()
        keep = [i for i, h in enumerate(table.header) if h not in ("dataset", "framework", "batching")]
        rows = [[row[i] for i in keep] for row in table.rows]
        target = mine.results[0].group["target"]
        lines += [f"### {dataset}, {batching}, validation target {target:g}", "",
                  Table([table.header[i] for i in keep], rows, [table.numeric[i] for i in keep])
                  .render("markdown").rstrip("\n"), ""]
    return lines


def render(comparison, answers: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    lines = ["# Time to accuracy (issue 45)", "",
             "Each run trains until its validation accuracy reaches the target (evaluated every epoch full-graph, "
             "every quarter epoch sampled: fanouts 10,5, batches of 32), and its time to the target counts "
             "training epochs (warm-ups included), evaluations, preparation and tuning (Note [time to accuracy] "
             "in gnnbench/run/target.py). Over five seeds a configuration, the figure is MLPerf's: the mean with "
             "the fastest and slowest seed dropped; speedups are intervals over seeds (Note [seed statistics] in "
             "gnnbench/core/statistics.py). Targets: Cora 0.75, CiteSeer 0.65, about 4 % under the lowest best "
             "validation accuracy any exact system reached in 200 epochs on this split; the campaign file "
             "(`campaigns/time_to_accuracy.toml`) justifies them from the published accuracies. "
             f"Threads {meta['threads']}, float32, torch, each run its own process. CPU: {meta['cpu']}. "
             + measured_note(meta.get("load"), meta.get("commits")), ""]
    lines += _answers(answers)
    lines += ["## Every configuration", "",
              "Columns as `gnnbench compare --results results/studies/time_to_accuracy.sqlite --metric time-to-accuracy "
              "--include-unverified` prints them (baseline `reference`): every run passed the run-time check of "
              "its first forward (Note [run-time check]); `verified` says whether `gnnbench verify` has passed the "
              "system's build in this store. " + " ".join(comparison.table().notes), ""]
    lines += _group_tables(comparison)
    lines += meta.get("findings", [])
    return "\n".join(lines).rstrip("\n") + "\n"


def _answers(answers: Mapping[str, Any]) -> list[str]:
    lines = ["## Which system reaches the target first", "",
             "Among the systems the convergence check did not mark and `gnnbench verify` did not fail (the native "
             "baselines have no kernels to verify); the ratio is the runner-up's figure over the first's, decided "
             "when its interval over seeds excludes 1.", ""]
    cells = [[a["group"]["dataset"], a["group"]["model"], a["group"]["batching"], a["first"], _seconds(a["seconds"]),
              a.get("runner_up", "-"), _seconds(a.get("runner_up_seconds")),
              _interval(a["ratio"], a["low"], a["high"]) if "ratio" in a else "-",
              "yes" if a.get("decided") else "no"] for a in answers["first"]]
    lines += [Table(["dataset", "model", "batching", "first", "time (s)", "runner-up", "time (s)", "ratio",
                     "decided"], cells, [False] * 4 + [True, False, True, True, False]).render("markdown")
              .rstrip("\n"), "", "## Sampled against full-graph training", "",
              "Full-graph's time to the target over sampled's, per system (above 1: sampled reaches it sooner).", ""]
    cells = [[a["dataset"], a["model"], a["system"], _seconds(a["full_s"]), _seconds(a["sampled_s"]),
              _epochs(a["full_epochs"]), _epochs(a["sampled_epochs"]),
              _interval(a["ratio"], a["low"], a["high"]) if a["ratio"] is not None else "simulated: epochs only"]
             for a in answers["sampled"]]
    lines += [Table(["dataset", "model", "system", "full (s)", "sampled (s)", "full epochs", "sampled epochs",
                     "full / sampled"], cells, [False] * 3 + [True] * 5).render("markdown").rstrip("\n"), "",
              "## What pim's int32 arithmetic costs", "",
              "pim's default int32 quantised aggregation against its float32 mode, full-graph, in epochs to the "
              "target (int32's over float32's: above 1, int32 needs more). pim simulates its aggregation, so its "
              "wall time is a simulation's, not a figure of this CPU or of a PIM device (Note [modeled rows] in "
              "gnnbench/results/frame.py): epochs are what it can be judged by here.", ""]
    cells = [[a["dataset"], a["model"], f"{a['int32_reached']} of {a['seeds']}", _epochs(a["int32_epochs"]),
              _epochs(a["float32_epochs"]), _interval(a["epochs_ratio"], a["epochs_low"], a["epochs_high"])]
             for a in answers["pim"]]
    lines += [Table(["dataset", "model", "int32 seeds reached", "int32 epochs", "float32 epochs",
                     "epochs int32 / float32"], cells, [False] * 2 + [True] * 4).render("markdown")
              .rstrip("\n"), "", "## The convergence check", ""]
    marked = answers["convergence"]
    if not marked:
        lines += ["No system reached a target in significantly fewer epochs than `reference`.", ""]
    for m in marked:
        g = m["group"]
        lines.append(f"- `{m['system']}` on {g['dataset']} {g['model']} ({g['batching']}): {m['epochs']:.1f} epochs "
                     f"to the target, significantly fewer than reference's (p = {m['p']:.2g}).")
    return lines + [""]


def answer(comparison, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    figures = figures_by_group(rows)
    return {"first": first_to_target(comparison.results, figures), "sampled": sampled_against_full(figures),
            "pim": pim_quantisation(figures), "convergence": convergence_marks(comparison.results)}


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the runs the campaign would make; run nothing")
    parser.add_argument("--render-only", action="store_true", help="run nothing; render what the database holds")
    parser.add_argument("--results", default=None,
                        help="results database (default: the campaign's, results/studies/time_to_accuracy.sqlite)")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "time_to_accuracy"))
    return run_script("bench_time_to_accuracy", parser, _run, argv)


def _run(args) -> int:
    from gnnbench.errors import UserError
    from gnnbench.results.frame import frame_records, load_results
    from gnnbench.results.time_to_accuracy import compare_time_to_accuracy
    from gnnbench.run.environment import cpu_model

    put_on_systems_path(DEMO_SYSTEMS)
    the_campaign = campaign(CAMPAIGN)
    results = Path(args.results or ROOT / the_campaign.results)
    if args.dry_run:
        return print_plan("bench_time_to_accuracy", the_campaign, results)
    if not args.render_only:
        run_campaign(the_campaign, results)
    elif not results.is_file():
        raise UserError(f"no results database at {results}: run the campaign first (drop --render-only)")
    rows = frame_records(load_results(results))
    # every row passed the run-time check (a failed one has no time); `gnnbench verify` records in this store
    # mark a system verified, and the table says which are
    comparison = compare_time_to_accuracy(rows, include_unverified=True)
    if not comparison.results:
        raise UserError(f"{results} holds no runs with a target accuracy to render")
    answers = answer(comparison, rows)
    meta = {"threads": the_campaign.matrices[0].configs[0].threads, "cpu": cpu_model(), "load": rows_load(rows),
            "commits": sorted({r.get("git_commit") or "unknown" for r in rows})}
    payload = {"campaign": CAMPAIGN, "meta": meta, "versions": versions("torch", "dgl", "torch_geometric"),
               "results": comparison.as_dicts(), "answers": answers}
    write_results(args.out, payload, render(comparison, answers, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
