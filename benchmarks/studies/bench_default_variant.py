"""isplib's untuned SpMM on a big graph: the width-specialised default against the generic kernel, DGL and MKL.

Usage::

    python benchmarks/studies/bench_default_variant.py --widths 8,16,64,128 --rounds 15 \
        --out results/studies/bench_default_variant

What a run uses before (or without) tuning is the default variant (Note
[untuned default] in systems/isplib/variant.py): on a view of at least 2^20
nonzeros the width-specialised kernel, below it the generic one. This times,
per width, on the 4M-edge R-MAT graph, unweighted SpMM sum through isplib's
own kernel entry (``spmm_sum`` on a prepared view, the call a training run
makes) with

* ``isplib default``: a prepare with no tuning entry, i.e. what a run meets;
* ``isplib generic``: the same view forced to the generic kernel (the default
  before Note [untuned default]);
* ``DGL copy_u_sum`` and ``torch.sparse.mm CSR (MKL)``, each allocating its
  output as it does in a training step.

Every arm runs once per round, in one process, interleaved, so the machine's
drift is shared (Note [machine noise] in benchmarks/studies/probe_noise.py); each
arm's first call (compilation, format building) is untimed and reported apart.
The table gives medians and, against DGL, the median of the per-round ratios
with their range. Outputs are checked against SciPy's float64 product first.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import Parser, count, out_path, provenance, write_results  # noqa: E402

DATASET = "rmat:nodes=131072,edges=4000000,features=128,classes=8"
BASE = "DGL copy_u_sum"


def widths(text: str) -> list[int]:
    """``--widths``: comma-separated whole numbers of at least 1."""
    return [count(w) for w in text.split(",")]


def render(title: str, samples: dict[int, dict[str, list[float]]], first_call_s: dict[int, dict[str, float]],
           labels: dict[int, str], load: list[float], threads: int) -> str:
    """One table per width: median ms, the ratio to DGL (median of per-round ratios, range), first call."""
    rounds = len(next(iter(next(iter(samples.values())).values())))
    lines = ["# isplib's untuned SpMM: width-specialised default against the generic kernel, DGL and MKL", "",
             f"{title}; unweighted SpMM sum, float32. {rounds} interleaved rounds in one process, "
             f"numba threads {threads}, load {load[0]:.1f} before and {load[1]:.1f} after. `vs DGL` is DGL's time "
             f"over the arm's, the median of per-round ratios (range): above 1 the arm is faster. `first call` is "
             f"the untimed call before the rounds (compilation, or loading it from numba's disk cache).", ""]
    for width, arms in samples.items():
        lines += [f"## width {width} (isplib default: `{labels[width]}`)", "",
                  "| arm | median ms | vs DGL | first call s |", "|---|---:|---:|---:|"]
        base = np.array(arms[BASE])
        for name, times in arms.items():
            r = base / np.array(times)
            lines.append(f"| {name} | {np.median(times) * 1e3:.1f} | {np.median(r):.2f}x ({r.min():.2f}-{r.max():.2f})"
                         f" | {first_call_s[width][name]:.2f} |")
        lines.append("")
    return "\n".join(lines)


def _arms(graph, width: int, rng: np.random.Generator):
    """``(arms, default label, float64 reference)`` for one width; each arm returns its output."""
    import torch

    from gnnbench.peers.dgl_shim import dgl
    from gnnbench.systems.isplib import kernels as K
    from gnnbench.systems.isplib.prepared import prepare
    from gnnbench.systems.isplib.variant import Variant
    import scipy.sparse as sp

    n = graph.num_nodes
    view = graph.view()
    x = rng.standard_normal((n, 1, width), dtype=np.float32)
    nowhere = os.path.join(tempfile.mkdtemp(prefix="gnnbench-no-tuning-"), "none.json")  # no entry: the default
    untuned = view.with_prepared(prepare(view, cache_path=nowhere))
    generic_prep = prepare(view, cache_path=nowhere)
    generic_prep.set_variants({("unweighted", "sum", width, "float32"): Variant()})
    generic = view.with_prepared(generic_prep)
    out_default, out_generic = np.empty_like(x), np.empty_like(x)
    xt = torch.from_numpy(x[:, 0, :])
    indptr, indices = np.asarray(view.indptr), np.asarray(view.indices)
    csr = torch.sparse_csr_tensor(torch.from_numpy(indptr.astype(np.int64)),
                                  torch.from_numpy(indices.astype(np.int64)), torch.ones(graph.num_edges), size=(n, n))
    src, dst = (torch.from_numpy(a) for a in graph.edges())
    g = dgl.graph((src, dst), num_nodes=n)
    g.create_formats_()
    arms = {
        "isplib default": lambda: (K.spmm_sum(untuned, x, None, out_default, reduce="sum"), out_default[:, 0])[1],
        "isplib generic": lambda: (K.spmm_sum(generic, x, None, out_generic, reduce="sum"), out_generic[:, 0])[1],
        BASE: lambda: dgl.ops.copy_u_sum(g, xt).numpy(),
        "torch.sparse.mm CSR (MKL)": lambda: torch.sparse.mm(csr, xt).numpy(),
    }
    a = sp.csr_matrix((np.ones(graph.num_edges), indices, indptr), shape=(n, n))
    label = untuned.prepared.variant(width, np.dtype(np.float32), record=False).label
    return arms, label, a @ x[:, 0].astype(np.float64)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=DATASET, help=f"graph (default: {DATASET})")
    parser.add_argument("--widths", type=widths, default=[8, 16, 64, 128],
                        help="comma-separated (default: 8,16,64,128)")
    parser.add_argument("--rounds", type=count, default=15, help="interleaved timed rounds (default: 15)")
    parser.add_argument("--out", type=out_path, default="results/studies/bench_default_variant",
                        help="output path without suffix")
    from gnnbench.errors import UserError

    try:
        args = parser.parse_args(argv)
    except UserError as error:
        print(f"bench_default_variant: {error}", file=sys.stderr)
        return 2
    import numba
    import torch

    from gnnbench.datasets import load_dataset

    torch.set_num_threads(numba.get_num_threads())
    graph = load_dataset(args.dataset).graph
    rng = np.random.default_rng(0)
    load = [os.getloadavg()[0]]
    samples: dict[int, dict[str, list[float]]] = {}
    first_call: dict[int, dict[str, float]] = {}
    labels: dict[int, str] = {}
    for width in args.widths:
        arms, labels[width], want = _arms(graph, width, rng)
        first_call[width] = {}
        scale = max(1.0, float(np.abs(want).max()))
        for name, arm in arms.items():
            t0 = time.perf_counter()
            got = arm()
            first_call[width][name] = time.perf_counter() - t0
            if not np.allclose(got, want, rtol=1e-4, atol=1e-4 * scale):
                print(f"bench_default_variant: {name} disagrees with SciPy at width {width}", file=sys.stderr)
                return 1
        samples[width] = {k: [] for k in arms}
        for _ in range(args.rounds):
            for name, arm in arms.items():
                t0 = time.perf_counter()
                arm()
                samples[width][name].append(time.perf_counter() - t0)
    load.append(os.getloadavg()[0])
    title = f"{args.dataset} ({graph.num_edges:,} edges, {graph.num_nodes:,} nodes)"
    markdown = render(title, samples, first_call, labels, load, numba.get_num_threads())
    write_results(args.out, {**provenance(dataset=args.dataset, rounds=args.rounds, load=load),
                             "default_variant": labels, "first_call_s": first_call,
                             "samples_s": {str(w): s for w, s in samples.items()}}, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
