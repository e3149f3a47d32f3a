"""The run-time checks' cost (Note [run-time check], Note [closing check]) as a share of a 200-epoch run (issues 35, 56).

    python benchmarks/bench_run_check.py [--dry-run] [--render-only] [--results PATH] [--out PATH]
                                         [--dataset D] [--systems A,B] [--rounds N]

The runs are the campaign ``campaigns/bench_run_check.toml`` (GCN and GAT on
the 4M-edge R-MAT graph, every CPU kernel system), each in its own process
through ``gnnbench sweep``, stored with its provenance. A row's
``extra.run_check.seconds`` (the opening check, before the first epoch) and
``extra.run_check.closing.seconds`` (the closing check, after the timed
epochs), each timed apart from the epochs, are each set against 200 epochs
at the row's median epoch: ``share = check / (check + 200 x epoch)``. The campaign runs a few epochs,
not 200: the check runs once per run, and the median epoch is what a 200-epoch
run repeats. The faster the system, the larger the share, since much of the
check is the float64 oracle on the sampled rows, which does not speed up with
the system.

``--dataset``, ``--systems`` and ``--rounds`` replace the campaign's, for a
toy run that shows the script works (never a published figure).

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
#: the bounds the issues set: the opening check under 5 % (issue 35), the closing one under 2 % (issue 56)
BOUNDS = {"opening": 0.05, "closing": 0.02}


def share(check_s: float, epoch_s: float) -> float:
    """The check's share of a run of :data:`EPOCHS_PUBLISHED` epochs of ``epoch_s`` each."""
    return check_s / (check_s + EPOCHS_PUBLISHED * epoch_s)


def _checks(row: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The row's opening and closing checks (``extra.run_check`` and its ``closing``), each ``{}`` when absent."""
    opening = (row.get("extra") or {}).get("run_check") or {}
    return {"opening": opening, "closing": opening.get("closing") or {}}


def _share(row: Mapping[str, Any], which: str) -> float | None:
    seconds = _checks(row)[which].get("seconds")
    return None if seconds is None or not ok(row) else share(seconds, row["epoch_time_median_s"])


def _cells(row: Mapping[str, Any]) -> list[str]:
    if not ok(row):
        return [row["system"], row["model"], f"{row.get('status')}: {row.get('error')}", *["-"] * 6]
    checks = _checks(row)
    opening, closing = checks["opening"], checks["closing"]
    status = "/".join(c.get("status", "-") for c in (opening, closing))
    forward = opening.get("forward_seconds")

    def seconds(check):
        return "-" if check.get("seconds") is None else f"{check['seconds']:.2f}"

    def percent(which):
        value = _share(row, which)
        return "-" if value is None else f"{100 * value:.2f} %"

    return [row["system"], row["model"], status, seconds(opening), "-" if forward is None else f"{forward:.2f}",
            seconds(closing), f"{row['epoch_time_median_s']:.2f}", percent("opening"), percent("closing")]


def render(rows: list[Mapping[str, Any]], meta: Mapping[str, Any]) -> str:
    header = ["system", "model", "checks (opening/closing)", "opening s", "of which first forward s", "closing s",
              "median epoch s", f"opening share of {EPOCHS_PUBLISHED} epochs",
              f"closing share of {EPOCHS_PUBLISHED} epochs"]
    lines = ["# The run-time checks' cost (issues 35 and 56)", "",
             f"Campaign `campaigns/{CAMPAIGN}.toml` (`python benchmarks/bench_run_check.py`) on `{meta['dataset']}`:"
             f" {meta['epochs']} epochs, {meta['warmup']} untimed warm-up, threads {meta['threads']}, torch, "
             "float32, each run its own process. Opening s: `extra.run_check.seconds`, the check before the first "
             "epoch: the system's first forward with every kernel's inputs checksummed, then each layer's calls "
             "run again for their backward, and the float64 `reference` oracle on the sampled rows of every call, "
             "forward and backward; of it, the first forward is the system's own first call of every kernel (a "
             "JIT compile included, which the untimed warm-up pays when the check is off). Closing s: "
             "`extra.run_check.closing.seconds`, the same check after the timed epochs and any tuning (Note "
             "[closing check]). Share: check / (check + "
             f"{EPOCHS_PUBLISHED} x median epoch), the whole check counted. "
             + measured_note(meta.get("load"), meta.get("measured_at")), "",
             Table(header, [_cells(r) for r in rows], [False, False, False, True, True, True, True, True, True])
             .render("markdown").rstrip("\n"), ""]
    for which, bound in BOUNDS.items():
        worst = max((v for v in (_share(r, which) for r in rows) if v is not None), default=None)
        if worst is not None:
            lines += [f"Largest {which} share: {100 * worst:.2f} % (the issue's bound: under {100 * bound:.0f} %).",
                      ""]
    return "\n".join(lines)


def _run(args) -> int:
    the_campaign = campaign(CAMPAIGN, datasets=[args.dataset] if args.dataset else None, rounds=args.rounds,
                            systems=args.systems.split(",") if args.systems else None)
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
    parser.add_argument("--dataset", default=None, help="a dataset instead of the campaign's (a toy run)")
    parser.add_argument("--systems", default=None, help="comma-separated systems instead of the campaign's")
    parser.add_argument("--rounds", type=int, default=None, help="processes per configuration instead of the "
                        "campaign's")
    return run_script("bench_run_check", parser, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
