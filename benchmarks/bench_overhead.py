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

each in its own process: the campaign ``campaigns/bench_overhead.toml``, run
by the sweep (interleaved so that machine drift hits every system alike,
resumable, every row stored in ``results/benchmarks.sqlite`` with its
provenance). The
kernels are the library's either way; what differs is who builds the model
around them: gnnbench's model and generated autograd glue (the kernel
system), or the library's layers and autograd Functions (native). Their
ratio is the framework's own overhead, in time and in peak memory.

Columns: median epoch time (forward + backward + optimizer, warm-up epochs
excluded; ``(! XX%)`` flags a noisy measurement, see :mod:`gnnbench.core.measurement`), peak resident
memory above the pre-training baseline (Note [peak memory] in
:mod:`gnnbench.run.environment`), and final test accuracy. The default graph is
``rmat`` with 2^15 nodes and 1M edges (the issue's 2^17 nodes / 4M edges with
``--full``).

Results go to ``results/bench_overhead.json`` and ``results/bench_overhead.md``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import (NOISE_NOTE, Table, campaign, cpu_model, epoch_ms, load_note, mib, ok,  # noqa: E402
                     out_path, provenance, run_campaign, versions, write_results)

ROOT = Path(__file__).resolve().parents[1]
FULL = "rmat:nodes=131072,edges=4000000,features=128,classes=8"
#: (library, kernel system, native baseline)
PAIRS = (("PyG", "pyg", "pyg-native"), ("DGL", "dgl", "dgl-native"))
SCALE = ("reference", "mkl")


def _ms(r: dict | None, field: str = "epoch_time_median_s") -> str:
    """A phase median in ms; the epoch time with its noise mark."""
    if field == "epoch_time_median_s" or not ok(r):
        return epoch_ms(r)
    return f"{r[field] * 1e3:.1f}"


def _mib(r: dict | None) -> str:
    return mib(r["peak_memory_bytes"]) if ok(r) else "-"


_ok = ok


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
        f"pre-training baseline in MiB; each run is its own process; {NOISE_NOTE}. "
        "native/kernel > 1 means the library's own layers cost more than its kernels inside gnnbench's model.",
        load_note(meta["load_average_start"], meta["load_average_end"]),
        "",
    ]
    header = ["model"] + [f"{lib} {c}" if c.startswith(("kernel", "native ")) else c for lib, _, _ in PAIRS
                          for c in ("kernel ms", "native ms", "native/kernel time", "kernel MiB", "native MiB",
                                    "native/kernel memory")] + [f"{s} ms" for s in SCALE]
    table = []
    for model in models:
        cells = [model]
        for _, kernel, native in PAIRS:
            k, n = keyed.get((model, kernel)), keyed.get((model, native))
            cells += [_ms(k), _ms(n), _ratio(k, n, "epoch_time_median_s"), _mib(k), _mib(n),
                      _ratio(k, n, "peak_memory_bytes")]
        table.append(cells + [_ms(keyed.get((model, s))) for s in SCALE])
    lines.append(Table(header, table, [False] + [True] * (len(header) - 1)).render("markdown").rstrip("\n"))
    every = [[r["model"], r["system"], _ms(r), _ms(r, "forward_median_s"), _ms(r, "backward_median_s"),
              _ms(r, "optimizer_median_s"), f"{r['prepare_time_s']:.2f}" if _ok(r) else "-", _mib(r),
              f"{r['test_accuracy']:.3f}" if _ok(r) else "-", f"{r['first_loss']:.4f}" if _ok(r) else "-"]
             for r in rows]
    header = ["model", "system", "epoch ms", "forward ms", "backward ms", "optimizer ms", "prepare s", "peak MiB",
              "test acc", "first loss"]
    lines += ["", "Every run:", "", Table(header, every, [False, False] + [True] * 8).render("markdown").rstrip("\n")]
    notes = meta.get("skipped", []) + [f"{r['model']} {r['system']}: {r['status']}: {r['error']}"
                                       for r in rows if r["status"] != "ok"]
    if notes:
        lines += ["", "Not run or failed:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _meta(args, rows: list[dict]) -> dict:
    first = next((r for r in rows if ok(r)), {})
    return provenance(dataset=first.get("dataset", args.dataset), epochs=first.get("epochs"),
                      warmup=first.get("warmup"), threads=first.get("threads"), seed=first.get("seed"),
                      models=",".join(dict.fromkeys(r["model"] for r in rows)), cpu=cpu_model(),
                      versions=versions("torch", "torch_geometric", "dgl"),
                      skipped=[f"{r['model']} {r['system']}: {r['error']}" for r in rows
                               if r["status"] == "skipped"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--full", action="store_true", help=f"the issue's graph, {FULL}")
    p.add_argument("--dataset", default=None, help="any dataset name (default: the campaign's rmat, 2^15 nodes)")
    p.add_argument("--models", default=None, help="comma-separated models (default: all four)")
    p.add_argument("--epochs", type=int, default=None, help="epochs per run, warm-ups included (default: 8)")
    p.add_argument("--warmup", type=int, default=None, help="untimed first epochs (default: 3)")
    p.add_argument("--threads", type=int, default=None, help="threads per run (default: the frameworks' own)")
    p.add_argument("--seed", type=int, default=None, help="(default: 0)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (default: 1800)")
    p.add_argument("--results", default=None, help="results database (default: results/benchmarks.sqlite)")
    p.add_argument("--out", type=out_path, default=str(ROOT / "results" / "bench_overhead"),
                   help="output path without suffix (default: results/bench_overhead)")
    args = p.parse_args(argv)
    from gnnbench.results.frame import frame_records

    dataset = args.dataset or (FULL if args.full else None)
    the_campaign = campaign("bench_overhead", datasets=[dataset] if dataset else None,
                            models=args.models.split(",") if args.models else None, epochs=args.epochs,
                            warmup=args.warmup, threads=args.threads,
                            seeds=None if args.seed is None else [args.seed], timeout=args.timeout)
    args.dataset = the_campaign.matrices[0].axis("dataset")[0]
    load_start = os.getloadavg()[0]
    rows = frame_records(run_campaign(the_campaign, args.results))
    ran = [r for r in rows if r["status"] != "skipped"]
    meta = _meta(args, rows) | {"load_average_start": load_start, "load_average_end": os.getloadavg()[0]}
    keep = ("id", "status", "error", "system", "system_version", "system_hash", "verified", "model", "dataset",
            "threads", "allocator", "epochs", "warmup", "epoch_time_median_s", "epoch_time_iqr_s",
            "forward_median_s", "backward_median_s", "optimizer_median_s", "prepare_time_s", "peak_memory_bytes",
            "test_accuracy", "first_loss", "final_loss", "dataset_nodes", "dataset_edges", "epoch_times")
    write_results(args.out, {"meta": meta, "runs": [{k: r.get(k) for k in keep} for r in ran]}, render(ran, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
