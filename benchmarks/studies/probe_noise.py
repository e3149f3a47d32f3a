"""How steady is this machine? A random-gather loop timed again and again, on all threads and on one.

    python benchmarks/studies/probe_noise.py [--seconds 60] [--rows 200000] [--gathers 4000000] [--width 64]
        [--out results/machine_noise]

Note [machine noise]
    An SpMM over a graph larger than the caches is a random gather of rows of
    ``x``: its speed is the memory system's, and on a virtual machine that
    memory system (and the core beside ours) is shared with tenants we cannot
    see. This probe times exactly that work with nothing else in the process:
    ``gathers`` row gathers of ``width`` float32 (numba ``prange``, rows of 32
    gathers summed, the access pattern of a CSR SpMM with average degree 32),
    alternately on every thread numba has and on one thread, for ``seconds``.

    On the 2-core machine gnnbench is developed on, with nothing else running
    (results/studies/machine_noise.md, and the first run's figures in
    results/studies/study-notes.md), identical calls of the loop varied by more
    than two to one within a minute, and isplib's kernels in
    two identical GCN runs minutes apart differed as much: the
    machine is shared with tenants we cannot see. Hence
    the rules the benchmarks follow: compare systems only inside one sweep,
    whose rounds interleave them (Note [sweep order]); repeat rounds and take
    the median per system; quote ratios with their spread; never set a
    number from one campaign beside a number from another.

Writes ``OUT.json`` (every sample, with provenance) and ``OUT.md``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import ROOT, Table, out_path, provenance, write_results  # noqa: E402

from gnnbench.core.measurement import Measurement  # noqa: E402

DEGREE = 32  # gathers summed into one output row


@njit(parallel=True)  # no disk cache: tests load this script under another module name
def gather_rows(index, x, out):
    """``out[i] = sum of x[index[32 i + k]]`` for k < 32: a CSR SpMM's memory traffic, nothing else."""
    for i in prange(out.shape[0]):
        acc = np.zeros(x.shape[1], np.float32)
        for k in range(i * DEGREE, (i + 1) * DEGREE):
            acc += x[index[k]]
        out[i] = acc


def sample(seconds: float, rows: int, gathers: int, width: int, clock=time.perf_counter,
           wall=time.monotonic) -> dict[str, list[float]]:
    """Alternate one all-thread and one single-thread call until ``seconds`` have passed; seconds per call."""
    rng = np.random.default_rng(0)
    x = rng.random((rows, width), dtype=np.float32)
    index = rng.integers(0, rows, gathers - gathers % DEGREE)
    out = np.empty((index.size // DEGREE, width), np.float32)
    threads = numba.get_num_threads()
    gather_rows(index, x, out)  # compile and touch the pages
    samples: dict[str, list[float]] = {f"{threads} threads": [], "1 thread": []}
    end = wall() + seconds
    while wall() < end:
        for label, n in ((f"{threads} threads", threads), ("1 thread", 1)):
            numba.set_num_threads(n)
            start = clock()
            gather_rows(index, x, out)
            samples[label].append(clock() - start)
        numba.set_num_threads(threads)
    return samples


def render(samples: dict[str, list[float]], settings: dict, load: tuple[float, float]) -> str:
    rows = []
    for label, values in samples.items():
        m = Measurement(tuple(values), label)
        rows.append([label, len(values), f"{min(values) * 1e3:.0f}", f"{m.median * 1e3:.0f}",
                     f"{max(values) * 1e3:.0f}", f"{max(values) / min(values):.2f}x", f"{m.relative_spread:.0%}"])
    table = Table(["loop", "calls", "min ms", "median ms", "max ms", "max / min", "IQR / median"], rows)
    return (f"# Machine noise: one random-gather loop, timed again and again\n\n"
            f"{settings['gathers']:,} gathers of {settings['width']} float32 from a {settings['rows']:,}-row array "
            f"({settings['rows'] * settings['width'] * 4 / 2**20:.0f} MiB), {settings['seconds']:.0f} s, "
            f"load average {load[0]:.1f} at start and {load[1]:.1f} at end on {os.cpu_count()} cores. "
            f"Each call does the same work; every difference below is the machine's (Note [machine noise] in "
            f"benchmarks/studies/probe_noise.py).\n\n{table.render('markdown')}\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--gathers", type=int, default=4_000_000)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "machine_noise"))
    args = p.parse_args(argv)
    for name in ("seconds", "rows", "gathers", "width"):
        if not getattr(args, name) > 0:
            print(f"probe_noise: --{name} must be > 0 (got {getattr(args, name)})", file=sys.stderr)
            return 2
    settings = {"seconds": args.seconds, "rows": args.rows, "gathers": args.gathers, "width": args.width}
    start_load = os.getloadavg()[0]
    samples = sample(args.seconds, args.rows, args.gathers, args.width)
    load = (start_load, os.getloadavg()[0])
    markdown = render(samples, settings, load)
    write_results(args.out, {**provenance(**settings, load_average=load), "samples_s": samples}, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
