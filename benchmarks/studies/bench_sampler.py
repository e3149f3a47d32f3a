"""Sampler speed: gnnbench's neighbour sampler against PyG's and DGL's, edges per second on one graph and fanouts.

Usage::

    python benchmarks/studies/bench_sampler.py --dataset rmat:like=reddit,scale=0.25 --fanouts 25,10 \
        --batch-size 1024 --rounds 5 --out results/studies/sampler

Each arm draws one epoch of batches (the training nodes in seeded shuffled
batches, :func:`gnnbench.sampling.epoch_batches`, the same seeds for every
arm) and the round times the whole epoch: sampling and conversion into the
block form every system trains on (Note [foreign samplers]). Arms run
interleaved, once per round, in one process (A B C A B C ...), after one
dropped warm-up round (numba's compilation, DGL's formats). An arm whose
library is missing (PyG's sampler needs pyg-lib or torch-sparse) is listed
with its reason. The table gives each arm's median epoch, sampled edges per
second (edges of all blocks / epoch time) and the median of the per-round
ratios to gnnbench's, with their range; ``--threads`` sets numba's and
torch's threads for every arm.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import out_path, provenance, write_results  # noqa: E402


def backend(name: str) -> str:
    """What draws an arm's neighbours: gnnbench's own kernels, DGL's, or PyG's on pyg-lib or torch-sparse."""
    from importlib.metadata import PackageNotFoundError, version

    def of(package: str) -> str | None:
        try:
            return version(package)
        except PackageNotFoundError:
            return None

    if name == "dgl":
        return f"DGL {of('dgl')}"
    if name == "pyg":
        under = next((f"{p} {of(p)}" for p in ("pyg-lib", "torch-sparse") if of(p)), "neither pyg-lib nor torch-sparse")
        return f"PyG {of('torch_geometric')} on {under}"
    return "gnnbench's own (numba)"


def render(title: str, samples: dict[str, list[float]], edges: dict[str, float], missing: dict[str, str],
           load: list[float], threads: int, backends: dict[str, str] | None = None) -> str:
    """The markdown table: per arm its median epoch, edges/s and per-round ratio of its edges/s to gnnbench's."""
    rounds = len(next(iter(samples.values())))
    lines = [f"# Sampler speed: {title}", "",
             f"{rounds} interleaved rounds in one process, {threads} thread(s), load {load[0]:.1f} before and "
             f"{load[1]:.1f} after. An epoch: every training node once, in seeded batches; the same batches for "
             f"every arm. Ratios are medians of per-round ratios of edges/s to gnnbench's (range).", "",
             "| sampler | library | epoch median ms | sampled edges / epoch | M edges/s | edges/s vs gnnbench |",
             "|---|---|---|---|---|---|"]
    backends = backends or {}
    base = np.array(samples["gnnbench"]) / edges["gnnbench"]  # seconds per edge, per round
    for name, times in samples.items():
        t = np.array(times)
        per_round = base / (t / edges[name])  # (edges/s of arm) / (edges/s of gnnbench)
        lines.append(f"| {name} | {backends.get(name, '')} | {np.median(t) * 1e3:.1f} | {edges[name]:,.0f} | "
                     f"{edges[name] / np.median(t) / 1e6:.2f} | {np.median(per_round):.2f}x "
                     f"({per_round.min():.2f}-{per_round.max():.2f}) |")
    lines += [f"| {name} | {backends.get(name, '')} | - | - | - | unavailable: {reason} |"
              for name, reason in missing.items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="rmat:like=reddit,scale=0.25")
    parser.add_argument("--fanouts", default="25,10")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=out_path, default="results/studies/sampler")
    args = parser.parse_args(argv)

    import numba
    import torch

    from gnnbench.datasets import load_dataset
    from gnnbench.sampling import SAMPLERS, check_fanouts, make_sampler, sampler_unavailable_reason

    fanouts = check_fanouts([int(f) for f in args.fanouts.split(",")])
    if args.threads:
        numba.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    dataset = load_dataset(args.dataset)
    train = np.flatnonzero(dataset.train_mask)
    missing = {name: reason for name in SAMPLERS if (reason := sampler_unavailable_reason(name))}
    arms = {name: make_sampler(name, dataset.graph, fanouts, args.seed) for name in SAMPLERS if name not in missing}
    samples: dict[str, list[float]] = {k: [] for k in arms}
    edges: dict[str, list[int]] = {k: [] for k in arms}
    load = [os.getloadavg()[0]]
    for r in range(args.rounds + 1):  # round 0 warms up and is dropped
        for name, sampler in arms.items():
            t0 = time.perf_counter()
            e = sum(batch.num_edges for batch in sampler.batches(train, args.batch_size, epoch=r))
            samples[name].append(time.perf_counter() - t0)
            edges[name].append(e)
    load.append(os.getloadavg()[0])
    samples = {k: v[1:] for k, v in samples.items()}
    mean_edges = {k: float(np.mean(v[1:])) for k, v in edges.items()}
    g = dataset.graph
    markdown = render(f"{args.dataset} ({g.num_nodes:,} nodes, {g.num_edges:,} edges, {train.shape[0]:,} training "
                      f"nodes), fanouts {args.fanouts}, batch size {args.batch_size}", samples, mean_edges, missing,
                      load, numba.get_num_threads(), {name: backend(name) for name in SAMPLERS})
    write_results(args.out, {**provenance(dataset=args.dataset, fanouts=list(fanouts), batch_size=args.batch_size,
                                          rounds=args.rounds, load=load, threads=numba.get_num_threads()),
                             "samples_s": samples, "edges_per_epoch": mean_edges, "unavailable": missing,
                             "libraries": {name: backend(name) for name in SAMPLERS}}, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
