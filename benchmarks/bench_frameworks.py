"""Every kernel system under PyTorch and under TensorFlow, side by side: epoch time and memory.

    python benchmarks/bench_frameworks.py [--quick] [--models gcn,gat] [--systems reference,dgnn]

For each dataset (the default ``sbm`` and a mid-size ``rmat``), model and
system that has both a PyTorch and a TensorFlow glue, the same task runs
once per framework, each in its own process (:func:`gnnbench.runner.run_task`),
the two frameworks back to back so that machine drift hits both alike. The
system's kernels are the same code under both frameworks (the
producer-only boundary hands them DLPack views either way), so a difference
is the framework's: its dense ops, its autograd, its allocator and its
per-op overhead.

Columns: median epoch time (forward + backward + optimizer, warm-up epochs
excluded; ``(! XX%)`` flags an IQR above 10 % of the median), the
TensorFlow/PyTorch ratio, peak resident memory above the pre-training
baseline (see Note [peak memory] in :mod:`gnnbench.environment`) and final
test accuracy. A system that does not implement an operator the model needs
is left out; a run that fails shows its status.

Results go to ``results/bench_frameworks.json`` and ``results/bench_frameworks.md``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("torch", "tensorflow")
DATASETS = {"full": ("sbm", "rmat:nodes=32768,edges=524288,features=64,classes=8"),
            "quick": ("sbm", "rmat:nodes=8192,edges=131072,features=32,classes=8")}
#: operators a model needs, as alternatives (GAT composes when the system does not fuse)
NEEDS = {"gcn": ({"spmm"},), "gin": ({"spmm"},), "sage": ({"spmm"},),
         "gat": ({"gat_aggregate"}, {"sddmm", "edge_softmax", "spmm"})}


def systems_under_both(names: list[str] | None = None) -> list:
    """Kernel systems with glue for both frameworks that can run here (optionally only ``names``)."""
    from gnnbench.registry import list_systems

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
    from gnnbench.harness import TaskSpec
    from gnnbench.runner import run_task

    rows = []
    datasets = args.datasets.split(",") if args.datasets else DATASETS["quick" if args.quick else "full"]
    systems = systems_under_both(args.systems.split(",") if args.systems else None)
    for dataset in datasets:
        for model in args.models.split(","):
            for info in systems:
                if not runs_model(info, model):
                    continue
                for framework in FRAMEWORKS:
                    spec = TaskSpec(system=info.name, model=model, dataset=dataset, framework=framework,
                                    epochs=args.epochs, warmup=args.warmup, threads=args.threads, seed=args.seed)
                    row = run_task(spec, timeout_s=args.timeout)
                    rows.append(_summary(row, spec))
                    print(_progress(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _summary(row: dict, spec) -> dict:
    keep = ("status", "error", "system", "system_version", "model", "dataset", "framework", "framework_version",
            "epochs", "warmup", "threads", "epoch_time_median_s", "epoch_time_iqr_s", "forward_median_s",
            "backward_median_s", "optimizer_median_s", "prepare_time_s", "peak_memory_bytes", "test_accuracy",
            "dataset_nodes", "dataset_edges", "epoch_times")
    out = {k: row.get(k) for k in keep}
    out["dataset"] = spec.dataset  # the name as asked, failure rows included
    return out


def _progress(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['dataset']} {r['model']} {r['system']} {r['framework']}: {r['status']}: {r['error']}"
    return (f"{r['dataset']} {r['model']} {r['system']} {r['framework']}: "
            f"{r['epoch_time_median_s'] * 1e3:.1f} ms/epoch, {r['peak_memory_bytes'] / 2**20:.1f} MiB")


# ----------------------------------------------------------------- rendering
def _ms(r: dict | None) -> str:
    if r is None:
        return "-"
    if r["status"] != "ok":
        return r["status"]
    median, iqr = r["epoch_time_median_s"], r["epoch_time_iqr_s"]
    flag = f" (! {iqr / median:.0%})" if median > 0 and iqr / median > 0.10 else ""
    return f"{median * 1e3:.1f}{flag}"


def _mib(r: dict | None) -> str:
    return f"{r['peak_memory_bytes'] / 2**20:.1f}" if r and r["status"] == "ok" else "-"


def _acc(r: dict | None) -> str:
    return f"{r['test_accuracy']:.3f}" if r and r["status"] == "ok" else "-"


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
        "pre-training baseline in MiB. Each run is its own process; `(! XX%)` flags IQR/median above 10 %.",
        "",
        "| dataset | model | system | torch ms | tensorflow ms | tf/torch | torch MiB | tensorflow MiB "
        "| torch acc | tensorflow acc |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    seen = []
    for r in rows:
        key = (r["dataset"], r["model"], r["system"])
        if key not in seen:
            seen.append(key)
    for dataset, model, system in seen:
        t, f = (keyed.get((dataset, model, system, fw)) for fw in FRAMEWORKS)
        ratio = "-"
        if t and f and t["status"] == f["status"] == "ok" and t["epoch_time_median_s"] > 0:
            ratio = f"{f['epoch_time_median_s'] / t['epoch_time_median_s']:.2f}"
        lines.append(f"| {dataset} | {model} | {system} | {_ms(t)} | {_ms(f)} | {ratio} | {_mib(t)} | {_mib(f)} "
                     f"| {_acc(t)} | {_acc(f)} |")
    failures = [r for r in rows if r["status"] != "ok"]
    if failures:
        lines += ["", "Failed runs:", ""]
        lines += [f"- {r['dataset']} {r['model']} {r['system']} {r['framework']}: {r['status']}: {r['error']}"
                  for r in failures]
    return "\n".join(lines) + "\n"


def _meta(args) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    from gnnbench.environment import cpu_model

    versions = {}
    for package, dist in (("torch", "torch"), ("tensorflow", "tensorflow-cpu"), ("numba", "numba")):
        try:
            versions[package] = version(dist)
        except PackageNotFoundError:
            try:
                versions[package] = version(package)
            except PackageNotFoundError:
                versions[package] = "not installed"
    return {"epochs": args.epochs, "warmup": args.warmup, "threads": args.threads, "seed": args.seed,
            "models": args.models, "cpu": cpu_model(), "versions": versions}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small rmat graph (default epochs stay as given)")
    p.add_argument("--models", default="gcn,gat", help="comma-separated models (default: gcn,gat)")
    p.add_argument("--systems", default=None, help="comma-separated systems (default: every one with both glues)")
    p.add_argument("--datasets", default=None, help="comma-separated datasets (default: sbm and a mid-size rmat)")
    p.add_argument("--epochs", type=int, default=30, help="epochs per run, warm-ups included (default: 30)")
    p.add_argument("--warmup", type=int, default=5, help="untimed first epochs (default: 5)")
    p.add_argument("--threads", type=int, default=None, help="threads per run (default: the frameworks' own)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run (default: 1800)")
    p.add_argument("--out", default=str(ROOT / "results" / "bench_frameworks"),
                   help="output path without suffix (default: results/bench_frameworks)")
    args = p.parse_args(argv)

    from gnnbench.frameworks import framework_available

    for fw in FRAMEWORKS:
        reason = framework_available(fw)
        if reason:
            print(f"bench_frameworks: {reason}", file=sys.stderr)
            return 2
    meta = _meta(args)
    rows = run_all(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": rows}, indent=1))
    out.with_suffix(".md").write_text(render(rows, meta))
    print(render(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
