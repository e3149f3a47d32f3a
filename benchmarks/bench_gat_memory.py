"""GAT memory and time on a graph where E x H tensors dominate: dgnn against the others (issue 6).

Each system trains GAT (4 heads x 16 hidden) on RMAT with 2^17 nodes and 4M
edges, 128 features, in its own process, and reports the peak resident memory
of the training loop above the pre-training baseline under two allocators, and
the median epoch time. The runs are the campaign ``campaigns/bench_gat_memory.toml``
(stored in ``results/benchmarks.sqlite`` with their provenance; a rerun resumes).
Writes results/bench_gat_memory.{md,json}.

    python benchmarks/bench_gat_memory.py [--quick] [--epochs 3]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import Table, campaign, load_note, ok, out_path, provenance, run_campaign, write_results  # noqa: E402

ALLOCATORS = ("system", "auto")
QUICK = "rmat:nodes=16384,edges=500000,features=128,classes=8"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"use {QUICK} instead of the campaign's graph")
    parser.add_argument("--epochs", type=int, default=None, help="epochs per run, the first one untimed (default: 3)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per run (default: 1800)")
    parser.add_argument("--results", default=None, help="results database (default: results/benchmarks.sqlite)")
    parser.add_argument("--out", type=out_path, default="results/bench_gat_memory")
    args = parser.parse_args()
    from gnnbench.results.frame import frame_records

    load_start = os.getloadavg()[0]
    the_campaign = campaign("bench_gat_memory", datasets=[QUICK] if args.quick else None, epochs=args.epochs,
                            timeout=args.timeout)
    first = the_campaign.matrices[0]
    systems, dataset, epochs = first.axis("system"), first.axis("dataset")[0], first.configs[0].epochs
    rows = frame_records(run_campaign(the_campaign, args.results))
    load_end = os.getloadavg()[0]
    for r in rows:  # the allocator the campaign asked for; `allocator` is the one the run's process used
        r["requested_allocator"] = ((r.get("extra") or {}).get("sweep") or {}).get("spec", {}).get("allocator")

    def find(system, allocator):
        return next((r for r in rows if r["system"] == system and r.get("requested_allocator") == allocator
                     and ok(r)), None)

    used = sorted({str(r.get("allocator")) for r in rows if ok(r)})
    lines = [
        "# GAT memory: fused recomputation (dgnn) against stored attention",
        "",
        f"GAT, 4 heads x 16 hidden, {dataset}, {epochs} epochs (1 warm-up), threads 2, float32, each run its own "
        f"process, once under the C library's malloc and once under gnnbench's default allocator (here: "
        f"{', '.join(u for u in used if u != 'system') or 'none installed'}). Peak = resident memory of the "
        "training loop above its pre-training baseline (VmHWM reset, the allocator's cache released first): "
        "glibc returns large blocks at once, so its peak is closest to the live tensors; a caching allocator "
        "adds what it keeps. Epoch time under the default allocator. " + load_note(load_start, load_end),
        "",
    ]
    refs = {a: find("reference", a) for a in ALLOCATORS}
    table = []
    for system in systems:
        got = {a: find(system, a) for a in ALLOCATORS}
        if not all(got.values()):
            failed = next((r for r in rows if r["system"] == system and not ok(r)), {})
            table.append([system] + ["-"] * 6 + [f"{failed.get('status')}: {failed.get('error')}"])
            continue
        cells = [system]
        for a in ALLOCATORS:
            mem, ref = got[a]["peak_memory_bytes"], refs[a]
            cells += [f"{mem / 2**30:.2f}", f"{mem / ref['peak_memory_bytes']:.2f}x" if ref else "-"]
        t, ref_t = got["auto"]["epoch_time_median_s"], refs["auto"]
        table.append(cells + [f"{t:.2f}", f"{t / ref_t['epoch_time_median_s']:.2f}x" if ref_t else "-", "ok"])
    header = ["system", "peak GiB (malloc)", "vs reference", "peak GiB (default)", "vs reference", "epoch s",
              "time vs reference", "status"]
    lines.append(Table(header, table, [False] + [True] * 6 + [False]).render("markdown"))
    keep = ("id", "system", "status", "error", "requested_allocator", "allocator", "epoch_time_median_s",
            "epoch_time_iqr_s", "peak_memory_bytes", "prepare_time_s", "dataset", "hyperparameters", "cpu_model",
            "git_commit", "system_hash", "verified")
    write_results(args.out, {"meta": provenance(dataset=dataset, epochs=epochs, load_average_start=load_start,
                                                     load_average_end=load_end),
                             "runs": [{k: r.get(k) for k in keep} for r in rows]}, "\n".join(lines))


if __name__ == "__main__":
    main()
