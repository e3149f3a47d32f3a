"""How many of an SpMM's gathered rows a core's L2 could serve, against how many the 1.5x target needs.

    python benchmarks/studies/bench_gather_reuse.py [--quick] [--spmm results/studies/bench_spmm.json]

For the graphs and widths of ``benchmarks/studies/bench_spmm.py`` this replays the
sequence of source rows that each thread of the tuned kernel gathers (the
CSR rows in order, each thread a contiguous half of the nonzeros, as
``prange`` hands out isplib's nonzero-balanced row blocks) through a
simulated cache of whole rows, at the L2 size of one core and at half of it
(the other half holding indices, output rows and prefetches in flight):

* **LRU**, least recently used out first: what a hardware cache approximates;
* **LRU, rows in RCM order**: the same, with the rows visited in reverse
  Cuthill-McKee order (SciPy), the classic order for locality;
* **hottest rows pinned**: the rows the thread gathers most, as many as fit,
  kept for the whole pass and nothing else cached (the hot/cold split of
  Note [software prefetch] at its best);
* **LRU, far rows not kept**: LRU, except that a row whose next gather by the
  thread is more than ``h`` gathers away is not kept after this one (the best
  ``h`` of 1, 2, 4 and 8 times the rows the cache holds): a policy an SpMM
  could follow with one flag per edge computed in ``prepare``, if the CPU let
  a load skip the cache or demote its line;
* **Belady's MIN**: evict (or never cache) the row needed farthest in the
  future. No policy gets more hits from this order.

Note [reuse the target needs]
    The hit rate a cell needs comes from ``results/studies/bench_spmm.json`` (the same
    machine, the tuned kernel against DGL's ``copy_u_sum``): the gathers may take
    ``DGL / 1.5`` less the SpMM's own output share (tuned SpMM minus "gathers
    alone"), and their time is taken as proportional to the rows that miss, so
    ``needed = 1 - (1 - LRU) * budget / gathers alone``, with LRU at the whole L2
    standing for what the hardware got in that run. Hits are counted as free,
    which favours the target: the real need is higher.

    In the run of ``results/studies/gather_reuse.md`` each short cell needs
    most of the way from LRU to MIN. Row order gives little: these graphs
    have no locality for an order to find (RCM and every other order tried
    gave about LRU's hits). The figures, cell by cell and policy by policy:
    ``results/studies/gather-reuse-reading.md``.

    Pinning is the one policy a kernel can build itself, and on paper it
    reaches R-MAT 128's need. Built, it does not: the hot rows' edges go in
    a second pass that adds into ``out`` while the rows stay in L2, which
    costs one more pass over ``out`` and leaves the hot rows sharing L2 with
    it. A C probe of the tuned loop's shape gained about the in-order walk
    on R-MAT 128, well short of the need, and on the uniform graph, where
    pinning meets the need on paper, the pass over ``out`` cost more than
    the hits saved. The earlier two-pass split in numba (Note [software
    prefetch] in ``systems/isplib/intrinsics.py``) gained nothing over
    isplib's own single pass either.

    The CPU has two ways to keep a row out of L2, for the "far rows not kept"
    policy, ``prefetchnta`` and ``cldemote``, and both cost more than the
    hits would save (probed: ``results/studies/gather-reuse-reading.md``).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_spmm.py beside it
from _common import ROOT, Parser, Table, out_path, provenance, versions, write_results  # noqa: E402

#: the simulated policies, in the table's order (the RCM column is LRU on a reordered stream)
POLICIES = ("lru", "lru_rcm", "pinned", "lru_skip_far", "min")
_HEADERS = {"lru": "LRU", "lru_rcm": "LRU, rows in RCM order", "pinned": "hottest rows pinned",
            "lru_skip_far": "LRU, far rows not kept", "min": "Belady's MIN"}
_LRU, _MIN, _SKIP = 0, 1, 2
_EMPTY = np.int64(1) << 62  # the key of an empty slot: evicted (filled) first
_HORIZONS = (1, 2, 4, 8)  # "far" = next gather more than this many times the cache's rows away
SPEEDUP = 1.5  # issue 19's target against the fastest peer


# ------------------------------------------------------------ simulation
@njit
def next_use(stream, num_rows):
    """For each position of ``stream``, the position of the same row's next gather (``len(stream)`` if none)."""
    n = stream.shape[0]
    out = np.empty(n, np.int64)
    seen = np.full(num_rows, n, np.int64)
    for t in range(n - 1, -1, -1):
        out[t] = seen[stream[t]]
        seen[stream[t]] = t
    return out


@njit
def _set_key(tree, key, size, slot, value):
    """Set ``key[slot]`` and repair the tree of argmax slots above it."""
    key[slot] = value
    i = (size + slot) >> 1
    while i >= 1:
        a, b = tree[2 * i], tree[2 * i + 1]
        tree[i] = a if key[a] >= key[b] else b
        i >>= 1


@njit
def simulate(stream, nxt, num_rows, capacity, policy, horizon):
    """Hits of a cache of ``capacity`` whole rows over ``stream``: LRU, Belady's MIN, or LRU skipping far rows.

    Every slot carries a key and the slot with the largest key goes first (a
    tree of argmax slots, ``O(log capacity)`` an access): empty slots are
    largest, LRU keys a row by minus the time of its last gather, MIN by the
    time of its next one. MIN and the skipping LRU may also leave a row
    uncached (MIN when the row is needed later than every cached one).
    """
    size = 1
    while size < capacity:
        size *= 2
    key = np.full(size, -_EMPTY, np.int64)  # slots past ``capacity`` are never chosen
    key[:capacity] = _EMPTY
    tree = np.zeros(2 * size, np.int64)
    tree[size:] = np.arange(size)
    for i in range(size - 1, 0, -1):
        a, b = tree[2 * i], tree[2 * i + 1]
        tree[i] = a if key[a] >= key[b] else b
    slot_of = np.full(num_rows, -1, np.int64)
    owner = np.full(size, -1, np.int64)
    hits = 0
    for t in range(stream.shape[0]):
        row, later = stream[t], nxt[t]
        keep = not (policy == _SKIP and later - t > horizon)
        value = later if policy == _MIN else -t
        slot = slot_of[row]
        if slot >= 0:
            hits += 1
            if keep:
                _set_key(tree, key, size, slot, value)
            else:
                slot_of[row] = -1
                owner[slot] = -1
                _set_key(tree, key, size, slot, _EMPTY)
            continue
        victim = tree[1]
        if not keep or (policy == _MIN and key[victim] != _EMPTY and later >= key[victim]):
            continue
        if owner[victim] >= 0:
            slot_of[owner[victim]] = -1
        owner[victim] = row
        slot_of[row] = victim
        _set_key(tree, key, size, victim, value)
    return hits


def pinned_hits(stream: np.ndarray, num_rows: int, capacity: int) -> int:
    """Hits when the ``capacity`` most gathered rows stay cached for the pass (each one's first gather misses)."""
    counts = np.bincount(stream, minlength=num_rows)
    top = np.sort(counts)[::-1][:capacity]
    return int(np.maximum(top - 1, 0).sum())


def thread_streams(indptr: np.ndarray, indices: np.ndarray, threads: int,
                   order: np.ndarray | None = None) -> list[np.ndarray]:
    """The source rows each thread gathers, in its order: rows in ``order`` (default CSR order), the nonzeros cut
    into ``threads`` contiguous, equal shares at row boundaries."""
    order = np.arange(len(indptr) - 1) if order is None else order
    degrees = np.diff(indptr)[order]
    ends = np.cumsum(degrees)
    cuts = [0] + [int(np.searchsorted(ends, k * ends[-1] / threads)) + 1 for k in range(1, threads)] + [len(order)]
    starts = indptr[order]
    streams = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        rows = order[a:b]
        pieces = [indices[starts[a + i]:starts[a + i] + degrees[a + i]] for i in range(len(rows))]
        streams.append(np.concatenate(pieces).astype(np.int64) if pieces else np.empty(0, np.int64))
    return streams


def rcm_order(indptr: np.ndarray, indices: np.ndarray, num_nodes: int) -> np.ndarray:
    """Reverse Cuthill-McKee order of the graph's rows (SciPy, on the symmetrised pattern)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    a = sp.csr_matrix((np.ones(len(indices), np.int8), indices, indptr), shape=(num_nodes, num_nodes))
    return np.asarray(reverse_cuthill_mckee((a + a.T).tocsr(), symmetric_mode=True), dtype=np.int64)


def hit_rates(indptr: np.ndarray, indices: np.ndarray, num_nodes: int, capacity: int, threads: int,
              rcm: np.ndarray) -> dict:
    """Every policy's share of the gathers that hit, over all threads, for a cache of ``capacity`` rows a thread."""
    total = len(indices)
    counts = dict.fromkeys(POLICIES, 0)
    best_horizon = {}
    for stream in thread_streams(indptr, indices, threads):
        nxt = next_use(stream, num_nodes)
        counts["lru"] += simulate(stream, nxt, num_nodes, capacity, _LRU, 0)
        counts["min"] += simulate(stream, nxt, num_nodes, capacity, _MIN, 0)
        counts["pinned"] += pinned_hits(stream, num_nodes, capacity)
        for h in _HORIZONS:
            best_horizon[h] = best_horizon.get(h, 0) + simulate(stream, nxt, num_nodes, capacity, _SKIP, h * capacity)
    for stream in thread_streams(indptr, indices, threads, rcm):
        counts["lru_rcm"] += simulate(stream, next_use(stream, num_nodes), num_nodes, capacity, _LRU, 0)
    horizon = max(best_horizon, key=best_horizon.get)
    counts["lru_skip_far"] = best_horizon[horizon]
    return {"rates": {p: counts[p] / total for p in POLICIES}, "far_horizon": horizon * capacity}


def needed_hit_rate(lru: float, tuned: float, alone: float, peer: float) -> float | None:
    """The hit rate at which the SpMM reaches ``SPEEDUP`` x the peer (Note [reuse the target needs]); None if met.

    ``tuned``, ``alone`` and ``peer`` are medians in one unit: the tuned SpMM, its gathers alone, the peer.
    """
    target = peer / SPEEDUP
    if tuned <= target:
        return None
    budget = target - max(tuned - alone, 0.0)
    return 1.0 - (1.0 - lru) * max(budget, 0.0) / alone


# ------------------------------------------------------------ the run
def l2_bytes() -> int:
    """One core's L2 (sysfs), or 2 MiB where the kernel does not say."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() == "2":
                text = (index / "size").read_text().strip()
                return int(text[:-1]) * {"K": 1 << 10, "M": 1 << 20}[text[-1]]
        except (OSError, ValueError, KeyError):
            continue
    return 2 << 20


def spmm_timings(path: Path) -> dict:
    """``(graph, width) -> {"tuned", "alone", "peer"}`` medians in ms from bench_spmm's report, if there is one."""
    from gnnbench.errors import UserError

    if not path.is_file():
        return {}
    try:
        report = json.loads(path.read_text())
        timings = {}
        for case in report["cases"]:
            res = case["results"]
            alone = next((v["median_ms"] for k, v in res.items() if k.startswith("gathers alone")), None)
            if "DGL copy_u_sum" in res and alone is not None:
                timings[(case["graph"], case["width"])] = {"tuned": res["isplib (tuned)"]["median_ms"],
                                                           "alone": alone, "peer": res["DGL copy_u_sum"]["median_ms"]}
        return {"commit": report.get("git_commit", "?"), "cells": timings}
    except (ValueError, KeyError, TypeError) as error:
        raise UserError(f"{path} is not a bench_spmm report ({type(error).__name__}: {error})") from None


def measure(quick: bool, widths: list[int], threads: int, l2: int, timings: dict) -> list[dict]:
    from bench_spmm import rmat_graph, uniform_graph

    rows = []
    for make in (rmat_graph, uniform_graph):
        name, graph = make(quick)
        indptr, indices = np.asarray(graph.indptr, np.int64), np.asarray(graph.indices, np.int64)
        rcm = rcm_order(indptr, indices, graph.num_nodes)
        for width in widths:
            for cache in (l2, l2 // 2):
                capacity = cache // (4 * width)
                result = hit_rates(indptr, indices, graph.num_nodes, capacity, threads, rcm)
                cell = timings.get("cells", {}).get((name, width))
                needed = (needed_hit_rate(result["rates"]["lru"], **cell)
                          if cell and cache == l2 else None)
                rows.append({"graph": name, "width": width, "cache_bytes": cache, "rows": capacity, **result,
                             "timings_ms": cell if cache == l2 else None, "needed": needed})
                print(f"{name} F={width} {cache >> 10} KiB: "
                      + ", ".join(f"{p} {r:.3f}" for p, r in result["rates"].items()), file=sys.stderr)
    return rows


def render(report: dict) -> str:
    def needed(row):  # only the whole-L2 row of a cell that bench_spmm timed has a target
        if row["timings_ms"] is None:
            return "-"
        return "met" if row["needed"] is None else f"**{row['needed']:.2f}**"

    cells = [[row["graph"].split(":")[0], row["width"], f"{row['cache_bytes'] >> 10} KiB ({row['rows']:,} rows)"]
             + [f"{row['rates'][p]:.2f}" for p in POLICIES] + [needed(row)] for row in report["rows"]]
    table = Table(["graph", "F", "cache a core"] + [_HEADERS[p] for p in POLICIES] + ["the 1.5x target needs"],
                  cells, [False, True, False] + [True] * (len(POLICIES) + 1))
    lines = ["# What reuse the SpMM's gathers have: hit rates of a simulated L2", "",
             f"Graphs of `benchmarks/studies/bench_spmm.py`{' (quick sizes)' if report['quick'] else ''}; each of "
             f"{report['threads']} threads replays the source rows it gathers (a contiguous half of the nonzeros) "
             f"through a cache of whole rows: the L2 of one core ({report['l2_bytes'] >> 10} KiB here) and half "
             "of it. A cell is the share of all gathers that hit. Commit "
             f"{report['git_commit']}. The policies and the last column: Note [reuse the target needs] in "
             "`benchmarks/studies/bench_gather_reuse.py`"
             + (f"; its timings are bench_spmm's at {report['spmm_commit']}." if report["spmm_commit"] else "."),
             "", table.render("markdown"), ""]
    for row in report["rows"]:
        if row["needed"] is not None:
            r = row["rates"]
            lines.append(f"- {row['graph']}, F = {row['width']}: needs {row['needed']:.2f} of the gathers from L2; "
                         f"LRU gives {r['lru']:.2f}, pinning the hottest rows {r['pinned']:.2f}, LRU not keeping rows "
                         f"whose next gather is more than {row['far_horizon']:,} away {r['lru_skip_far']:.2f}, "
                         f"MIN {r['min']:.2f}.")
    lines += ["", "What pinning gets once built, and what keeping far rows out of L2 costs on this CPU: the same Note."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from gnnbench.errors import UserError

    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="bench_spmm's small graphs (for tests)")
    parser.add_argument("--widths", default="32,64,128", help="comma-separated feature widths (default 32,64,128)")
    parser.add_argument("--threads", type=int, default=2, help="threads that split the nonzeros (default 2)")
    parser.add_argument("--l2-kib", type=int, default=None, help="one core's L2 in KiB (default: what sysfs says)")
    parser.add_argument("--spmm", default=None,
                        help="bench_spmm's report, for the hit rate each cell needs (default results/studies/bench_spmm.json "
                             "where it exists)")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "gather_reuse"),
                        help="output path without suffix")
    try:
        args = parser.parse_args(argv)
        try:
            widths = [int(w) for w in args.widths.split(",")]
        except ValueError:
            raise UserError(f"--widths must be whole numbers separated by commas (got {args.widths!r})") from None
        l2 = args.l2_kib * 1024 if args.l2_kib is not None else l2_bytes()
        if min(widths) < 1 or args.threads < 1 or l2 < 1024:
            raise UserError(f"--widths and --threads must be at least 1 and --l2-kib at least 1 "
                            f"(got {args.widths}, {args.threads}, {l2 // 1024})")
        if any(l2 // 2 < 4 * w for w in widths):
            raise UserError(f"half of --l2-kib {l2 // 1024} holds no row of width {max(widths)}")
        if args.spmm is not None and not Path(args.spmm).is_file():
            raise UserError(f"--spmm {args.spmm}: no such file (bench_spmm.py writes results/studies/bench_spmm.json)")
        timings = spmm_timings(Path(args.spmm) if args.spmm else ROOT / "results" / "bench_spmm.json")
        rows = measure(args.quick, widths, args.threads, l2, timings)
    except UserError as error:
        print(f"bench_gather_reuse: {error}", file=sys.stderr)
        return 2
    report = {"quick": args.quick, "threads": args.threads, "l2_bytes": l2, "spmm_commit": timings.get("commit"),
              "rows": rows}
    report.update(provenance(versions=versions("numpy", "numba", "scipy"), cpu_count=os.cpu_count()))
    write_results(args.out, report, render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
