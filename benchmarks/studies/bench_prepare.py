"""Preparation at scale: the transpose on one core against every core, and isplib's prepare against DGL's build.

Usage::

    python benchmarks/studies/bench_prepare.py --dataset rmat:nodes=524288,edges=16000000,features=128,classes=8 \
        --rounds 5 --out results/studies/bench_prepare_16M

Every arm runs once per round, in one process, interleaved (A B C D A B C D ...),
so the machine's drift is shared (COMMON noise warning: numbers from different
processes or minutes are not comparable). The table gives each arm's median and
the median of the per-round ratios with their range. Arms, on the graph with
self loops (what GCN and the scaling campaign run on):

* ``transpose, one core``: the counting sort as it was before Note [parallel
  transpose] (``np.bincount`` and a serial scatter), kept here as the baseline;
* ``transpose, parallel``: :func:`gnnbench.runtime.csr_transpose.transpose_csr`;
* ``isplib prepare``: a fresh :class:`~gnnbench.runtime.graph.Graph` from the same
  CSR, its signature, both views and isplib's ``prepare`` of each (kernels
  already loaded: numba's disk cache is a constant, Note [prepare at scale]);
* ``DGL build``: ``dgl.graph`` from the edge arrays and ``create_formats_()``
  (COO, CSR and CSC, what its first epoch builds).
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


def _serial_transpose(indptr, indices, n):
    """The one-core baseline: the library's counting sort as one block on one thread, which is the
    serial sort that Note [parallel transpose] replaced (one histogram, one scatter in row order)."""
    import numba

    from gnnbench.runtime.csr_transpose import transpose_csr

    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return transpose_csr(indptr, indices, n, blocks=1)
    finally:
        numba.set_num_threads(previous)


def render(title: str, samples: dict[str, list[float]], load: list[float], threads: int) -> str:
    """The markdown table: each arm's median and samples, and the two ratios (medians of per-round ratios)."""
    med = {k: float(np.median(v)) for k, v in samples.items()}
    rounds = len(next(iter(samples.values())))

    def ratio(a, b):
        r = np.array(samples[a]) / np.array(samples[b])
        return f"{np.median(r):.2f}x ({r.min():.2f}-{r.max():.2f})"

    lines = [f"# Preparation at scale: {title}", "",
             f"{rounds} interleaved rounds in one process, numba threads {threads}, "
             f"load {load[0]:.1f} before and {load[1]:.1f} after. Medians; ratios are medians of per-round "
             f"ratios (range).", "", "| arm | median s | samples s |", "|---|---|---|"]
    lines += [f"| {k} | {med[k]:.3f} | {', '.join(f'{x:.2f}' for x in samples[k])} |" for k in samples]
    lines += ["", f"- transpose, one core / parallel: {ratio('transpose, one core', 'transpose, parallel')}",
              f"- isplib prepare / DGL build: {ratio('isplib prepare', 'DGL build')}", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="rmat:nodes=524288,edges=16000000,features=128,classes=8")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=out_path, default="results/studies/bench_prepare")
    args = parser.parse_args(argv)

    from gnnbench.peers.dgl_shim import dgl
    import numba
    import torch

    from gnnbench.datasets import load_dataset
    from gnnbench.runtime.csr_transpose import transpose_csr
    from gnnbench.runtime.graph import Graph
    from gnnbench.systems.isplib import kernels, prepare

    graph = load_dataset(args.dataset).graph.with_self_loops()
    indptr, indices, n = np.asarray(graph.indptr), np.asarray(graph.indices), graph.num_nodes
    src, dst = (torch.from_numpy(a) for a in graph.edges())
    kernels.warm_up(graph.index_dtype, np.float32)

    def isplib_prepare():
        g = Graph(indptr, indices, n)
        g.signature()
        return [prepare(g.view(transposed=t)) for t in (False, True)]

    def dgl_build():
        g = dgl.graph((src, dst), num_nodes=n)
        g.create_formats_()
        return g

    arms = {"transpose, one core": lambda: _serial_transpose(indptr, indices, n),
            "transpose, parallel": lambda: transpose_csr(indptr, indices, n),
            "isplib prepare": isplib_prepare, "DGL build": dgl_build}
    want = _serial_transpose(indptr, indices, n)
    assert all(np.array_equal(a, b) for a, b in zip(transpose_csr(indptr, indices, n), want)), "transposes differ"
    del want
    load = [os.getloadavg()[0]]
    samples: dict[str, list[float]] = {k: [] for k in arms}
    for _ in range(args.rounds + 1):  # the first round warms up and is dropped
        for name, arm in arms.items():
            t0 = time.perf_counter()
            out = arm()
            samples[name].append(time.perf_counter() - t0)
            del out
    load.append(os.getloadavg()[0])
    samples = {k: v[1:] for k, v in samples.items()}
    markdown = render(f"{args.dataset} with self loops ({graph.num_edges} edges, {n} nodes)", samples, load,
                      numba.get_num_threads())
    write_results(args.out, {**provenance(dataset=args.dataset, rounds=args.rounds, load=load),
                             "samples_s": samples,
                             "median_s": {k: float(np.median(v)) for k, v in samples.items()}}, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
