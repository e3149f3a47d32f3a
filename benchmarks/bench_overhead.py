"""Framework overhead: each peer library as a kernel system against its own native model.

    python benchmarks/bench_overhead.py [--full] [--models gcn,gat,gin,sage] [--epochs 8]

For each model, the same training task (same data, hyperparameters, initial
parameters and loop; see Note [native model parity] in :mod:`gnnbench.peers`)
runs on

* ``pyg`` (PyG's scatter aggregation plugged into gnnbench's model) and
  ``pyg-native`` (PyG's ``GCNConv``/``GATConv``/``GINConv``/``SAGEConv``),
* ``dgl`` (DGL's ``gspmm``/``gsddmm``/``edge_softmax`` in gnnbench's model) and
  ``dgl-native`` (DGL's ``GraphConv``/``GATConv``/``GINConv``/``SAGEConv``),
* ``reference`` and ``mkl`` for scale,

each in its own process (:func:`gnnbench.runner.run_task`), the kernel system
and its native twin back to back so that machine drift hits both alike. The
kernels are the library's either way; what differs is who builds the model
around them: gnnbench's model and generated autograd glue (the kernel
system), or the library's layers and autograd Functions (native). Their
ratio is the framework's own overhead, in time and in peak memory.

Columns: median epoch time (forward + backward + optimizer, warm-up epochs
excluded; ``(! XX%)`` flags an IQR above 10 % of the median), peak resident
memory above the pre-training baseline (Note [peak memory] in
:mod:`gnnbench.environment`), and final test accuracy. The default graph is
``rmat`` with 2^15 nodes and 1M edges (the issue's 2^17 nodes / 4M edges with
``--full``).

Results go to ``results/bench_overhead.json`` and ``results/bench_overhead.md``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASETS = {"full": "rmat:nodes=131072,edges=4000000,features=128,classes=8",
            "default": "rmat:nodes=32768,edges=1000000,features=128,classes=8"}
#: (library, kernel system, native baseline)
PAIRS = (("PyG", "pyg", "pyg-native"), ("DGL", "dgl", "dgl-native"))
SCALE = ("reference", "mkl")
MODELS = ("gcn", "gat", "gin", "sage")


def available_systems(names) -> tuple[list[str], list[str]]:
    """``(runnable, skipped-with-reason)`` among ``names`` on this machine's CPU."""
    from gnnbench.registry import system_info

    runnable, skipped = [], []
    for name in names:
        reason = system_info(name).unavailable_reason("torch", "cpu")
        (skipped.append(f"{name}: {reason}") if reason else runnable.append(name))
    return runnable, skipped


def run_all(args, systems: list[str]) -> list[dict]:
    from gnnbench.harness import TaskSpec
    from gnnbench.runner import run_task

    rows = []
    for model in args.models.split(","):
        for system in systems:
            spec = TaskSpec(system=system, model=model, dataset=args.dataset, epochs=args.epochs,
                            warmup=args.warmup, threads=args.threads, seed=args.seed)
            row = run_task(spec, timeout_s=args.timeout)
            rows.append(_summary(row, spec))
            print(_progress(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _order(systems: list[str]) -> list[str]:
    """Kernel system then its native twin, pair by pair, then the scale systems."""
    ordered = [s for _, kernel, native in PAIRS for s in (kernel, native)] + list(SCALE)
    return [s for s in ordered if s in systems]


def _summary(row: dict, spec) -> dict:
    keep = ("status", "error", "system", "system_version", "model", "threads", "epochs", "warmup",
            "epoch_time_median_s", "epoch_time_iqr_s", "forward_median_s", "backward_median_s",
            "optimizer_median_s", "prepare_time_s", "peak_memory_bytes", "test_accuracy", "first_loss",
            "final_loss", "dataset_nodes", "dataset_edges", "epoch_times")
    out = {k: row.get(k) for k in keep}
    out["dataset"] = spec.dataset
    return out


def _progress(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['model']} {r['system']}: {r['status']}: {r['error']}"
    return (f"{r['model']} {r['system']}: {r['epoch_time_median_s'] * 1e3:.1f} ms/epoch, "
            f"{r['peak_memory_bytes'] / 2**20:.1f} MiB")


# ----------------------------------------------------------------- rendering
def _ok(r: dict | None) -> bool:
    return bool(r) and r["status"] == "ok"


def _ms(r: dict | None, field: str = "epoch_time_median_s") -> str:
    if r is None:
        return "-"
    if r["status"] != "ok":
        return r["status"]
    median = r[field]
    flag = ""
    if field == "epoch_time_median_s" and median > 0 and r["epoch_time_iqr_s"] / median > 0.10:
        flag = f" (! {r['epoch_time_iqr_s'] / median:.0%})"
    return f"{median * 1e3:.1f}{flag}"


def _mib(r: dict | None) -> str:
    return f"{r['peak_memory_bytes'] / 2**20:.1f}" if _ok(r) else "-"


def _ratio(a: dict | None, b: dict | None, field: str) -> str:
    if _ok(a) and _ok(b) and a[field] and a[field] > 0:
        return f"{b[field] / a[field]:.2f}"
    return "-"


def render(rows: list[dict], meta: dict) -> str:
    """Markdown: the kernel-vs-native overhead table, then every run in detail."""
    keyed = {(r["model"], r["system"]): r for r in rows}
    models = list(dict.fromkeys(r["model"] for r in rows))
    any_row = next((r for r in rows if _ok(r)), None)
    size = (f"{any_row['dataset_nodes']} nodes, {any_row['dataset_edges']} edges aggregated over"
            if any_row else "")
    lines = [
        "# Framework overhead: kernel system vs native model of the same library",
        "",
        f"Dataset `{meta['dataset']}` ({size}); PyTorch {meta['versions']['torch']}, "
        f"PyG {meta['versions']['torch_geometric']}, DGL {meta['versions']['dgl']}; {meta['epochs']} epochs "
        f"({meta['warmup']} warm-up, not timed), threads {meta['threads'] or 'default'}, seed {meta['seed']}; "
        f"CPU: {meta['cpu']}.",
        "Epoch = forward + backward + optimizer, median over timed epochs in ms; memory = peak RSS above the "
        "pre-training baseline in MiB; each run is its own process; `(! XX%)` flags IQR/median above 10 %. "
        "native/kernel > 1 means the library's own layers cost more than its kernels inside gnnbench's model.",
        "",
    ]
    header = "| model |" + "".join(f" {lib} kernel ms | {lib} native ms | native/kernel time | {lib} kernel MiB "
                                  f"| {lib} native MiB | native/kernel memory |" for lib, _, _ in PAIRS)
    header += "".join(f" {s} ms |" for s in SCALE)
    lines += [header, "|---|" + "---:|" * (6 * len(PAIRS) + len(SCALE))]
    for model in models:
        cells = []
        for _, kernel, native in PAIRS:
            k, n = keyed.get((model, kernel)), keyed.get((model, native))
            cells += [_ms(k), _ms(n), _ratio(k, n, "epoch_time_median_s"), _mib(k), _mib(n),
                      _ratio(k, n, "peak_memory_bytes")]
        cells += [_ms(keyed.get((model, s))) for s in SCALE]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    lines += ["", "Every run:", "",
              "| model | system | epoch ms | forward ms | backward ms | optimizer ms | prepare s | peak MiB "
              "| test acc | first loss |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        prepare = f"{r['prepare_time_s']:.2f}" if _ok(r) else "-"
        acc = f"{r['test_accuracy']:.3f}" if _ok(r) else "-"
        loss = f"{r['first_loss']:.4f}" if _ok(r) else "-"
        lines.append(f"| {r['model']} | {r['system']} | {_ms(r)} | {_ms(r, 'forward_median_s')} | "
                     f"{_ms(r, 'backward_median_s')} | {_ms(r, 'optimizer_median_s')} | {prepare} | {_mib(r)} | "
                     f"{acc} | {loss} |")
    notes = meta.get("skipped", []) + [f"{r['model']} {r['system']}: {r['status']}: {r['error']}"
                                       for r in rows if r["status"] != "ok"]
    if notes:
        lines += ["", "Not run or failed:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _meta(args, skipped: list[str]) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    from gnnbench.environment import cpu_model

    versions = {}
    for package in ("torch", "torch_geometric", "dgl"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = "not installed"
    return {"dataset": args.dataset, "epochs": args.epochs, "warmup": args.warmup, "threads": args.threads,
            "seed": args.seed, "models": args.models, "cpu": cpu_model(), "versions": versions,
            "skipped": skipped}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--full", action="store_true", help=f"the issue's graph, {DATASETS['full']}")
    p.add_argument("--dataset", default=None, help=f"any dataset name (default: {DATASETS['default']})")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated models (default: all four)")
    p.add_argument("--epochs", type=int, default=8, help="epochs per run, warm-ups included (default: 8)")
    p.add_argument("--warmup", type=int, default=3, help="untimed first epochs (default: 3)")
    p.add_argument("--threads", type=int, default=None, help="threads per run (default: the frameworks' own)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run (default: 1800)")
    p.add_argument("--out", default=str(ROOT / "results" / "bench_overhead"),
                   help="output path without suffix (default: results/bench_overhead)")
    args = p.parse_args(argv)
    args.dataset = args.dataset or DATASETS["full" if args.full else "default"]

    systems, skipped = available_systems(_order([s for _, k, n in PAIRS for s in (k, n)] + list(SCALE)))
    meta = _meta(args, skipped)
    rows = run_all(args, systems)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": rows}, indent=1))
    out.with_suffix(".md").write_text(render(rows, meta))
    print(render(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
