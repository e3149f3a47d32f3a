"""PyG in two lines: PyG's own GCN, GraphSAGE and GIN trained with and without `isplib.patch_pyg()` (issue 4).

    python benchmarks/bench_pyg_patch.py [--quick] [--epochs 12] [--models gcn,sage,gin]

The runs are the campaign ``campaigns/bench_pyg_patch.toml``: the ``pyg-native``
baseline (PyG's own conv layers, hidden 64, in gnnbench's one training loop)
on RMAT with 2^17 nodes, 4M edges and 128 features, given the graph three
ways through its options (:mod:`gnnbench.peers.pyg_native`), each run in its
own process under the same allocator and 2 threads, interleaved by the sweep
and stored with its provenance in ``results/benchmarks.sqlite``:

* ``edge_index``: PyG's default message passing (gather, then scatter);
* ``sparse``: a ``torch.sparse`` CSR adjacency, PyG's own ``spmm`` (MKL);
* ``sparse + patch_pyg``: the same, after ``from gnnbench.systems import isplib; isplib.patch_pyg()``.

Warm-up epochs (first-call work: PyG's cached GCN norm, isplib's transpose,
numba's compilation) are excluded. Writes results/bench_pyg_patch.{md,json}.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import (NOISE_NOTE, ROOT, Table, campaign, epoch_ms, load_note, ok, out_path,  # noqa: E402
                     provenance, run_campaign, versions, write_results)

QUICK = "rmat:nodes=16384,edges=500000,features=128,classes=8"
#: column name -> pyg-native's options, in the campaign's [[matrix]] order
MODES = {"edge_index": {"adjacency": "edge_index"}, "sparse": {"adjacency": "sparse"},
         "sparse + patch_pyg": {"adjacency": "sparse", "patch": "isplib"}}


def mode_of(row: dict) -> str | None:
    """Which of :data:`MODES` a row ran (from its recorded options)."""
    options = (row.get("hyperparameters") or {}).get("system_options") or {}
    options = {"adjacency": "edge_index", **options}
    return next((name for name, given in MODES.items() if {"patch": "none", **given} == {"patch": "none", **options}),
                None)


def _ratio(a: dict | None, b: dict | None) -> str:
    if not (ok(a) and ok(b)) or not b["epoch_time_median_s"]:
        return "-"
    return f"{a['epoch_time_median_s'] / b['epoch_time_median_s']:.2f}x"


def render(rows: list[dict], meta: dict) -> str:
    """One line per model: the three modes' epoch times and the patch's speed-up over each other mode."""
    lines = ["# PyG in two lines: `isplib.patch_pyg()` under PyG's own models", "",
             f"pyg-native (PyG's own conv layers in gnnbench's loop), hidden 64; {meta['dataset']}; "
             f"{meta['epochs']} epochs ({meta['warmup']} warm-up excluded), median in ms; threads {meta['threads']}, "
             f"each run its own process under {', '.join(meta['allocators']) or '?'}. "
             f"{load_note(meta['load_average_start'], meta['load_average_end'])} {NOISE_NOTE}.", ""]
    models = list(dict.fromkeys(r["model"] for r in rows))
    cells = []
    for model in models:
        got = {mode_of(r): r for r in rows if r["model"] == model}
        e, s, p = (got.get(m) for m in MODES)
        cells.append([model, epoch_ms(e, 0), epoch_ms(s, 0), epoch_ms(p, 0), _ratio(s, p), _ratio(e, p)])
    header = ["model", "edge_index ms", "sparse ms", "sparse + patch_pyg ms", "patch vs sparse", "patch vs edge_index"]
    lines.append(Table(header, cells, [False] + [True] * 5).render("markdown").rstrip("\n"))
    failures = [r for r in rows if not ok(r)]
    if failures:
        lines += ["", "Failed runs:", ""]
        lines += [f"- {r['model']} {mode_of(r)}: {r['status']}: {r.get('error')}" for r in failures]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"use {QUICK} instead of the campaign's graph")
    parser.add_argument("--epochs", type=int, default=None, help="epochs per run, 2 of them untimed (default: 12)")
    parser.add_argument("--models", default=None, help="comma-separated models (default: gcn,sage,gin)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per run (default: 1800)")
    parser.add_argument("--results", default=None, help="results database (default: results/benchmarks.sqlite)")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "bench_pyg_patch"))
    args = parser.parse_args(argv)
    from gnnbench.results.frame import frame_records

    the_campaign = campaign("bench_pyg_patch", datasets=[QUICK] if args.quick else None, epochs=args.epochs,
                            timeout=args.timeout, models=args.models.split(",") if args.models else None)
    load_start = os.getloadavg()[0]
    rows = frame_records(run_campaign(the_campaign, args.results))
    config = the_campaign.matrices[0].configs[0]
    meta = provenance(dataset=the_campaign.matrices[0].axis("dataset")[0], epochs=config.epochs,
                      warmup=config.warmup, threads=config.threads,
                      allocators=sorted({str(r.get("allocator")) for r in rows if ok(r)}),
                      load_average_start=load_start, load_average_end=os.getloadavg()[0],
                      versions=versions("torch", "torch_geometric", "numba"))
    keep = ("id", "model", "status", "error", "allocator", "epoch_time_median_s", "epoch_time_iqr_s",
            "epoch_times", "prepare_time_s", "peak_memory_bytes", "first_loss", "final_loss", "git_commit",
            "system_hash")
    write_results(args.out, {"meta": meta, "runs": [{"mode": mode_of(r)} | {k: r.get(k) for k in keep}
                                                    for r in rows]}, render(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
