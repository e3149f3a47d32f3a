"""GAT memory and time on a graph where E x H tensors dominate: dgnn against the others (issue 6).

Each system trains GAT (4 heads x 16 hidden) on RMAT with 2^17 nodes and 4M
edges, 128 features, in its own process (gnnbench.runner), and reports the
peak resident memory of the training loop above the pre-training baseline
under two allocators, and the median epoch time. Writes results/bench_gat_memory.{md,json}.

    python benchmarks/bench_gat_memory.py [--quick] [--epochs 3]
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from gnnbench.harness import TaskSpec
from gnnbench.registry import system_info
from gnnbench.runner import run_task

SYSTEMS = ("dgnn", "reference", "mkl", "isplib", "dgl-native", "pyg-native")
ALLOCATORS = ("system", "auto")
FULL = "rmat:nodes=131072,edges=4000000,features=128,classes=8"
QUICK = "rmat:nodes=16384,edges=500000,features=128,classes=8"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"use {QUICK} instead of {FULL}")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per run, the first one untimed (default: 3)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", default="results/bench_gat_memory")
    args = parser.parse_args()
    dataset = QUICK if args.quick else FULL
    rows = []
    load_start = os.getloadavg()[0]
    for system in SYSTEMS:
        reason = system_info(system).unavailable_reason()
        if reason:
            rows.append({"system": system, "status": "skipped", "error": reason})
            continue
        for allocator in ALLOCATORS:
            spec = TaskSpec(system=system, model="gat", dataset=dataset, epochs=args.epochs, warmup=1, hidden=16,
                            heads=4, selection="last", threads=2, allocator=allocator)
            start = time.perf_counter()
            row = run_task(spec, timeout_s=args.timeout)
            row["wall_s"], row["requested_allocator"] = time.perf_counter() - start, allocator
            rows.append(row)
            print(f"{system} ({row.get('allocator')}): {row['status']} {row.get('epoch_time_median_s')} s/epoch, "
                  f"{(row.get('peak_memory_bytes') or 0) / 2**30:.2f} GiB", flush=True)

    def find(system, allocator):
        return next((r for r in rows if r["system"] == system and r.get("requested_allocator") == allocator
                     and r["status"] == "ok"), None)

    used = sorted({str(r.get("allocator")) for r in rows if r["status"] == "ok"})
    lines = [
        "# GAT memory: fused recomputation (dgnn) against stored attention",
        "",
        f"GAT, 4 heads x 16 hidden, {dataset}, {args.epochs} epochs (1 warm-up), threads 2, float32, each run its own "
        f"process, once under the C library's malloc and once under gnnbench's default allocator (here: "
        f"{', '.join(u for u in used if u != 'system') or 'none installed'}). Peak = resident memory of the "
        "training loop above its pre-training baseline (VmHWM reset, the allocator's cache released first): "
        "glibc returns large blocks at once, so its peak is closest to the live tensors; a caching allocator "
        "adds what it keeps. Epoch time under the default allocator. "
        f"Load average at start {load_start:.1f} on {os.cpu_count()} cores.",
        "",
        "| system | peak GiB (malloc) | vs reference | peak GiB (default) | vs reference | epoch s | time vs reference "
        "| status |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    refs = {a: find("reference", a) for a in ALLOCATORS}
    for system in SYSTEMS:
        got = {a: find(system, a) for a in ALLOCATORS}
        if not all(got.values()):
            failed = next((r for r in rows if r["system"] == system and r["status"] != "ok"), {})
            lines.append(f"| {system} | - | - | - | - | - | - | {failed.get('status')}: {failed.get('error')} |")
            continue
        cells = [system]
        for a in ALLOCATORS:
            mem, ref = got[a]["peak_memory_bytes"], refs[a]
            cells += [f"{mem / 2**30:.2f}", f"{mem / ref['peak_memory_bytes']:.2f}x" if ref else "-"]
        t, ref_t = got["auto"]["epoch_time_median_s"], refs["auto"]
        cells += [f"{t:.2f}", f"{t / ref_t['epoch_time_median_s']:.2f}x" if ref_t else "-", "ok"]
        lines.append("| " + " | ".join(cells) + " |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    keep = ("system", "status", "error", "requested_allocator", "allocator", "epoch_time_median_s", "epoch_time_iqr_s",
            "peak_memory_bytes", "prepare_time_s", "wall_s", "dataset", "hyperparameters", "cpu_model", "git_commit")
    out.with_suffix(".json").write_text(json.dumps([{k: r.get(k) for k in keep} for r in rows], indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
