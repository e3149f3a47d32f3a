"""The typed aggregation of R-GCN per kernel: isplib's fused loop, DGL's RelGraphConv path, and the composed form.

    python benchmarks/studies/bench_typed.py [--quick] [--nodes 100000] [--degree 16] [--relations 1,3,64]
                                             [--widths 16,64] [--rounds 9] [--out results/studies/bench_typed]

The question: what fusing the relation loop buys at the operator level, apart from the rest of an R-GCN epoch.
On a random typed graph (``--nodes`` nodes, ``--degree`` in-edges each, every edge of a uniformly drawn
relation, ``norm`` R-GCN's ``1 / |N_r(i)|``) with ``D = K = width`` and one head, each round times, in turn:

* ``isplib``: ``typed_aggregate``, ``typed_aggregate_backward`` and ``typed_weight_backward`` of
  systems/isplib (Note [typed aggregation loop]);
* ``dgl``: the same three kernels of systems/dgl (Note [DGL typed aggregation]);
* ``composed``: what a system without the kernel runs (Note [typed aggregation composed] in
  gnnbench/frameworks/composed.py), on isplib's SpMM: per relation ``spmm(x, norm * [etype == r])`` then
  ``@ W[r]``; backward ``g @ W[r]^T`` through the transposed SpMM, and ``h_r^T g`` for the weight.

Rounds are interleaved (every kernel once a round, the order rotated), the first round is a warm-up, and
the table shows medians over rounds with their interquartile range. Figures are for a quiet machine only.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import out_path, provenance, versions, write_results  # noqa: E402


def typed_graph(nodes: int, degree: int, relations: int, seed: int):
    """A random graph with ``degree`` in-edges per node, relation drawn per edge, R-GCN's mean per relation."""
    from gnnbench.runtime.graph import Graph

    rng = np.random.default_rng(seed)
    dst = np.repeat(np.arange(nodes), degree)
    graph = Graph.from_edges(rng.integers(0, nodes, dst.size), dst, nodes, np.int64)
    etype = rng.integers(0, relations, graph.num_edges).astype(np.int64)
    rows = graph.edges()[1]
    per_pair = np.bincount(rows * relations + etype, minlength=nodes * relations)
    norm = (1.0 / per_pair[rows * relations + etype]).astype(np.float32)[:, None]
    return graph, etype, norm


def _isplib(graph, x, weight, norm, etype, grad_out):
    from gnnbench.systems.isplib import kernels as K

    fwd, bwd = graph.view(), graph.view(transposed=True)
    out = np.empty((graph.num_nodes, 1, weight.shape[2]), np.float32)
    grad_x, grad_w = np.empty_like(x), np.empty_like(weight)
    return {"forward": lambda: K.typed_aggregate(fwd, x, weight, norm, etype, out),
            "grad x": lambda: K.typed_aggregate_backward(bwd, grad_out, weight, norm, etype, grad_x),
            "grad W": lambda: K.typed_weight_backward(fwd, x, grad_out, norm, etype, weight, grad_w)}


def _dgl(graph, x, weight, norm, etype, grad_out):
    import torch

    from gnnbench.systems.dgl import kernels as K

    fwd, bwd = graph.view(), graph.view(transposed=True)
    fwd, bwd = fwd.with_prepared(K.prepare(fwd)), bwd.with_prepared(K.prepare(bwd))
    t = torch.from_numpy
    x, weight, norm, etype, grad_out = t(x), t(weight), t(norm), t(etype), t(grad_out)
    out = torch.empty(graph.num_nodes, 1, weight.shape[2])
    grad_x, grad_w = torch.empty_like(x), torch.empty_like(weight)
    return {"forward": lambda: K.typed_aggregate(fwd, x, weight, norm, etype, out),
            "grad x": lambda: K.typed_aggregate_backward(bwd, grad_out, weight, norm, etype, grad_x),
            "grad W": lambda: K.typed_weight_backward(fwd, x, grad_out, norm, etype, weight, grad_w)}


def _composed(graph, x, weight, norm, etype, grad_out):
    from gnnbench.systems.isplib import kernels as K

    fwd, bwd = graph.view(), graph.view(transposed=True)
    relations = weight.shape[0]
    h = [np.empty_like(x) for _ in range(relations)]     # what autograd keeps for the weight gradient
    out = np.empty((graph.num_nodes, 1, weight.shape[2]), np.float32)
    grad_x, part = np.empty_like(x), np.empty_like(x)
    grad_w = np.empty_like(weight)

    def masked(r):   # F.mul(norm, [etype == r]), made per call as the composed form makes it
        return norm * (etype == r)[:, None]

    def forward():
        out.fill(0)
        for r in range(relations):
            K.spmm_sum(fwd, x, masked(r), h[r], reduce="sum")
            out[:, 0] += h[r][:, 0] @ weight[r]

    def backward_x():
        grad_x.fill(0)
        for r in range(relations):
            K.spmm_sum_backward(bwd, np.ascontiguousarray((grad_out[:, 0] @ weight[r].T)[:, None]), masked(r), part)
            grad_x[...] += part

    def backward_w():
        for r in range(relations):
            grad_w[r] = h[r][:, 0].T @ grad_out[:, 0]

    return {"forward": forward, "grad x": backward_x, "grad W": backward_w}


KERNELS = {"isplib": _isplib, "dgl": _dgl, "composed": _composed}


def measure(graph, etype, norm, width: int, rounds: int, seed: int) -> dict[str, dict[str, list[float]]]:
    """Seconds per call, per kernel and phase, over interleaved rounds (the first dropped)."""
    rng = np.random.default_rng(seed)
    relations = int(etype.max()) + 1
    x = rng.standard_normal((graph.num_nodes, 1, width)).astype(np.float32)
    weight = rng.standard_normal((relations, width, width)).astype(np.float32)
    grad_out = rng.standard_normal((graph.num_nodes, 1, width)).astype(np.float32)
    calls = {name: make(graph, x, weight, norm, etype, grad_out) for name, make in KERNELS.items()}
    times = {name: {phase: [] for phase in phases} for name, phases in calls.items()}
    names = list(calls)
    for round_ in range(rounds + 1):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            for phase, call in calls[name].items():
                start = time.perf_counter()
                call()
                if round_:
                    times[name][phase].append(time.perf_counter() - start)
    return times


def _cell(samples: list[float]) -> str:
    q1, median, q3 = np.percentile(np.asarray(samples) * 1e3, [25, 50, 75])
    return f"{median:.2f} ({q1:.2f}-{q3:.2f})"


def render(rows: list[dict]) -> str:
    lines = ["| relations | width | kernel | forward ms | grad x ms | grad W ms |", "|---|---|---|---|---|---|"]
    for row in rows:
        t = row["seconds"]
        lines.append(f"| {row['relations']} | {row['width']} | {row['kernel']} | {_cell(t['forward'])} | "
                     f"{_cell(t['grad x'])} | {_cell(t['grad W'])} |")
    return "\n".join(lines) + "\n\nMedian over rounds (interquartile range), ms per call.\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--degree", type=int, default=16)
    ap.add_argument("--relations", default="1,3,64")
    ap.add_argument("--widths", default="16,64")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="toy size (2,000 nodes, 3 rounds): proves the script runs")
    ap.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "bench_typed"))
    args = ap.parse_args(argv)
    if args.quick:
        args.nodes, args.rounds = 2_000, 3
    rows = []
    for relations in (int(r) for r in args.relations.split(",")):
        graph, etype, norm = typed_graph(args.nodes, args.degree, relations, args.seed)
        for width in (int(w) for w in args.widths.split(",")):
            for kernel, seconds in measure(graph, etype, norm, width, args.rounds, args.seed).items():
                rows.append({"relations": relations, "width": width, "kernel": kernel, "seconds": seconds})
    payload = {**provenance(nodes=args.nodes, degree=args.degree, rounds=args.rounds, quick=args.quick),
               "versions": versions("numba", "torch", "dgl"), "rows": rows}
    write_results(args.out, payload, render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
