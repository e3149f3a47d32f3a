"""SpMM-sum micro-benchmark: isplib (auto-tuned numba) against PyTorch, PyG and DGL on the CPU.

    python benchmarks/studies/bench_spmm.py [--quick] [--processes P] [--rounds R] [--widths 32,64,128] [--allocator auto]

Graphs: R-MAT with 2^17 nodes and 4M directed edges (``gnnbench.datasets``
``rmat``, power law) and a uniform random graph with 200k nodes and ~4M
directed edges. For each graph and width ``F`` every system computes
``out = A x`` (``x`` float32 ``[N, F]``, unweighted sum over in-edges), is
checked against a float64 SciPy reference, then all systems run ``--rounds``
interleaved rounds (so machine drift and the neighbours' load are shared);
the table shows median milliseconds. Each process does all of that once, and
``--processes`` of them run one after another (Note [a process per round]).

Note [a process per round]
    A kernel's time varies more between processes than between the rounds of
    one: thread placement, memory layout, the neighbours' load, and here also
    the variant the tuner picks, which each process tunes afresh
    (Note [between-process statistics] in :mod:`gnnbench.core.statistics`).
    So the script runs itself ``--processes`` times (default
    ``MIN_PROCESSES``), one after another, each child timing every case over
    ``--rounds`` interleaved rounds and writing its report to a temporary
    file; the parent measures the bounds once and pools. A row's figure is
    the median of its per-process medians, its IQR the median of theirs,
    ``vs isplib`` the ratio of two figures with the two-level bootstrap
    interval of :func:`~gnnbench.core.statistics.speedup`, and a figure that
    :meth:`~gnnbench.core.statistics.Processes.note` calls unstable says why
    in its row. ``--processes 1`` measures in this process, and the table
    says that one process claims no interval.

Note [busy processes]
    A ratio measured beside a busy core measures the load: DGL's kernel
    splits rows statically over its OpenMP threads, so one busy core slows
    it far more than isplib's dynamic partition (issue 55: the published
    2.73x over DGL, measured at load 1.8-1.9, was 1.15-1.66x quiet). So each
    process records the machine around its timed rounds of every case, as a
    run row's ``machine_state`` does (:class:`~gnnbench.run.machine_state.
    MachineWindow`, Note [machine state]), and the pooled case carries each
    process's ``other_cpu_share``. A process above
    :data:`~gnnbench.core.stability.OTHER_CPU_LIMIT` is flagged: every row of
    its case says "busy machine" in its stability column
    (:meth:`~gnnbench.core.statistics.Processes.note`), the case's sentence
    lists the shares, and its headline sentence says it is not a headline.
    Contention is a finding of its own, measured as one (``--condition``-style
    runs beside the load generator), never folded into a kernel ratio.

Note [effective bandwidth]
    bytes moved = indices + indptr + gathered rows + output rows
    = ``s (E + N + 1) + 4 F (E + N)`` for ``s``-byte indices; GB/s is that
    over the median time. Bounds measured in the same run: STREAM triad
    (``a = b + s c`` on 100M float64 arrays, best of 5, all threads, 24
    bytes per element), a random 256-byte row gather (4M random rows of a
    1 GiB table), since an SpMM is a gather, not a stream, and the latency
    of dependent loads (Note [gather bounds]).

Note [gather bounds]
    Two rows of each table are not SpMMs: they run the tuned variant's own
    loop with no output rows, once over the graph's sources ("gathers
    alone") and once over ``p mod N`` ("in sequence": as many rows, read
    from ``x`` in order, ``E / N`` sweeps that the hardware prefetchers
    stream). The first is what the SpMM's gathers cost this loop; the gap
    to the second is what their random order costs. Where 1.5x the fastest
    peer is below even the in-order time, no order of the same gathers
    reaches it: only fewer rows fetched from memory would, that is rows
    reused from L2 across edges (Note [no feature tiles] and Note [software
    prefetch] in ``systems/isplib`` measured the ways to get them).

    The header gives the latency of a load that depends on the one before,
    over tables of 1, 4 and 32 MiB: inside L2, about what the shared last
    level keeps for this virtual machine, and the size of the features
    (16-98 MiB here). It says where ``x`` lives for a gather: a random
    line of a 32 MiB table costs a trip to memory, so a gather loop is
    bound by how many of those trips each core keeps in flight.

    Read against the target, the latency puts ``x`` in memory, not in the
    last level the virtual CPU reports, and the cells short of 1.5x DGL
    need fewer rows fetched from memory than even the in-order walk: reuse
    from L2 that the graph's order does not give, or (on the uniform graph)
    more lines in flight per core than this loop keeps. Software prefetch
    and narrower indices were probed and move none of them across. The
    reading, cell by cell, with its run's commit and load:
    ``results/studies/spmm-gap.md``.

    How much reuse from L2 the graphs offer, and what the short cells
    need of it, is ``benchmarks/studies/bench_gather_reuse.py``'s: it replays each
    thread's gathers through a simulated L2 under LRU, pinned hot rows and
    Belady's MIN (Note [reuse the target needs] there).

Results go to ``results/studies/bench_spmm.json`` and ``results/studies/bench_spmm.md``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import numba
import numpy as np
import scipy.sparse as sp
import torch
from numba import njit, prange

from gnnbench.core.measurement import Measurement
from gnnbench.core.stability import MIN_PROCESSES, OTHER_CPU_LIMIT
from gnnbench.core.statistics import CONFIDENCE, ONE_PROCESS, Processes, speedup
from gnnbench.run.bounds import measure_bounds, spmm_bytes
from gnnbench.run.machine_state import MachineWindow
from gnnbench.runtime.graph import Graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import (NOISE_NOTE, ROOT, Parser, count, ms, out_path, processes_of, provenance, run_script,  # noqa: E402
                     versions, write_results)


# ------------------------------------------------------------------ graphs
def rmat_graph(quick: bool) -> tuple[str, Graph]:
    nodes, edges = (16384, 500000) if quick else (131072, 4000000)
    name = f"rmat:nodes={nodes},edges={edges}"
    from gnnbench.datasets import load_dataset

    return name, load_dataset(name).graph


def uniform_graph(quick: bool) -> tuple[str, Graph]:
    from gnnbench.datasets.dataset import symmetric_graph

    nodes, edges = (25000, 500000) if quick else (200000, 4000000)
    rng = np.random.default_rng(0)
    src = rng.integers(0, nodes, edges // 2)
    dst = rng.integers(0, nodes, edges // 2)
    return f"uniform:nodes={nodes},edges~{edges}", symmetric_graph(src, dst, nodes)


# ------------------------------------------------------------- bandwidth
@njit(cache=True)
def _chase(nxt, steps):
    # one dependent load after another: each address is the previous load's value
    p = 0
    for _ in range(steps):
        p = nxt[p]
    return p


def load_latency_ns(table_mib: int, steps: int) -> float:
    """Nanoseconds a load takes when it depends on the one before, over one random cycle through
    every cache line of a ``table_mib`` MiB table (Note [gather bounds])."""
    lines = table_mib * 2**20 // 64
    order = np.random.default_rng(2).permutation(lines)
    nxt = np.zeros(lines * 8, dtype=np.int64)  # 8 int64 a line; slot 0 of each line points to the next line
    nxt[order * 8] = np.roll(order, -1) * 8
    _chase(nxt, steps)
    return min(_timed(lambda: _chase(nxt, steps)) for _ in range(3)) / steps * 1e9


def gathers_alone(graph: Graph, variant, x: np.ndarray, in_order: bool = False) -> Callable[[], object]:
    """The tuned variant's loop over the SpMM's edges, in CSR order, with no output rows.

    The same kernel and knobs run on the same ``indices`` cut into one row per
    thread, so every feature row is gathered exactly as the SpMM gathers it
    (same order, unroll and prefetch distance) and summed into one
    accumulator, while the per-row work (zeroing, the remainder of short rows,
    one store per output row) is gone. What an SpMM adds to it is the cost of
    its rows; what it takes is what the gathers cost this loop. A faster
    SpMM in CSR order needs a faster way to gather. This holds where the
    gathers miss L2 (the full-size graphs): on ``--quick``'s graphs the
    features stay in L2 and the loop is bound by its one long chain of adds,
    which an SpMM's short rows break, so it can take longer than the SpMM.

    ``in_order`` swaps the graph's sources for ``p mod N``: the same number of
    rows, read from ``x`` in sequence (``E / N`` sweeps over all of it), so
    the hardware prefetchers stream them (Note [gather bounds]).
    """
    from gnnbench.systems.isplib.variant import Dummies, line_aligned_empty, run_variant

    indices = np.asarray(graph.indices)
    if in_order:
        indices = (np.arange(indices.shape[0], dtype=np.int64) % graph.num_nodes).astype(indices.dtype)
    threads = numba.get_num_threads()
    rows = np.linspace(0, indices.shape[0], threads + 1).astype(indices.dtype)
    rows.setflags(write=False)
    blocks = np.arange(threads + 1, dtype=np.int64)
    sink = line_aligned_empty((threads, x.shape[1]), x.dtype)
    dummies = Dummies.make(indices.dtype, x.dtype)
    return lambda: run_variant(variant, blocks, rows, indices, None, None, x, sink, None, None, dummies)


def _numpy_triad_seconds(n: int) -> float:
    """The best of three NumPy triads over ``n`` float64 elements (one thread, two passes)."""
    a, b, c = np.empty(n), np.full(n, 1.0), np.full(n, 2.0)  # freed on return, before the gather's table
    return min(_timed(lambda: np.add(b, np.multiply(c, 3.0, out=a), out=a)) for _ in range(3))


#: table sizes of the dependent-load latency: inside L2, about L3's share of a core, and as large as ``x``
_LATENCY_TABLES_MIB = (1, 4, 32)


def measure_bandwidth(quick: bool) -> dict[str, object]:
    """The bounds at this benchmark's sizes, measured by :func:`gnnbench.run.bounds.measure_bounds` (the one
    module that measures them), plus NumPy's one-thread triad and the dependent-load latencies."""
    n = 10_000_000 if quick else 100_000_000
    rows_total = (1 << 20) if quick else (1 << 22)
    bounds = measure_bounds(triad_elements=n, gather_rows=rows_total, repeats=5)  # all threads
    best_np = _numpy_triad_seconds(n)
    steps = 200_000 if quick else 2_000_000
    return {"triad_GBps": bounds.triad_GBps, "triad_numpy_1thread_GBps": 24 * n / best_np / 1e9,
            "triad_array_elements": n, "gather256_GBps": bounds.gather256_GBps,
            "gather_table_MiB": 256 * rows_total / 2**20,  # 64 float32 a row
            "load_latency_ns": {mib: load_latency_ns(mib, steps) for mib in _LATENCY_TABLES_MIB}}


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# --------------------------------------------------------------- systems
@njit(parallel=True, fastmath=True, cache=True)
def _numba_plain(indptr, indices, x, out):
    """The plain parallel CSR loop every numba user writes first (the baseline to beat)."""
    for i in prange(out.shape[0]):
        for f in range(x.shape[1]):
            out[i, f] = 0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            for f in range(x.shape[1]):
                out[i, f] += x[j, f]


def _dgl():
    try:
        from gnnbench.peers.dgl_shim import dgl
    except ImportError:
        import types

        sys.modules.setdefault("dgl.graphbolt", types.ModuleType("dgl.graphbolt"))
        import dgl
    return dgl


def build_systems(graph: Graph, x: np.ndarray, tuning_dir: str, notes: list[str]) -> dict[str, Callable]:
    """name -> zero-argument callable returning the ``[N, F]`` result (as NumPy or torch)."""
    from gnnbench.systems import isplib
    from gnnbench.systems.isplib import kernels as K

    n, f = x.shape
    view = graph.view()
    x3 = x.reshape(n, 1, f)
    systems: dict[str, Callable] = {}

    untuned = view.with_prepared(isplib.prepare(view, cache_path=os.path.join(tuning_dir, "none.json")))
    from gnnbench.systems.isplib.variant import line_aligned_empty

    out_default = line_aligned_empty(x3.shape, x3.dtype)  # on a cache line, as a framework allocates it
    systems["isplib (default variant)"] = lambda: (K.spmm_sum(untuned, x3, None, out_default, reduce="sum"),
                                                   out_default)[1]
    prepared = isplib.prepare(view)
    tuned = view.with_prepared(prepared)
    out_tuned = line_aligned_empty(x3.shape, x3.dtype)
    notes.append(isplib.describe_tuning(prepared))
    systems["isplib (tuned)"] = lambda: (K.spmm_sum(tuned, x3, None, out_tuned, reduce="sum"), out_tuned)[1]

    indptr, indices = np.asarray(graph.indptr), np.asarray(graph.indices)
    out_plain = np.empty_like(x)
    systems["numba plain CSR loop"] = lambda: (_numba_plain(indptr, indices, x, out_plain), out_plain)[1]

    xt = torch.from_numpy(x)
    csr = torch.sparse_csr_tensor(torch.from_numpy(indptr.astype(np.int64)), torch.from_numpy(indices.astype(np.int64)),
                                  torch.ones(graph.num_edges), size=(n, n))
    systems["torch.sparse.mm CSR (MKL)"] = lambda: torch.sparse.mm(csr, xt)
    systems["torch.sparse.mm reduce=sum"] = lambda: torch.sparse.mm(csr, xt, "sum")
    try:
        from torch_geometric.utils import scatter, spmm

        src, dst = (torch.from_numpy(a) for a in graph.edges())
        systems["PyG utils.spmm"] = lambda: spmm(csr, xt, reduce="sum")
        systems["PyG gather-scatter"] = lambda: scatter(xt[src], dst, dim=0, dim_size=n, reduce="sum")
    except ImportError as err:
        notes.append(f"PyG skipped: {err}")
    try:
        dgl = _dgl()
        s, d = graph.edges()
        g = dgl.graph((torch.from_numpy(s), torch.from_numpy(d)), num_nodes=n)
        g.create_formats_()
        systems["DGL copy_u_sum"] = lambda: dgl.ops.copy_u_sum(g, xt)
    except Exception as err:  # noqa: BLE001 - any import/runtime failure is a skip with a reason
        notes.append(f"DGL skipped: {type(err).__name__}: {err}")
    return systems


def run_case(graph: Graph, width: int, rounds: int, tuning_dir: str) -> dict:
    from gnnbench.systems import isplib

    rng = np.random.default_rng(width)
    x = rng.standard_normal((graph.num_nodes, width), dtype=np.float32)
    tune = isplib.tune(graph, [width], np.float32, reps=5, weightings=("unweighted",))
    notes: list[str] = []
    systems = build_systems(graph, x, tuning_dir, notes)
    a = sp.csr_matrix((np.ones(graph.num_edges), np.asarray(graph.indices), np.asarray(graph.indptr)),
                      shape=(graph.num_nodes, graph.num_nodes))
    ref = a @ x.astype(np.float64)
    scale = float(np.abs(ref).max())
    for name, fn in systems.items():
        fn()
        got = np.asarray(fn()).reshape(ref.shape)
        if not np.allclose(got, ref, rtol=1e-4, atol=1e-4 * scale):
            raise AssertionError(f"{name} computed a wrong SpMM (max error {np.abs(got - ref).max():.3g})")
    key = ("forward", "unweighted", "sum", width, "float32")
    systems[_GATHERS] = gathers_alone(graph, tune.choices[key], x)  # not SpMMs: not checked above
    systems[_IN_ORDER] = gathers_alone(graph, tune.choices[key], x, in_order=True)
    for bound in _BOUNDS:
        systems[bound]()  # compiled for its arguments' types (a read-only index array is a type of its own)
    samples: dict[str, list[float]] = {k: [] for k in systems}
    window = MachineWindow()  # the machine around the timed rounds, as a run row's (Note [busy processes])
    window.begin()
    for _ in range(rounds):
        for name, fn in systems.items():
            samples[name].append(_timed(fn))
    window.end()
    state = window.state()
    idx_bytes = graph.indices.dtype.itemsize
    moved = spmm_bytes(graph.num_edges, graph.num_nodes, width, idx_bytes, 4)  # Note [spmm figures]
    results = {}
    gathered = idx_bytes * graph.num_edges + 4 * width * graph.num_edges  # the gathers alone read only these
    for name, ts in samples.items():
        m = Measurement(tuple(ts), label=name)
        results[name] = {"median_ms": m.median * 1e3, "min_ms": min(ts) * 1e3, "iqr_ms": m.iqr * 1e3,
                         "noise": m.warning, "GBps": (gathered if name in _BOUNDS else moved) / m.median / 1e9,
                         "GFLOPs": graph.num_edges * width / m.median / 1e9,  # E*F/t (Note [spmm figures])
                         "samples_ms": [t * 1e3 for t in ts]}
    return {"width": width, "bytes_moved": moved, "results": results, "notes": notes,
            "machine_state": None if state is None else dataclasses.asdict(state),
            "tuning": {"chosen": tune.choices[key].label, "wall_time_s": tune.wall_time_s,
                       "chosen_ms": tune.times_ms[key][tune.choices[key].label], "default_ms": tune.default_ms[key],
                       "variants_ms": tune.times_ms[key]}}


# ------------------------------------------------ forward vs transposed view
#: (label, transposed, weighting of the GCN case or None, reduce): the SpMMs a training epoch runs
_ORIENTATION_CASES = (
    ("sum, forward", False, None, "sum"), ("sum, transposed (backward)", True, None, "sum"),
    ("mean, forward", False, None, "mean"), ("mean, transposed (backward)", True, None, "mean"),
    ("GCN weights, forward", False, "gcn", "sum"), ("GCN weights, transposed (backward)", True, "gcn", "sum"),
)


def run_orientations(graph: Graph, width: int, rounds: int, tuning_dir: str) -> dict:
    """Each SpMM path a training epoch runs, forward view against transposed view, each path tuned for itself.

    The transposed rows are the backward's ``spmm_sum_backward`` over the same
    nonzeros; the GCN rows pass ``Graph.gcn_norm()`` as the weight, so the
    forward reads it in order and the backward runs it as node scales (Note
    [factorised weights]). Tuning (unbounded) runs first, on the path each
    call takes (Note [tuning key]); rounds are interleaved.
    """
    from gnnbench.systems.isplib import kernels as K
    from gnnbench.systems.isplib import prepare
    from gnnbench.systems.isplib.first_use import tune_pending

    cache = os.path.join(tuning_dir, f"orient-{width}.json")
    views = [graph.view(transposed=t) for t in (False, True)]
    views = [v.with_prepared(prepare(v, cache_path=cache)) for v in views]
    rng = np.random.default_rng(width)
    x = rng.standard_normal((graph.num_nodes, 1, width), dtype=np.float32)
    norm = graph.gcn_norm().reshape(-1, 1)
    outs = {label: np.empty_like(x) for label, *_ in _ORIENTATION_CASES}
    calls = {}
    for label, transposed, weighting, reduce in _ORIENTATION_CASES:
        view, out, w = views[transposed], outs[label], norm if weighting else None
        fn = K.spmm_sum_backward if transposed else K.spmm_sum
        calls[label] = (lambda fn=fn, view=view, w=w, out=out, reduce=reduce: fn(view, x, w, out, reduce=reduce))
    for call in calls.values():
        call()  # records each path as pending
    t0 = time.perf_counter()
    tuned = tune_pending(views, budget_s=None)
    tune_s = time.perf_counter() - t0
    samples: dict[str, list[float]] = {k: [] for k in calls}
    for call in calls.values():
        call()
    for _ in range(rounds):
        for label, call in calls.items():
            samples[label].append(_timed(call))
    stats = {k: Measurement(tuple(v), label=k) for k, v in samples.items()}
    return {"width": width, "tune_s": tune_s,
            "chosen": {":".join(map(str, k)): v.label for k, v in (tuned.choices.items() if tuned else [])},
            "median_ms": {k: m.median * 1e3 for k, m in stats.items()},
            "iqr_ms": {k: m.iqr * 1e3 for k, m in stats.items()}}


def orientation_markdown(report: dict) -> list[str]:
    lines = ["## Forward view against transposed view (the backward's SpMM over the same nonzeros)", "",
             "Each path tuned for itself (Note [tuning key]); medians of interleaved rounds.", "",
             "| graph | F | path | forward ms | transposed ms | transposed / forward |",
             "|---|---:|---|---:|---:|---:|"]
    for case in report.get("orientations", []):
        med = case["median_ms"]
        for path in ("sum", "mean", "GCN weights"):
            f, t = med[f"{path}, forward"], med[f"{path}, transposed (backward)"]
            lines.append(f"| {case['graph']} | {case['width']} | {path} | {f:.1f} | {t:.1f} | {t / f:.2f}x |")
    return lines + [""]


# ---------------------------------------------------------------- report
#: rows that are isplib itself or a baseline, not a peer framework
_GATHERS = "gathers alone: the tuned loop, no output rows (not an SpMM)"
_IN_ORDER = "the same gathers reading x's rows in sequence (not an SpMM)"
_BOUNDS = (_GATHERS, _IN_ORDER)
_NOT_PEERS = ("isplib (tuned)", "isplib (default variant)", "numba plain CSR loop") + _BOUNDS


def uptime() -> str:
    """``uptime``'s line (the load averages), or ``unavailable``."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unavailable"


def run_provenance(allocator: str, **settings) -> dict:
    """Where and how this run measured, like a stored row's provenance (:func:`_common.provenance`), plus
    what a kernel timing depends on: the CPU fingerprint the tuning cache keys on, both thread pools, the
    allocator and the load at the start."""
    from gnnbench.systems.isplib.tuning_cache import cpu_fingerprint

    return provenance(cpu=cpu_fingerprint(), allocator=allocator,
                      threads={"numba": numba.get_num_threads(), "torch": torch.get_num_threads()},
                      versions=versions("numpy", "numba", "torch", "scipy", "dgl", "torch_geometric"),
                      uptime_start=uptime(), **settings)


def _processes(results: list[dict], name: str, shares: tuple[float, ...] = ()) -> Processes:
    """``name``'s samples in every process's results, in seconds, with the processes' other-CPU shares."""
    return replace(processes_of([[t / 1e3 for t in r[name]["samples_ms"]] for r in results]),
                   other_cpu_shares=shares)


def other_cpu_shares(cases: list[dict]) -> tuple[float, ...]:
    """Each process's ``other_cpu_share`` over its timed rounds of one case, where it could be read
    (Note [busy processes])."""
    states = [c.get("machine_state") or {} for c in cases]
    return tuple(float(s["other_cpu_share"]) for s in states if isinstance(s.get("other_cpu_share"), (int, float)))


def pool_case(cases: list[dict]) -> dict:
    """One case (graph, width) as every process measured it, pooled (Note [a process per round]).

    Each result keeps ``median_ms`` (now the median of the per-process medians, which
    ``bench_gather_reuse`` reads) and gains ``processes``, ``process_medians_ms``, ``vs_isplib``
    (ratio, low, high: its time over tuned isplib's, low and high ``None`` with one process) and ``note``.
    """
    first = cases[0]
    each = [c["results"] for c in cases]
    shares = other_cpu_shares(cases)
    tuned = _processes(each, "isplib (tuned)", shares)
    results = {}
    for name, r in first["results"].items():
        ps = _processes(each, name, shares)
        moved = r["GBps"] * r["median_ms"] * 1e6  # bytes: GB/s times seconds
        results[name] = {"median_ms": ps.median * 1e3, "iqr_ms": ps.iqr * 1e3, "noise": r.get("noise", "")
                         if len(ps) == 1 else "", "GBps": moved / ps.median / 1e9, "processes": len(ps),
                         "process_medians_ms": [float(m) * 1e3 for m in ps.medians],
                         "vs_isplib": [1.0, None, None] if name == "isplib (tuned)" else list(speedup(ps, tuned)),
                         "note": ps.note()}
    chosen = [c["tuning"]["chosen"] for c in cases]
    tuning = dict(first["tuning"], chosen=max(set(chosen), key=chosen.count), chosen_by_process=chosen,
                  wall_time_s=float(np.median([c["tuning"]["wall_time_s"] for c in cases])))
    notes = list(dict.fromkeys(n for c in cases for n in c["notes"]))
    return dict(first, results=results, tuning=tuning, notes=notes, processes=len(cases),
                other_cpu_shares=list(shares), busy=busy_processes(shares))


def busy_processes(shares: tuple[float, ...] | list[float]) -> int:
    """How many processes ran beside another busy one (Note [busy processes])."""
    return sum(share > OTHER_CPU_LIMIT for share in shares)


def pool_orientations(cases: list[dict]) -> dict:
    """One orientation case pooled over processes: the median of each path's per-process medians."""
    paths = cases[0]["median_ms"]
    return dict(cases[0], processes=len(cases), tune_s=float(np.median([c["tune_s"] for c in cases])),
                median_ms={k: float(np.median([c["median_ms"][k] for c in cases])) for k in paths},
                iqr_ms={k: float(np.median([c["iqr_ms"][k] for c in cases])) for k in paths})


def pool(reports: list[dict]) -> dict:
    """The processes' reports as one: every case and orientation pooled (Note [a process per round])."""
    out = dict(reports[0], processes=len(reports))
    out["cases"] = [pool_case([r["cases"][i] for r in reports]) for i in range(len(reports[0]["cases"]))]
    if reports[0].get("orientations"):
        out["orientations"] = [pool_orientations([r["orientations"][i] for r in reports])
                               for i in range(len(reports[0]["orientations"]))]
    return out


def _vs_isplib(r: dict) -> str:
    ratio, low, high = r["vs_isplib"]
    return f"{ratio:.2f}x" + ("" if low is None else f" [{low:.2f}, {high:.2f}]")


def markdown(report: dict) -> str:
    bw = report["bandwidth"]
    lines = ["# SpMM-sum benchmark (CPU, float32, unweighted)", "",
             f"Machine: {report['cpu']}; numba threads {report['threads']['numba']}, "
             f"torch threads {report['threads']['torch']}; allocator "
             f"{report.get('allocator', 'system')} (every system allocates under it); commit {report['git_commit']}.",
             f"Load: start `{report['uptime_start']}`, end `{report['uptime_end']}` "
             "(the cores are shared: absolute times were measured under that load; rounds were interleaved, "
             f"so compare rows of one table). {NOISE_NOTE}.", "",
             _processes_sentence(report), "",
             f"Bounds measured in this run: STREAM triad {bw['triad_GBps']:.1f} GB/s "
             f"({bw['triad_array_elements'] // 10**6}M float64, all threads; NumPy one thread, two passes: "
             f"{bw['triad_numpy_1thread_GBps']:.1f} GB/s); random 256-byte row gather from a "
             f"{bw['gather_table_MiB']:.0f} MiB table {bw['gather256_GBps']:.1f} GB/s; a load that depends "
             "on the one before, at random over a table of "
             + ", ".join(f"{mib} MiB {ns:.0f} ns" for mib, ns in bw.get("load_latency_ns", {}).items())
             + " (Note [gather bounds]). "
             "GB/s below = (indices + indptr + gathered rows + output) / median time.", ""]
    interval = f"[{CONFIDENCE:.0%} interval]"
    for case in report["cases"]:
        res = case["results"]
        peers = {k: v for k, v in res.items() if k not in _NOT_PEERS}
        best_peer = min(peers, key=lambda k: peers[k]["median_ms"])
        tuned = res["isplib (tuned)"]["median_ms"]
        lines += [f"## {case['graph']} (E={case['edges']:,}), F={case['width']}", "",
                  f"| system | median ms | IQR ms | GB/s | vs isplib (tuned) {interval} | processes | stability |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        for name, r in sorted(res.items(), key=lambda kv: kv[1]["median_ms"]):
            lines.append(f"| {name} | {ms(r['median_ms'] / 1e3)} {r.get('noise', '')}".rstrip()
                         + f" | {ms(r['iqr_ms'] / 1e3)} | {r['GBps']:.1f} | {_vs_isplib(r)} | {r['processes']} | "
                         f"{r['note'] or ''} |")
        t = case["tuning"]
        plain = res["numba plain CSR loop"]["median_ms"]
        picked = t.get("chosen_by_process", [t["chosen"]])
        variant = f"variant `{t['chosen']}`" + (
            f" in {picked.count(t['chosen'])} of {len(picked)} processes" if len(set(picked)) > 1 else "")
        lines += ["", busy_sentence(case),
                  f"isplib (tuned, {variant}, tuning took {t['wall_time_s']:.1f} s) is "
                  f"**{_vs_isplib(peers[best_peer])}** faster than the fastest peer ({best_peer}) "
                  f"and {plain / tuned:.2f}x faster than the plain numba loop"
                  + (" (measured beside a busy process: not a headline)." if case.get("busy") else ".")]
        if _GATHERS in res:
            alone = res[_GATHERS]["median_ms"]
            target = peers[best_peer]["median_ms"] / 1.5
            lines[-1] += (f" Its gathers alone take {ms(alone / 1e3)} ms, {alone / tuned:.0%} of the SpMM; "
                          f"1.5x the fastest peer would be {ms(target / 1e3)} ms.")
            if _IN_ORDER in res:
                walk = res[_IN_ORDER]["median_ms"]
                lines[-1] += (f" Reading the same rows in x's order takes {ms(walk / 1e3)} ms"
                              + (", so only rows reused from cache could reach that (Note [gather bounds])."
                                 if target < walk else "."))
        lines.append("")
        lines += [f"- {n}" for n in case["notes"] if not n.startswith("isplib: tuned")]
        lines.append("")
    if report.get("orientations"):
        lines += orientation_markdown(report)
    return "\n".join(lines)


#: the peer the study's headline measures isplib against (issue 55): DGL's SpMM, the CPU kernel GNN users run
HEADLINE_PEER = "DGL copy_u_sum"


def headline(report: dict) -> str | None:
    """The study's headline for the results index and README's figures table (Note [results index]): tuned
    isplib against :data:`HEADLINE_PEER` in every case measured quiet, by graph, or None when there is none. A
    case measured beside a busy process is never a headline (Note [busy processes])."""
    by_graph: dict[str, list[str]] = {}
    for case in report["cases"]:
        peer = case["results"].get(HEADLINE_PEER)
        if peer is not None and not case.get("busy"):
            by_graph.setdefault(case["graph"], []).append(f"F={case['width']} {_vs_isplib(peer)}")
    if not by_graph:
        return None
    return "; ".join(f"isplib against DGL's copy_u_sum on {graph}: {', '.join(cells)}"
                     for graph, cells in by_graph.items())


def busy_sentence(case: dict) -> str:
    """What the other processes took of the CPUs while each process timed this case (Note [busy processes])."""
    shares = case.get("other_cpu_shares") or []
    if not shares:
        return "Other processes' share of the CPUs: not recorded."
    flagged = case.get("busy", 0)
    return (f"Other processes' share of the CPUs while each process timed its rounds: "
            + ", ".join(f"{s:.0%}" for s in shares)
            + (f"; {flagged} of {len(shares)} above {OTHER_CPU_LIMIT:.0%}, so every figure of this case is marked "
               "busy and none is a headline." if flagged else f"; none above {OTHER_CPU_LIMIT:.0%}."))


def _processes_sentence(report: dict) -> str:
    n, rounds = report.get("processes", 1), report["rounds"]
    failed = f" {report['failure'][0].upper()}{report['failure'][1:]}." if report.get("failure") else ""
    if n == 1:
        return (f"One process of {rounds} interleaved rounds: {ONE_PROCESS}, so no intervals "
                "(Note [a process per round])." + failed)
    return failed.lstrip() + (" " if failed else "") + (f"{n} processes, one after another, each timing every system over {rounds} interleaved rounds: a "
            "time is the median of the per-process medians, `vs isplib` the ratio of two such figures with a "
            "two-level bootstrap interval over processes, then rounds (Note [between-process statistics] in "
            "gnnbench/core/statistics.py); `stability` says why a figure is unsteady (Note [a process per round]).")


def measure_cases(args, rounds: int, widths: list[int]) -> dict:
    """Every case and orientation measured in this process, with its rounds (one process's report)."""
    report: dict = {"cases": []}
    makers = {"rmat": rmat_graph, "uniform": uniform_graph}
    with tempfile.TemporaryDirectory() as tuning_dir:
        for gname in args.graphs:
            name, graph = makers[gname](args.quick)
            for width in widths if args.orientations else ():
                o = run_orientations(graph, width, rounds, tuning_dir)
                o.update(graph=name)
                report.setdefault("orientations", []).append(o)
                print(f"{name} F={width}: " + ", ".join(f"{k} {v:.1f}" for k, v in o["median_ms"].items()),
                      file=sys.stderr)
            for width in widths if not args.no_peers else ():
                case = run_case(graph, width, rounds, tuning_dir)
                case.update(graph=name, nodes=graph.num_nodes, edges=graph.num_edges)
                report["cases"].append(case)
                best = min(case["results"].items(), key=lambda kv: kv[1]["median_ms"])
                print(f"{name} F={width}: fastest {best[0]} {best[1]['median_ms']:.1f} ms; isplib tuned "
                      f"{case['results']['isplib (tuned)']['median_ms']:.1f} ms", file=sys.stderr)
    return report


def run_processes(argv: list[str], processes: int) -> tuple[list[dict], str | None]:
    """This script run ``processes`` times, one after another, each measuring every case (Note [a process
    per round]): the reports of those that finished, in order, and why the first that failed did, if one did.
    A failed process ends the series (a wrong SpMM or a missing library fails the same way again), and the
    finished ones are kept."""
    reports: list[dict] = []
    with tempfile.TemporaryDirectory() as folder:
        for k in range(processes):
            path = Path(folder) / f"process-{k}.json"
            print(f"bench_spmm: process {k + 1} of {processes}", file=sys.stderr)
            done = subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv, "--one-process", str(path)])
            if done.returncode != 0 or not path.is_file():
                return reports, f"process {k + 1} of {processes} failed (exit status {done.returncode})"
            reports.append(json.loads(path.read_text()))
    return reports, None


def _widths(text: str) -> list[int]:
    """An argparse type for ``--widths``: comma-separated feature widths, each a whole number of at least 1."""
    try:
        return [count(w) for w in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be comma-separated whole numbers of at least 1 (got {text!r})")


def _graphs(text: str) -> list[str]:
    """An argparse type for ``--graphs``: comma-separated names among rmat and uniform."""
    names = text.split(",")
    unknown = [n for n in names if n not in ("rmat", "uniform")]
    if unknown:
        raise argparse.ArgumentTypeError(f"knows rmat and uniform, not {', '.join(map(repr, unknown))}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small graphs, few rounds (a smoke test)")
    parser.add_argument("--processes", type=count, default=MIN_PROCESSES,
                        help=f"processes, one after another, each timing every case (default {MIN_PROCESSES}; "
                             "Note [a process per round])")
    parser.add_argument("--rounds", type=count, default=None,
                        help="interleaved timed rounds in each process (default 10, quick 3)")
    parser.add_argument("--widths", type=_widths, default=[32, 64, 128], help="comma-separated feature widths")
    parser.add_argument("--graphs", type=_graphs, default=["rmat", "uniform"], help="comma-separated: rmat, uniform")
    parser.add_argument("--orientations", action="store_true",
                        help="also time forward against transposed view for sum, mean and GCN's weights")
    parser.add_argument("--no-peers", action="store_true", help="skip the peer comparison (orientations only)")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "bench_spmm"),
                        help="output path without suffix")
    parser.add_argument("--allocator", default="auto",
                        help="allocator to measure under (Note [allocator]): the peers allocate their outputs on "
                             "every call, isplib writes into a given one, so glibc's page faults would tax the peers")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite the table and its headline from --out's JSON; measure nothing")
    parser.add_argument("--one-process", metavar="PATH", help=argparse.SUPPRESS)  # a child: its report to PATH
    return run_script("bench_spmm", parser, lambda args: render_only(args.out) if args.render_only
                      else measure_and_write(args, argv), argv)


def measure_and_write(args: argparse.Namespace, argv: list[str] | None) -> int:
    from gnnbench.errors import UserError
    from gnnbench.run.allocator import run_under

    allocator = run_under(args.allocator)
    rounds = args.rounds or (3 if args.quick else 10)
    widths = args.widths
    from gnnbench.systems import isplib

    if args.one_process:
        isplib.warm_up(np.int64, np.float32)
        Path(args.one_process).write_text(json.dumps(measure_cases(args, rounds, widths), default=float))
        return 0
    report = run_provenance(allocator, rounds=rounds, quick=args.quick, widths=widths)
    report["bandwidth"] = measure_bandwidth(args.quick)
    if args.processes == 1:
        isplib.warm_up(np.int64, np.float32)
        reports = [measure_cases(args, rounds, widths)]
    else:
        reports, failure = run_processes(sys.argv[1:] if argv is None else list(argv), args.processes)
        if not reports:
            raise UserError(f"{failure}; nothing was measured, its error is above")
        if failure:
            report["failure"] = f"{failure}: the tables pool the {len(reports)} that finished"
            print(f"bench_spmm: {report['failure']}", file=sys.stderr)
    report.update(pool(reports))
    report["uptime_end"] = uptime()
    report["headline"] = headline(report)
    write_results(args.out, report, markdown(report))
    return 0


def render_only(out: str) -> int:
    """Rewrites ``out``'s table and headline from its JSON, which keeps every pooled figure: nothing runs."""
    from gnnbench.errors import UserError

    path = Path(out).with_suffix(".json")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"--render-only needs {path}, written by an earlier run ({error})") from None
    report["headline"] = headline(report)
    write_results(out, report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
