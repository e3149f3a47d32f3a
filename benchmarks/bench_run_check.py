"""The run-time check's cost (Note [run-time check]) as a share of a 200-epoch run, system by system (issue 35).

    python benchmarks/bench_run_check.py [--dry-run] [--render-only] [--results PATH] [--out PATH]

The runs are the campaign ``campaigns/bench_run_check.toml`` (GCN and GAT on
the 4M-edge R-MAT graph, every CPU kernel system), each in its own process
through ``gnnbench sweep``, stored with its provenance. A row's
``extra.run_check.seconds`` (the check, timed apart from the epochs) is set
against 200 epochs at the row's median epoch:
``share = check / (check + 200 x epoch)``. The campaign runs a few epochs,
not 200: the check runs once per run, and the median epoch is what a 200-epoch
run repeats. The faster the system, the larger the share, since much of the
check is the float64 oracle on the sampled rows, which does not speed up with
the system.

Writes results/bench_run_check.{md,json}.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import (ROOT, Parser, Table, campaign, measure_or_render, measured_note, ok, out_path,  # noqa: E402
                     print_plan, provenance, run_script, write_results)

CAMPAIGN = "bench_run_check"
EPOCHS_PUBLISHED = 200


def share(check_s: float, epoch_s: float) -> float:
    """The check's share of a run of :data:`EPOCHS_PUBLISHED` epochs of ``epoch_s`` each."""
    return check_s / (check_s + EPOCHS_PUBLISHED * epoch_s)


def _cells(row: Mapping[str, Any]) -> list[str]:
    if not ok(row):
        return [row["system"], row["model"], f"{row.get('status')}: {row.get('error')}", "-", "-", "-", "-"]
    check = (row.get("extra") or {}).get("run_check") or {}
    if check.get("seconds") is None:
        return [row["system"], row["model"], check.get("status", "-"), "-", "-", "-", "-"]
    epoch = row["epoch_time_median_s"]
    forward = check.get("forward_seconds")
    return [row["system"], row["model"], check["status"], f"{check['seconds']:.2f}",
            "-" if forward is None else f"{forward:.2f}", f"{epoch:.2f}", f"{100 * share(check['seconds'], epoch):.2f} %"]


def render(rows: list[Mapping[str, Any]], meta: Mapping[str, Any]) -> str:
    header = ["system", "model", "check", "check s", "of which first forward s", "median epoch s",
              f"share of {EPOCHS_PUBLISHED} epochs"]
    worst = max((share(r["extra"]["run_check"]["seconds"], r["epoch_time_median_s"]) for r in rows
                 if ok(r) and ((r.get("extra") or {}).get("run_check") or {}).get("seconds") is not None),
                default=None)
    lines = ["# The run-time check's cost (issue 35)", "",
             f"Campaign `campaigns/{CAMPAIGN}.toml` (`python benchmarks/bench_run_check.py`) on `{meta['dataset']}`:"
             f" {meta['epochs']} epochs, {meta['warmup']} untimed warm-up, threads {meta['threads']}, torch, "
             "float32, each run its own process. Check s: `extra.run_check.seconds`, the system's first forward "
             "with every kernel's inputs checksummed plus the float64 `reference` oracle on the sampled rows of "
             "every operator, timed apart from the epochs; of it, the first forward is the system's own first "
             "call of every kernel (a JIT compile included, which the untimed warm-up pays when the check is off). "
             f"Share: check / (check + {EPOCHS_PUBLISHED} x median epoch), the whole check counted. " + measured_note(meta.get("load"), meta.get("measured_at")), "",
             Table(header, [_cells(r) for r in rows], [False, False, False, True, True, True, True])
             .render("markdown").rstrip("\n"), ""]
    if worst is not None:
        lines += [f"Largest share: {100 * worst:.2f} % (the issue's bound: under 5 %).", ""]
    return "\n".join(lines)


def _run(args) -> int:
    the_campaign = campaign(CAMPAIGN)
    results = Path(args.results or the_campaign.results)
    results = results if results.is_absolute() else ROOT / results
    if args.dry_run:
        return print_plan("bench_run_check", the_campaign, results)
    matrix = the_campaign.matrices[0]
    systems, models = list(matrix.axis("system")), list(matrix.axis("model"))
    dataset = matrix.axis("dataset")[0]
    rows, load = measure_or_render(the_campaign, results, args.render_only, lambda r: (
        (r["system"], r["model"]) if r.get("dataset") == dataset and r.get("system") in systems
        and r.get("model") in models else None))
    rows.sort(key=lambda r: (systems.index(r["system"]), models.index(r["model"])))
    config = matrix.configs[0]
    meta = provenance(campaign=CAMPAIGN, dataset=dataset, epochs=config.epochs, warmup=config.warmup,
                      threads=config.threads, load=None if load[0] is None else load,
                      measured_at=sorted({r.get("git_commit") for r in rows if r.get("git_commit")}))
    keep = ("id", "system", "model", "dataset", "status", "error", "epoch_time_median_s", "epoch_time_iqr_s",
            "allocator", "git_commit")
    runs = [{**{k: r.get(k) for k in keep}, "run_check": (r.get("extra") or {}).get("run_check")} for r in rows]
    write_results(args.out, {"meta": meta, "runs": runs}, render(rows, meta))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the runs the campaign would make; run nothing")
    parser.add_argument("--render-only", action="store_true", help="run nothing; render what the store holds")
    parser.add_argument("--results", default=None, help="results database (default: the campaign's)")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "bench_run_check"))
    return run_script("bench_run_check", parser, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
