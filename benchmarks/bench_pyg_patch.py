"""PyG in two lines: PyG's own GCN, GraphSAGE and GIN trained with and without `isplib.patch_pyg()` (issue 4).

A PyG user's script, not gnnbench's loop: two PyG conv layers (hidden 64, ReLU,
dropout 0.5), Adam, full-batch cross-entropy on RMAT with 2^17 nodes, 4M edges
and 128 features. Three ways to hand PyG the graph, each in its own process
under the same allocator and 2 threads, interleaved by model:

* `edge_index`: PyG's default message passing (gather, then scatter);
* `sparse`: a `torch.sparse` CSR adjacency, PyG's own `spmm` (MKL);
* `sparse + patch_pyg`: the same, after `from gnnbench.systems import isplib; isplib.patch_pyg()`.

Warm-up epochs (first-call work: PyG's cached GCN norm, isplib's transpose,
numba's compilation) are excluded. Writes results/bench_pyg_patch.{md,json}.

    python benchmarks/bench_pyg_patch.py [--quick] [--epochs 12]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import provenance, versions, write_results  # noqa: E402

MODELS = ("gcn", "sage", "gin")
MODES = ("edge_index", "sparse", "sparse + patch_pyg")
FULL = "rmat:nodes=131072,edges=4000000,features=128,classes=8"
QUICK = "rmat:nodes=16384,edges=500000,features=128,classes=8"
WARMUP = 2


def _model(name: str, in_dim: int, hidden: int, classes: int):
    import torch
    from torch_geometric.nn import GCNConv, GINConv, SAGEConv

    def conv(i, o):
        if name == "gcn":
            return GCNConv(i, o, cached=True)
        if name == "sage":
            return SAGEConv(i, o, aggr="mean")
        return GINConv(torch.nn.Sequential(torch.nn.Linear(i, o), torch.nn.ReLU(), torch.nn.Linear(o, o)))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = conv(in_dim, hidden), conv(hidden, classes)

        def forward(self, x, graph):
            x = torch.nn.functional.dropout(x, 0.5, self.training)
            x = torch.relu(self.conv1(x, graph))
            x = torch.nn.functional.dropout(x, 0.5, self.training)
            return self.conv2(x, graph)

    return Net()


def one(model: str, mode: str, dataset: str, epochs: int) -> dict:
    """Train in this process and return the timings (run by `--one` in a fresh worker)."""
    import numpy as np
    import torch

    from gnnbench.datasets import load_dataset

    torch.manual_seed(0)
    data = load_dataset(dataset)
    src, dst = data.graph.edges()
    n = data.graph.num_nodes
    x = torch.from_numpy(np.ascontiguousarray(data.features, dtype=np.float32))
    y = torch.from_numpy(np.asarray(data.labels, dtype=np.int64))
    train = torch.from_numpy(np.asarray(data.train_mask))
    edge_index = torch.from_numpy(np.stack([src, dst]).astype(np.int64))
    if mode == "edge_index":
        graph = edge_index
    else:  # adj_t: row i holds the sources of the edges into i, as PyG's sparse path expects
        graph = torch.sparse_coo_tensor(torch.stack([edge_index[1], edge_index[0]]), torch.ones(len(src)),
                                        (n, n)).coalesce().to_sparse_csr()
    if mode == "sparse + patch_pyg":
        from gnnbench.systems import isplib

        isplib.patch_pyg()
    net = _model(model, x.shape[1], 64, int(y.max()) + 1)
    opt = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=5e-4)
    times = []
    for epoch in range(epochs):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(net(x, graph)[train], y[train])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
    timed = sorted(times[WARMUP:])
    return {"model": model, "mode": mode, "epoch_ms": 1e3 * timed[len(timed) // 2], "samples_ms":
            [1e3 * t for t in times[WARMUP:]], "first_epoch_ms": 1e3 * times[0], "final_loss": float(loss)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--epochs", type=int, default=12, help=f"epochs per run, {WARMUP} of them untimed")
    parser.add_argument("--out", default="results/bench_pyg_patch")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    dataset = QUICK if args.quick else FULL
    if args.one:
        print(json.dumps(one(args.one[0], args.one[1], dataset, args.epochs)))
        return
    from gnnbench.run.runner import worker_env

    env = worker_env(2, "auto")
    load = os.getloadavg()[0]
    rows = []
    for model in MODELS:
        for mode in MODES:
            cmd = [sys.executable, __file__, "--one", model, mode, "--epochs", str(args.epochs)]
            cmd += ["--quick"] if args.quick else []
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
            if proc.returncode != 0:
                rows.append({"model": model, "mode": mode, "error": proc.stderr.strip().splitlines()[-1]})
            else:
                rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(model, mode, rows[-1].get("epoch_ms", rows[-1].get("error")), flush=True)
    allocator = env.get("LD_PRELOAD", "").split("/")[-1] or "the C library's malloc"
    lines = ["# PyG in two lines: `isplib.patch_pyg()` under PyG's own models", "",
             f"Two PyG conv layers, hidden 64, dropout 0.5, Adam; {dataset}; {args.epochs} epochs ({WARMUP} "
             f"warm-up excluded), median; threads 2, each run its own process under {allocator}; load average "
             f"at start {load:.1f} on {os.cpu_count()} cores.", "",
             "| model | edge_index ms | sparse ms | sparse + patch_pyg ms | patch vs sparse | patch vs edge_index |",
             "|---|---:|---:|---:|---:|---:|"]
    for model in MODELS:
        got = {r["mode"]: r.get("epoch_ms") for r in rows if r["model"] == model}
        e, s, p = (got.get(m) for m in MODES)
        ratio = lambda a, b: f"{a / b:.2f}x" if a and b else "-"  # noqa: E731
        ms = lambda v: f"{v:.0f}" if v else "failed"  # noqa: E731
        lines.append(f"| {model} | {ms(e)} | {ms(s)} | {ms(p)} | {ratio(s, p)} | {ratio(e, p)} |")
    meta = provenance(dataset=dataset, epochs=args.epochs, warmup=WARMUP, threads=2, allocator=allocator,
                      load_average_start=load, versions=versions("torch", "torch_geometric"))
    write_results(args.out, {"meta": meta, "runs": rows}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
