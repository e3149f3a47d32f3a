"""What the pages under an SpMM cost: the gathered features and the graph's indices on 4 KiB or 2 MiB pages.

One process, one graph, isplib's untuned width-specialised SpMM (``fixed/u4/pf16/nnz``,
cached stores) at width 64 (``--width``), timed in interleaved rounds on copies of the same
arrays that differ only in where they live:

* ``x`` (the gathered features) and the CSR ``indices`` each in fresh
  anonymous memory advised for 2 MiB pages (``MADV_HUGEPAGE``, then
  ``MADV_COLLAPSE`` where the kernel has it) or against them
  (``MADV_NOHUGEPAGE``);
* ``indices`` as a run reads them: the dataset cache's read-only memory map
  (``datasets/cache.py``), file-backed 4 KiB pages.

Note [pages under the gathers]
    An SpMM gathers feature rows at random, so a 4 KiB page of ``x`` is
    seldom hit twice before the TLB forgets it, and it walks ``indices``
    once, a page at a time. Under tcmalloc the framework's tensors are on 4
    KiB pages (this machine's transparent huge pages are ``madvise`` only);
    the graph's arrays are memory maps of the dataset cache, which isplib's
    kernels read in place until its ``prepare`` began to copy them (Note
    [resident graph] in ``systems/isplib/prepared.py``), while dgl-native and
    pyg-native copy the graph into structures of their own in ``prepare``
    (part of why DGL's prepare is 6-12x isplib's on Reddit's shape). How
    much of the map is resident, and how, is each process's own, which made
    it a candidate, not shown, for why isplib's epochs varied more between
    processes than DGL's.
    ``results/studies/page_size.md`` has the figures: on Reddit's shape the
    map cost a little more than an anonymous copy of the indices, the
    features on huge pages made the epoch faster, and whether the indices were on huge
    pages changed nothing in that run.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import ROOT, Parser, Table, ms, out_path, provenance, versions, write_results  # noqa: E402

REDDIT_SHAPE = "rmat:nodes=232965,edges=114600000,features=602,classes=41"
_HUGE = 2 << 20
_MADV_HUGEPAGE, _MADV_NOHUGEPAGE, _MADV_COLLAPSE = 14, 15, 25


def placed(array: np.ndarray, huge: bool) -> tuple[np.ndarray, mmap.mmap]:
    """A copy of ``array`` in fresh anonymous memory advised for (or against) 2 MiB pages, and its mapping."""
    libc = ctypes.CDLL(None, use_errno=True)
    nbytes = array.nbytes + _HUGE
    mapping = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    address = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
    start = (-address) % _HUGE  # the copy starts on a 2 MiB boundary
    libc.madvise(ctypes.c_void_p(address), ctypes.c_size_t(nbytes), _MADV_HUGEPAGE if huge else _MADV_NOHUGEPAGE)
    copy = np.frombuffer(mapping, dtype=np.uint8)[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    if huge:  # best effort: collapse now rather than when khugepaged gets round to it (Linux 6.1+)
        libc.madvise(ctypes.c_void_p(address + start), ctypes.c_size_t(array.nbytes // _HUGE * _HUGE), _MADV_COLLAPSE)
    copy.setflags(write=False)
    return copy, mapping


def huge_share(array: np.ndarray) -> float:
    """The fraction of ``array``'s resident bytes that sit on 2 MiB pages (``/proc/self/smaps``)."""
    lo, hi = array.ctypes.data, array.ctypes.data + array.nbytes
    huge = resident = 0
    inside = False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            field = line.split()
            if not field[0].endswith(":"):
                start, end = (int(v, 16) for v in field[0].split("-"))
                inside = start < hi and end > lo
            elif inside and field[0] == "AnonHugePages:":
                huge += int(field[1])
            elif inside and field[0] == "Rss:":
                resident += int(field[1])
    return huge / resident if resident else 0.0


def measure(dataset: str, rounds: int, width: int = 64) -> dict:
    import torch

    from gnnbench.datasets import load_dataset
    from gnnbench.systems.isplib.prepared import IsplibGraph
    from gnnbench.systems.isplib.variant import Dummies, Variant, line_aligned_empty, run_variant

    graph = load_dataset(dataset).graph
    indptr, indices = np.asarray(graph.indptr), np.asarray(graph.indices)
    prepared = IsplibGraph("forward", "", graph.num_nodes, indptr)
    dummies = Dummies.make(indices.dtype, np.float32)
    variant = Variant("fixed", 4, 16)
    features = torch.randn(graph.num_nodes, width).numpy()  # a framework tensor, as a run gathers
    out = line_aligned_empty((graph.num_nodes, width), np.float32)
    mappings = []
    x_pages = {}
    index_pages = {"the dataset's memory map": indices}
    for huge in (False, True):
        x, m = placed(features, huge)
        i, n = placed(indices, huge)
        mappings += [m, n]
        x_pages["2 MiB" if huge else "4 KiB"] = x
        index_pages["2 MiB" if huge else "4 KiB"] = i
    cases = {(xk, ik): (x, i) for xk, x in x_pages.items() for ik, i in index_pages.items()}
    call = lambda x, i: run_variant(variant, prepared.bounds_for(variant), indptr, i, None, None, x, out,  # noqa: E731
                                    None, None, dummies)
    reference = None
    for x, i in cases.values():
        call(x, i)
        reference = out.copy() if reference is None else reference
        if not np.array_equal(out, reference):
            raise AssertionError("the same SpMM on moved copies gave different results")
    samples: dict = {key: [] for key in cases}
    for _ in range(rounds):
        for key, (x, i) in cases.items():
            t0 = time.perf_counter()
            call(x, i)
            samples[key].append(time.perf_counter() - t0)
    from gnnbench.core.measurement import Measurement

    rows = []
    for (xk, ik), ts in samples.items():
        m = Measurement(tuple(ts), label=f"{xk}/{ik}")
        x, i = cases[(xk, ik)]
        rows.append({"x_pages": xk, "indices_pages": ik, "median_s": m.median, "iqr_s": m.iqr, "noise": m.warning,
                     "x_on_2MiB": huge_share(x), "indices_on_2MiB": huge_share(i)})
    return {"dataset": dataset, "nodes": graph.num_nodes, "edges": graph.num_edges, "width": width,
            "variant": variant.label, "rows": rows}


def render(report: dict) -> str:
    base = next(r for r in report["rows"] if r["x_pages"] == "4 KiB" and r["indices_pages"] == "4 KiB")
    cells = [[r["x_pages"], r["indices_pages"], f"{ms(r['median_s'])} {r['noise']}".rstrip(), ms(r["iqr_s"]),
              f"{r['median_s'] / base['median_s']:.2f}x", f"{r['x_on_2MiB']:.0%}", f"{r['indices_on_2MiB']:.0%}"]
             for r in report["rows"]]
    table = Table(["x (features)", "indices", "median ms", "IQR ms", "vs 4 KiB / 4 KiB", "x on 2 MiB",
                   "indices on 2 MiB"], cells, [False, False] + [True] * 5)
    return "\n".join([
        "# What the pages under an SpMM cost", "",
        f"{report['dataset']} ({report['nodes']:,} nodes, {report['edges']:,} edges), width {report['width']}, "
        f"isplib `{report['variant']}`, {report['rounds']} interleaved rounds in one process, allocator "
        f"{report['allocator']}, commit {report['git_commit']}. Load average {report['load'][0]:.1f} at start, "
        f"{report['load'][1]:.1f} at end on {os.cpu_count()} cores. The last two columns say how much of each "
        "copy the kernel actually put on 2 MiB pages (`/proc/self/smaps`). Note [pages under the gathers] in "
        "`benchmarks/studies/bench_page_size.py` says why it matters.", "",
        table.render("markdown")])


def main(argv: list[str] | None = None) -> int:
    from gnnbench.errors import UserError

    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default=REDDIT_SHAPE, help="dataset (default: Reddit's shape)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--width", type=int, default=64, help="feature width (default 64, the hidden layer's)")
    parser.add_argument("--allocator", default="auto", help="allocator to measure under (Note [allocator])")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "page_size"),
                        help="output path without suffix")
    try:
        args = parser.parse_args(argv)
        if args.rounds < 1 or args.width < 1:
            raise UserError(f"--rounds and --width must be at least 1 (got {args.rounds}, {args.width})")
        from gnnbench.run.allocator import run_under

        allocator = run_under(args.allocator)
        load = os.getloadavg()[0]
        report = measure(args.dataset, args.rounds, args.width)
    except UserError as error:
        print(f"bench_page_size: {error}", file=sys.stderr)
        return 2
    report.update(provenance(rounds=args.rounds, allocator=allocator, load=(load, os.getloadavg()[0]),
                             versions=versions("numpy", "numba", "torch")))
    write_results(args.out, report, render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
