"""Training epochs of GCN, GraphSAGE and GIN: isplib against reference and the peers' native models (issue 4).

Hidden 64, RMAT with 2^17 nodes and 4M edges, 128 features; each run in its own
process through gnnbench.runner, interleaved by model. Writes
results/bench_training.{md,json} with median epoch time, forward/backward split,
and the ratio of every system to isplib.

    python benchmarks/bench_training.py [--quick] [--epochs 5]
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from gnnbench.harness import TaskSpec
from gnnbench.registry import system_info
from gnnbench.runner import run_task

SYSTEMS = ("isplib", "dgl-native", "pyg-native", "mkl", "reference")
MODELS = ("gcn", "sage", "gin")
FULL = "rmat:nodes=131072,edges=4000000,features=128,classes=8"
QUICK = "rmat:nodes=16384,edges=500000,features=128,classes=8"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--epochs", type=int, default=5, help="epochs per run, 2 of them untimed warm-ups")
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--out", default="results/bench_training")
    args = parser.parse_args()
    dataset = QUICK if args.quick else FULL
    rows = []
    load = os.getloadavg()[0]
    for model in MODELS:
        for system in SYSTEMS:
            reason = system_info(system).unavailable_reason()
            if reason:
                rows.append({"system": system, "model": model, "status": "skipped", "error": reason})
                continue
            spec = TaskSpec(system=system, model=model, dataset=dataset, epochs=args.epochs, warmup=2, hidden=64,
                            selection="last", threads=2)
            row = run_task(spec, timeout_s=args.timeout)
            rows.append(row)
            print(f"{model} {system}: {row['status']} {row.get('epoch_time_median_s')}", flush=True)
    lines = ["# Training epochs: isplib against reference and the native models of DGL and PyG", "",
             f"Hidden 64, {dataset}, {args.epochs} epochs (2 warm-up), threads 2, float32, each run its own process; "
             f"load average at start {load:.1f} on {os.cpu_count()} cores. isplib untuned (default variant) unless a "
             "tuning cache entry exists for this graph. pyg-native is PyG's default edge_index (gather-scatter) path.",
             "", "| model | system | epoch ms | forward ms | backward ms | vs isplib | status |",
             "|---|---|---:|---:|---:|---:|---|"]
    for model in MODELS:
        base = next((r for r in rows if r.get("model") == model and r["system"] == "isplib" and r["status"] == "ok"),
                    None)
        for r in (r for r in rows if r.get("model") == model):
            if r["status"] != "ok":
                lines.append(f"| {model} | {r['system']} | - | - | - | - | {r['status']}: {r.get('error')} |")
                continue
            ratio = f"{r['epoch_time_median_s'] / base['epoch_time_median_s']:.2f}x" if base else "-"
            lines.append(f"| {model} | {r['system']} | {r['epoch_time_median_s'] * 1e3:.0f} | "
                         f"{r['forward_median_s'] * 1e3:.0f} | {r['backward_median_s'] * 1e3:.0f} | {ratio} | ok |")
    out = Path(args.out)
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    keep = ("system", "model", "status", "error", "epoch_time_median_s", "epoch_time_iqr_s", "forward_median_s",
            "backward_median_s", "optimizer_median_s", "peak_memory_bytes", "prepare_time_s", "test_accuracy")
    out.with_suffix(".json").write_text(json.dumps([{k: r.get(k) for k in keep} for r in rows], indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
