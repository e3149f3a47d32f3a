"""The run-time check's cost (Note [run-time check]) as a share of a 200-epoch run.

    python benchmarks/bench_run_check.py [--system reference] [--models gcn,gat] [--epochs 4]
                                         [--dataset rmat:nodes=131072,edges=4000000,features=128,classes=8]

Each model trains in this process for ``--epochs`` epochs (one warm-up) on the
4M-edge R-MAT graph; the row's ``extra.run_check.seconds`` (the check, timed
apart from the epochs) is set against 200 epochs at the measured median epoch
time: ``share = check / (check + 200 x epoch)``. Fewer epochs than 200 are run
so that the script stays short on a shared machine; the median is what the
200-epoch run would repeat. Results go to ``results/bench_run_check.json`` and
``.md``, with the load average before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASET = "rmat:nodes=131072,edges=4000000,features=128,classes=8"
EPOCHS_PUBLISHED = 200


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--system", default="reference")
    p.add_argument("--models", default="gcn,gat")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--dataset", default=DATASET)
    p.add_argument("--out", default=str(ROOT / "results" / "bench_run_check"))
    args = p.parse_args(argv)
    from gnnbench.run.harness import RunConfig, train

    load_before = os.getloadavg()
    rows = []
    for model in args.models.split(","):
        begin = time.perf_counter()
        row = train(RunConfig(args.system, model, args.dataset, epochs=args.epochs, warmup=1, allocator="system"))
        check = row["extra"]["run_check"]
        epoch = row["epoch_time_median_s"]
        share = check["seconds"] / (check["seconds"] + EPOCHS_PUBLISHED * epoch)
        rows.append({"system": args.system, "model": model, "dataset": args.dataset, "check_s": check["seconds"],
                     "operators": check["operators"], "epoch_median_s": epoch, "share_of_200_epochs": share,
                     "wall_s": time.perf_counter() - begin})
    load_after = os.getloadavg()
    out = {"rows": rows, "load_before": load_before, "load_after": load_after, "cpus": os.cpu_count()}
    Path(args.out + ".json").write_text(json.dumps(out, indent=2) + "\n")
    lines = ["| system | model | check | median epoch | share of 200 epochs |", "|---|---|---|---|---|"]
    lines += [f"| {r['system']} | {r['model']} | {r['check_s'] * 1e3:.0f} ms | {r['epoch_median_s'] * 1e3:.0f} ms | "
              f"{r['share_of_200_epochs'] * 100:.2f} % |" for r in rows]
    lines.append(f"\n{args.dataset}, {args.epochs} epochs run (1 warm-up); load average {load_before[0]:.1f} before, "
                 f"{load_after[0]:.1f} after, on {os.cpu_count()} CPUs.")
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
