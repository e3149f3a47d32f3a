"""A sampled batch's fixed costs, alone and beside a busy process, and what the thread pools change (issue 43).

    python benchmarks/studies/bench_batch_cost.py --data-dir ../shared/data/planetoid [--epochs 3] [--before TREE]
        [--parts sections,batches,pools,headline] [--rounds N] [--keep] [--out results/batch_cost]

Four tables; "busy" means beside a process that keeps one core busy (a Python busy loop this script starts
and kills in a ``finally``):

* *serial or parallel*, alone and busy: the platform's CSR transpose (``gnnbench.runtime.csr_transpose``) of
  random graphs of 1k to 1M edges, its serial twin against its parallel section, 2 threads, in this process
  (the numbers behind Note [serial below a size] in gnnbench/runtime/serial.py);
* *per batch*, alone and busy: SAGE on Cora, fanouts 10,5, batches of 16, 256 and 1024 nodes, 2 threads:
  sampling, gather, block building and each system's prepare (the sampled row's ``sample``, ``gather`` and
  ``block_prepare`` phases) per batch, for reference, isplib and dgl-native. Cora trains on 140 nodes, so these runs are
  ``--mode inference`` passes over all 2,708 nodes, whose batches have the same three phases;
* *pools*, busy: the headline case's isplib and reference runs at 2 threads under numba's ``omp`` or
  ``workqueue`` layer and GNU OpenMP's default or passive wait (Note [thread pools] in
  gnnbench/run/thread_pools.py);
* *headline*, busy: issue 43's case, SAGE on Cora trained at batch 16, 2 threads:
  isplib against its ``--threads 1`` run and reference's, epoch, optimizer and sample phases. With
  ``--before TREE`` (an export of the code before the change, e.g. ``git archive 1ff8a70 | tar -x -C TREE``)
  the same runs are made with that code too, in this venv.

Every run is its own ``gnnbench run --json --no-store`` process; the runs of a table are interleaved. The
load (``uptime``'s 1-minute average) at the start and end of each table is stated with it.
Writes results/studies/batch_cost.{md,json}.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import Parser, Table, count, out_path, provenance, run_script, write_results  # noqa: E402

SYSTEMS = ("reference", "isplib", "dgl-native")
BATCHES = (16, 256, 1024)
CORA_NODES, CORA_TRAIN = 2708, 140
SECTION_EDGES = (1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20)
LOADS = ("alone", "busy")
#: a key of a run's environment that is its working folder instead
CWD = "<cwd>"
#: the pools table's settings, as the caller's environment gives them (a caller's variable wins, Note [thread
#: pools]); an empty OMP_WAIT_POLICY is GNU OpenMP's default (it warns of the value and ignores it)
POOLS = (("omp layer, OpenMP default", {"NUMBA_THREADING_LAYER": "omp", "OMP_WAIT_POLICY": "", "KMP_BLOCKTIME": ""}),
         ("workqueue, OpenMP default", {"NUMBA_THREADING_LAYER": "workqueue", "OMP_WAIT_POLICY": "",
                                        "KMP_BLOCKTIME": ""}),
         ("omp layer, passive", {"NUMBA_THREADING_LAYER": "omp"}),
         ("workqueue, passive (the platform's)", {}))


@contextmanager
def beside(load: str):
    """Nothing (``alone``), or a Python busy loop on one core (``busy``), killed on the way out."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load == "busy" else None
    try:
        yield
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


def _load() -> float:
    return os.getloadavg()[0]


def _before_env(tree: Path) -> dict[str, str]:
    """An environment whose ``gnnbench`` imports come from ``tree`` (a ``sitecustomize`` remaps the editable
    install's finder; the run starts in ``tree``, so ``python -m`` finds its ``gnnbench`` first), so a run and
    its worker run the code before the change."""
    site = tree / ".bench-site"
    site.mkdir(exist_ok=True)
    mapping = {"gnnbench": "gnnbench", "gnnbench.datasets": "datasets", "gnnbench.dsl": "dsl",
               "gnnbench.models": "models", "gnnbench.systems": "systems"}
    remap = {k: str(tree / v) for k, v in mapping.items()}
    (site / "sitecustomize.py").write_text(
        "import sys\nfor m in list(sys.modules.values()):\n"
        "    if getattr(m, 'MAPPING', None) and 'gnnbench' in m.MAPPING:\n"
        f"        m.MAPPING.update({remap!r})\n")
    return {"PYTHONPATH": str(site), CWD: str(tree)}


def run_once(args, system: str, batch: int, threads: int, mode: str, env: dict[str, str]) -> dict[str, Any]:
    """One ``gnnbench run`` of SAGE on Cora sampled; the phases per epoch and per batch, in seconds."""
    cmd = [sys.executable, "-m", "gnnbench", "run", "--system", system, "--model", "sage", "--dataset", "cora",
           "--data-dir", args.data_dir, "--batching", "sampled", "--fanouts", "10,5", "--batch-size", str(batch),
           "--threads", str(threads), "--mode", mode, "--epochs", str(args.epochs + args.warmup),
           "--warmup", str(args.warmup), "--no-check", "--no-store", "--json"]
    env = dict(env)
    cwd = env.pop(CWD, None)
    done = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["exit status %d" % done.returncode])[-1]}
    row = json.loads(done.stdout)
    batches = math.ceil((CORA_NODES if mode == "inference" else CORA_TRAIN) / batch)
    phases = {p: row.get(f"{p}_median_s") for p in ("epoch_time", "sample", "gather", "block_prepare", "forward",
                                                     "backward", "optimizer")}
    return {"phases": phases, "batches": batches, "thread_pools": (row.get("extra") or {}).get("thread_pools")}


def measure_sections(reps: int) -> list[dict[str, Any]]:
    """The transpose of random graphs, serial twin against parallel section, in this process at 2 threads."""
    import numpy as np

    from gnnbench.run.thread_pools import configure_this_process

    configure_this_process(2)  # before numba's first section: the layer every run gets (Note [thread pools])
    from gnnbench.runtime import serial
    from gnnbench.runtime.csr_transpose import transpose_csr

    out = []
    for load in LOADS:
        with beside(load):
            for edges in SECTION_EDGES:
                nodes = max(edges // 8, 16)
                rng = np.random.default_rng(edges)
                indptr = np.zeros(nodes + 1, dtype=np.int64)
                np.cumsum(np.bincount(rng.integers(0, nodes, edges), minlength=nodes), out=indptr[1:])
                indices = rng.integers(0, nodes, edges)
                times = {"serial": [], "parallel": []}
                for _ in range(reps):  # interleaved
                    for name, below in (("serial", 1 << 62), ("parallel", 0)):
                        serial.SERIAL_BELOW = below
                        start = time.perf_counter()
                        transpose_csr(indptr, indices, nodes)
                        times[name].append(time.perf_counter() - start)
                out.append({"load": load, "edges": edges, **{k: sorted(v)[len(v) // 2] for k, v in times.items()},
                            **{f"{k}_min": min(v) for k, v in times.items()}})
    return out


def _us(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e6:,.0f}"


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:,.1f}"


def sections_table(rows: list[dict], loads: tuple[float, float]) -> Table:
    return Table(["load", "edges", "serial (us)", "parallel (us)", "parallel / serial", "serial min",
                  "parallel min"],
                 [[r["load"], f"{r['edges']:,}", _us(r["serial"]), _us(r["parallel"]),
                   f"{r['parallel'] / r['serial']:.2f}", _us(r["serial_min"]), _us(r["parallel_min"])] for r in rows],
                 numeric=(False, True, True, True, True, True, True),
                 title="Serial or parallel: transpose of a random graph at 2 threads, median (and minimum) of the "
                       "interleaved repetitions",
                 notes=[f"Load average {loads[0]:.1f} at start, {loads[1]:.1f} at end, {os.cpu_count()} cores."])


def batches_table(rows: list[dict], loads: tuple[float, float]) -> Table:
    body = []
    for r in rows:
        if "error" in r:
            body.append([r["load"], r["batch"], r["system"], r["error"], None, None, None])
            continue
        p, n = r["phases"], r["batches"]
        per = [None if p[k] is None else p[k] / n for k in ("sample", "gather", "block_prepare")]
        body.append([r["load"], r["batch"], r["system"], *(_ms(v) for v in per), _ms(sum(v or 0 for v in per))])
    return Table(["load", "batch", "system", "sample", "gather", "block prepare", "fixed cost"], body,
                 numeric=(False, True, False, True, True, True, True),
                 title="Per batch (ms): SAGE on Cora, fanouts 10,5, 2 threads, inference passes over every node",
                 notes=[f"Load average {loads[0]:.1f} at start, {loads[1]:.1f} at end, {os.cpu_count()} cores. "
                        "Phase medians per pass divided by the pass's batches; block prepare includes the system's "
                        "own per-block prepare."])


def headline_table(rows: list[dict], loads: tuple[float, float], title: str | None = None) -> Table:
    body = []
    for r in rows:
        if "error" in r:
            body.append([r["code"], r["system"], r["threads"], r["error"], None, None])
            continue
        p = r["phases"]
        body.append([r["code"], r["system"], r["threads"], _ms(p["epoch_time"]), _ms(p["optimizer"]),
                     _ms(p["sample"])])
    return Table(["code", "system", "threads", "epoch (ms)", "optimizer (ms)", "sample (ms)"], body,
                 numeric=(False, False, True, True, True, True),
                 title=title or "Issue 43's case: SAGE on Cora trained at batch 16, fanouts 10,5, a busy process "
                                "beside",
                 notes=[f"Load average {loads[0]:.1f} at start, {loads[1]:.1f} at end, {os.cpu_count()} cores. "
                        "Medians over the timed epochs."])


def _keep(part: str, kept: dict, payload: dict, tables: list, table) -> None:
    """Add ``part``'s table: measured now, else as ``--keep`` found it in the results JSON (with its load)."""
    if part not in payload and part in kept:
        payload[part], payload[f"{part}_load"] = kept[part], kept[f"{part}_load"]
    if part in payload:
        tables.append(table(payload[part], payload[f"{part}_load"]))


def run(args) -> int:
    parts = set(args.parts.split(","))
    payload: dict[str, Any] = provenance(epochs=args.epochs, warmup=args.warmup)
    kept = json.loads(Path(args.out + ".json").read_text()) if args.keep else {}
    tables = []
    if "sections" in parts:
        start = _load()
        rows = measure_sections(args.reps)
        payload["sections"], payload["sections_load"] = rows, (start, _load())
    _keep("sections", kept, payload, tables, sections_table)
    if "batches" in parts:
        start, rows = _load(), []
        for load in LOADS:
            with beside(load):
                for batch in BATCHES:
                    for system in SYSTEMS:
                        rows.append({"load": load, "batch": batch, "system": system,
                                     **run_once(args, system, batch, 2, "inference", {})})
                        print(json.dumps(rows[-1]), flush=True)
        payload["batches"], payload["batches_load"] = rows, (start, _load())
    _keep("batches", kept, payload, tables, batches_table)
    if "pools" in parts:
        start, rows = _load(), []
        with beside("busy"):
            for _ in range(args.rounds):
                for code, env in POOLS:
                    for system in ("isplib", "reference"):
                        rows.append({"code": code, "system": system, "threads": 2,
                                     **run_once(args, system, 16, 2, "train", env)})
                        print(json.dumps(rows[-1]), flush=True)
        payload["pools"], payload["pools_load"] = rows, (start, _load())
    _keep("pools", kept, payload, tables, lambda rows, loads: headline_table(
        rows, loads, "Thread pools: SAGE on Cora trained at batch 16, fanouts 10,5, 2 threads, a busy process beside"))
    if "headline" in parts:
        codes = [("after", {})] + ([("before", _before_env(Path(args.before)))] if args.before else [])
        start, rows = _load(), []
        with beside("busy"):
            for _ in range(args.rounds):
                for code, env in codes:
                    for system, threads in (("isplib", 2), ("isplib", 1), ("reference", 2)):
                        rows.append({"code": code, "system": system, "threads": threads,
                                     **run_once(args, system, 16, threads, "train", env)})
                        print(json.dumps(rows[-1]), flush=True)
        payload["headline"], payload["headline_load"] = rows, (start, _load())
    _keep("headline", kept, payload, tables, headline_table)
    markdown = "# A sampled batch's fixed costs (benchmarks/studies/bench_batch_cost.py)\n\n" + "\n".join(
        t.render("markdown") for t in tables)
    write_results(args.out, payload, markdown)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="bench_batch_cost.py", description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="folder of the Planetoid files (Cora)")
    parser.add_argument("--epochs", type=count, default=3, help="timed epochs (passes) per run (default: 3)")
    parser.add_argument("--warmup", type=count, default=1, help="untimed first epochs (default: 1)")
    parser.add_argument("--reps", type=count, default=15, help="repetitions of each section (default: 15)")
    parser.add_argument("--parts", default="sections,batches,pools,headline", help="which tables (default: all four)")
    parser.add_argument("--rounds", type=count, default=1,
                        help="interleaved rounds of the pools and headline tables (default: 1)")
    parser.add_argument("--before", metavar="TREE", help="an export of the code before the change, run too")
    parser.add_argument("--keep", action="store_true",
                        help="keep the tables of parts not measured now from the results JSON at --out")
    parser.add_argument("--out", type=out_path, default="results/studies/batch_cost", help="results path without suffix")
    return run_script("bench_batch_cost.py", parser, run, argv)


if __name__ == "__main__":
    sys.exit(main())
