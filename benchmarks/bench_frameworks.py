"""Every kernel system under PyTorch and under TensorFlow, side by side: epoch time and memory.

    python benchmarks/bench_frameworks.py [--quick] [--models gcn,gat] [--systems reference,dgnn]

The campaign ``campaigns/bench_frameworks.toml`` (also runnable with
``gnnbench sweep --campaign``): for each dataset (the default ``sbm`` and a
mid-size ``rmat``), model and system that has both a PyTorch and a TensorFlow
glue, the same task runs once per framework, each in its own process, stored
in ``results/benchmarks.sqlite`` with its provenance and interleaved by the
sweep so that machine drift hits every system alike; a rerun resumes. The
system's kernels are the same code under both frameworks (the
producer-only boundary hands them DLPack views either way), so a difference
is the framework's: its dense ops, its autograd, its allocator and its
per-op overhead.

Columns: median epoch time (forward + backward + optimizer, warm-up epochs
excluded; ``(! XX%)`` flags a noisy measurement, see :mod:`gnnbench.core.measurement`), the
TensorFlow/PyTorch ratio, peak resident memory above the pre-training
baseline (see Note [peak memory] in :mod:`gnnbench.run.environment`) and final
test accuracy. A system that does not implement an operator the model needs
is left out; a run that fails shows its status.

Results go to ``results/bench_frameworks.json`` and ``results/bench_frameworks.md``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import (NOISE_NOTE, Table, campaign, epoch_ms, load_note, mib, ok, out_path,  # noqa: E402
                     provenance, run_campaign, versions, write_results)

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("torch", "tensorflow")
QUICK_DATASETS = ("sbm", "rmat:nodes=8192,edges=131072,features=32,classes=8")
#: operators a model needs, as alternatives (GAT composes when the system does not fuse)
NEEDS = {"gcn": ({"spmm"},), "gin": ({"spmm"},), "sage": ({"spmm"},),
         "gat": ({"gat_aggregate"}, {"sddmm", "edge_softmax", "spmm"})}


def systems_under_both(names: list[str] | None = None) -> list:
    """Kernel systems with glue for both frameworks that can run here (optionally only ``names``)."""
    from gnnbench.runtime.registry import list_systems

    out = []
    for info in list_systems():
        if info.kind != "kernel" or (names and info.name not in names):
            continue
        if all(info.unavailable_reason(fw) is None for fw in FRAMEWORKS):
            out.append(info)
    return out


def runs_model(info, model: str) -> bool:
    return any(need <= set(info.operators) for need in NEEDS[model])


def run_all(args) -> list[dict]:
    """Runs the campaign (one [[matrix]] per model, with the systems that implement what it needs)."""
    from gnnbench.results.frame import frame_records

    base = campaign("bench_frameworks")
    systems = systems_under_both(args.systems.split(",") if args.systems else list(base.matrices[0].axis("system")))
    models = args.models.split(",") if args.models else list(base.matrices[0].axis("model"))
    datasets = args.datasets.split(",") if args.datasets else (list(QUICK_DATASETS) if args.quick else None)
    matrices = [{"models": [m], "systems": [i.name for i in systems if runs_model(i, m)]} for m in models]
    the_campaign = campaign("bench_frameworks", datasets=datasets, epochs=args.epochs, warmup=args.warmup,
                            threads=args.threads, seeds=None if args.seed is None else [args.seed],
                            timeout=args.timeout, matrix=[m for m in matrices if m["systems"]])
    return frame_records(run_campaign(the_campaign, args.results))


def _acc(r: dict | None) -> str:
    return f"{r['test_accuracy']:.3f}" if ok(r) else "-"


def render(rows: list[dict], meta: dict) -> str:
    """The markdown table: one line per (dataset, model, system), both frameworks side by side."""
    keyed = {(r["dataset"], r["model"], r["system"], r["framework"]): r for r in rows}
    lines = [
        "# Kernel systems under PyTorch and TensorFlow",
        "",
        f"PyTorch {meta['versions'].get('torch', '?')}, TensorFlow {meta['versions'].get('tensorflow', '?')}; "
        f"{meta['epochs']} epochs ({meta['warmup']} warm-up, not timed), threads {meta['threads'] or 'default'}, "
        f"seed {meta['seed']}; CPU: {meta['cpu']}.",
        "Epoch = forward + backward + optimizer, median over timed epochs in ms; memory = peak RSS above the "
        f"pre-training baseline in MiB. Each run is its own process; {NOISE_NOTE}.",
        load_note(meta["load_average_start"], meta["load_average_end"]),
        "",
    ]
    seen = list(dict.fromkeys((r["dataset"], r["model"], r["system"]) for r in rows))
    cells = []
    for dataset, model, system in seen:
        t, f = (keyed.get((dataset, model, system, fw)) for fw in FRAMEWORKS)
        mem_t, mem_f = (mib(r["peak_memory_bytes"]) if ok(r) else "-" for r in (t, f))
        ratio = "-"
        if t and f and t["status"] == f["status"] == "ok" and t["epoch_time_median_s"] > 0:
            ratio = f"{f['epoch_time_median_s'] / t['epoch_time_median_s']:.2f}"
        cells.append([dataset, model, system, epoch_ms(t), epoch_ms(f), ratio, mem_t, mem_f, _acc(t), _acc(f)])
    header = ["dataset", "model", "system", "torch ms", "tensorflow ms", "tf/torch", "torch MiB", "tensorflow MiB",
              "torch acc", "tensorflow acc"]
    lines.append(Table(header, cells, [False] * 3 + [True] * 7).render("markdown").rstrip("\n"))
    failures = [r for r in rows if r["status"] != "ok"]
    if failures:
        lines += ["", "Failed runs:", ""]
        lines += [f"- {r['dataset']} {r['model']} {r['system']} {r['framework']}: {r['status']}: {r['error']}"
                  for r in failures]
    return "\n".join(lines) + "\n"


def _meta(args) -> dict:
    from gnnbench.run.environment import cpu_model

    found = versions("torch", "tensorflow-cpu", "numba")
    return provenance(epochs=args.epochs, warmup=args.warmup, threads=args.threads, seed=args.seed,
                      models=args.models, cpu=cpu_model(),
                      versions={"torch": found["torch"], "tensorflow": found["tensorflow-cpu"],
                                "numba": found["numba"]})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small rmat graph (default epochs stay as given)")
    p.add_argument("--models", default=None, help="comma-separated models (default: the campaign's, gcn,gat)")
    p.add_argument("--systems", default=None, help="comma-separated systems (default: the campaign's that have "
                                                   "both glues here)")
    p.add_argument("--datasets", default=None, help="comma-separated datasets (default: sbm and a mid-size rmat)")
    p.add_argument("--epochs", type=int, default=None, help="epochs per run, warm-ups included (default: 30)")
    p.add_argument("--warmup", type=int, default=None, help="untimed first epochs (default: 5)")
    p.add_argument("--threads", type=int, default=None, help="threads per run (default: the frameworks' own)")
    p.add_argument("--seed", type=int, default=None, help="(default: 0)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (default: 1800)")
    p.add_argument("--results", default=None, help="results database (default: results/benchmarks.sqlite)")
    p.add_argument("--out", type=out_path, default=str(ROOT / "results" / "bench_frameworks"),
                   help="output path without suffix (default: results/bench_frameworks)")
    args = p.parse_args(argv)

    from gnnbench.frameworks import framework_available

    for fw in FRAMEWORKS:
        reason = framework_available(fw)
        if reason:
            print(f"bench_frameworks: {reason}", file=sys.stderr)
            return 2
    load_start = os.getloadavg()[0]
    rows = run_all(args)
    first = next((r for r in rows if ok(r)), {})
    args.epochs, args.warmup = first.get("epochs", args.epochs), first.get("warmup", args.warmup)
    args.seed = first.get("seed", args.seed)
    meta = _meta(args) | {"load_average_start": load_start, "load_average_end": os.getloadavg()[0]}
    keep = ("id", "status", "error", "system", "system_version", "system_hash", "verified", "model", "dataset",
            "framework", "framework_version", "epochs", "warmup", "threads", "allocator", "epoch_time_median_s",
            "epoch_time_iqr_s", "forward_median_s", "backward_median_s", "optimizer_median_s", "prepare_time_s",
            "peak_memory_bytes", "test_accuracy", "dataset_nodes", "dataset_edges", "epoch_times")
    write_results(args.out, {"meta": meta, "runs": [{k: r.get(k) for k in keep} for r in rows]},
                  render(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
