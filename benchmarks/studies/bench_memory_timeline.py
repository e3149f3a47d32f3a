"""Where a training epoch's peak memory is, and what is live there: systems side by side (issue 19).

    python benchmarks/studies/bench_memory_timeline.py [--systems isplib,dgl-native] [--model sage]
        [--dataset rmat:nodes=2097152,edges=64000000,features=128,classes=8] [--quick]

Each system trains the model in its own process, as ``gnnbench run`` would
(warm-ups untimed, tuning on first use), under the allocator of the rows it
explains. The last epoch runs under PyTorch's profiler with
``profile_memory=True`` and a thread samples the process's resident set every
millisecond, so one epoch yields two curves:

* **tensors**: every byte the framework's allocator hands out and takes back,
  counted from the start of the epoch, with the operator that asked for it;
* **resident**: what the process holds from the operating system, which is
  what a row's ``peak_memory_bytes`` measures.

Note [tensor peak and resident peak]
    The tensor peak is where the model's arithmetic puts it (which
    activations and gradients are alive at once); the resident peak adds
    what the allocator keeps mapped after a free or maps afresh because its
    free spans do not fit. Two systems can hold the same tensors at their
    peaks and still differ in ``peak_memory_bytes`` by the allocator's share,
    which moves from process to process. This script separates the two, so
    a memory gap is traced to a tensor a system keeps (its glue's saved
    inputs, a workspace) or to the allocator, never guessed.

Writes ``results/studies/memory_timeline.{md,json}`` (``--out``). Profiling slows
the profiled epoch, so its times are not epoch times; the peaks are exact.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import ROOT, mib, out_path, provenance, write_results  # noqa: E402

DATASET = "rmat:nodes=2097152,edges=64000000,features=128,classes=8"
QUICK = "rmat:nodes=16384,edges=500000,features=128,classes=8"
#: allocations at least this large are listed among the tensors live at the peak
LISTED_BYTES = 1 << 20


# ------------------------------------------------------------------ worker
def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def profile_last_epoch(system: str, model: str, dataset: str, epochs: int, warmup: int, hidden: int) -> dict:
    """Train in this process; profile the last epoch's allocations and sample its resident set."""
    import torch

    from gnnbench.run import harness
    from gnnbench.run.config import RunConfig

    samples: list[tuple[float, int]] = []
    stop = threading.Event()
    state: dict[str, Any] = {}

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.perf_counter(), _resident_bytes()))
            time.sleep(0.001)

    def on_event(event) -> None:
        if event.kind == "epoch" and event.step == epochs - 1 and "profiler" not in state:
            state["t0"] = time.perf_counter()
            threading.Thread(target=sample, daemon=True).start()
            profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True)
            profiler.__enter__()
            state["profiler"] = profiler

    spec = RunConfig(system=system, model=model, dataset=dataset, epochs=epochs, warmup=warmup, hidden=hidden,
                     threads=2, selection="last")
    row = harness.train(spec, on_event=on_event)
    stop.set()
    profiler = state["profiler"]
    profiler.__exit__(None, None, None)
    with tempfile.NamedTemporaryFile(suffix=".json") as trace:
        profiler.export_chrome_trace(trace.name)
        events = json.load(open(trace.name))["traceEvents"]
    tensors = tensor_timeline(events)
    start = samples[0][1] if samples else 0
    resident_peak = max((r for _, r in samples), default=0)
    return {"system": system, "allocator": row.get("allocator"), "row_peak_bytes": row["peak_memory_bytes"],
            "epoch_resident_rise_bytes": resident_peak - start, **tensors}


def tensor_timeline(events: list[dict]) -> dict:
    """The tensor peak of a profiled stretch, its operator, and the allocations live there.

    ``[memory]`` events carry each allocation (``Bytes`` > 0) and free
    (``Bytes`` < 0) with its address; a live set keyed by address, replayed
    in time order, gives what is alive at the peak and who allocated it.
    """
    memory = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]

    def op_at(ts: float) -> str:
        enclosing = sorted((o for o in ops if o["ts"] <= ts <= o["ts"] + o["dur"]), key=lambda o: o["ts"])
        names = [o["name"].removeprefix("autograd::engine::evaluate_function: ") for o in enclosing]
        return " > ".join(dict.fromkeys(names)) or "(between operators)"

    live: dict[Any, tuple[int, float]] = {}
    total = peak = 0
    peak_ts, peak_live = None, {}
    for e in memory:
        nbytes, addr = int(e["args"]["Bytes"]), e["args"].get("Addr")
        if nbytes > 0:
            live[addr] = (nbytes, e["ts"])
        else:
            live.pop(addr, None)
        total += nbytes
        if total > peak:
            peak, peak_ts, peak_live = total, e["ts"], dict(live)
    t0 = memory[0]["ts"] if memory else 0
    listed = sorted(((n, ts) for n, ts in peak_live.values() if n >= LISTED_BYTES), key=lambda a: a[1])
    return {"tensor_peak_bytes": peak,
            "tensor_peak_at_ms": (peak_ts - t0) / 1e3 if peak_ts is not None else None,
            "tensor_peak_op": op_at(peak_ts) if peak_ts is not None else None,
            "live_at_peak": [{"bytes": n, "allocated_at_ms": (ts - t0) / 1e3, "by": op_at(ts)} for n, ts in listed]}


# ------------------------------------------------------------------ report
def markdown(report: dict) -> str:
    s = report["settings"]
    lines = ["# Where the peak is: tensors against resident memory, one training epoch", "",
             f"{s['model']} on `{s['dataset']}`, hidden {s['hidden']}, {s['epochs']} epochs ({s['warmup']} warm-ups), "
             f"threads 2; the last epoch profiled. Commit {report['git_commit']}. Each system in its own process "
             "(Note [tensor peak and resident peak] in benchmarks/studies/bench_memory_timeline.py).", "",
             "| system | allocator | row peak MiB | tensor peak MiB | resident rise in the epoch MiB | "
             "row peak - tensor peak MiB (held before the epoch, and the allocator's) | tensor peak inside |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in report["runs"]:
        lines.append(f"| {r['system']} | {r['allocator']} | {mib(r['row_peak_bytes'])} | {mib(r['tensor_peak_bytes'])}"
                     f" | {mib(r['epoch_resident_rise_bytes'])} | {mib(r['row_peak_bytes'] - r['tensor_peak_bytes'])}"
                     f" | {r['tensor_peak_op']} |")
    for r in report["runs"]:
        lines += ["", f"## {r['system']}: allocations of at least 1 MiB live at the tensor peak "
                      f"({r['tensor_peak_at_ms']:.0f} ms into the epoch)", "",
                  "| MiB | allocated at ms | by |", "|---:|---:|---|"]
        lines += [f"| {mib(a['bytes'])} | {a['allocated_at_ms']:.0f} | {a['by']} |" for a in r["live_at_peak"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default="isplib,dgl-native", help="comma-separated systems")
    parser.add_argument("--model", default="sage")
    parser.add_argument("--dataset", default=DATASET)
    parser.add_argument("--quick", action="store_true", help=f"use {QUICK} (a smoke test)")
    parser.add_argument("--epochs", type=int, default=4, help="epochs, the last one profiled (default: 4)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--allocator", default="auto", help="allocator of every run (Note [allocator])")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "memory_timeline"),
                        help="output path without suffix")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # one system, in this process: prints its JSON
    args = parser.parse_args(argv)
    dataset = QUICK if args.quick else args.dataset
    if args.worker:
        from gnnbench.errors import UserError

        try:
            print(json.dumps(profile_last_epoch(args.worker, args.model, dataset, args.epochs, args.warmup,
                                                args.hidden)))
        except UserError as error:  # bad input: one line for the parent to pass on, exit status 2
            print(f"bench_memory_timeline: {error}", file=sys.stderr)
            return 2
        return 0
    from gnnbench.run.allocator import run_under

    allocator = run_under(args.allocator)
    runs = []
    for system in args.systems.split(","):
        cmd = [sys.executable, __file__, "--worker", system, "--model", args.model, "--dataset", dataset,
               "--epochs", str(args.epochs), "--warmup", str(args.warmup), "--hidden", str(args.hidden)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode == 2:  # the worker named the bad input in its last line; nothing is written
            print(done.stderr.strip().splitlines()[-1], file=sys.stderr)
            return 2
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"bench_memory_timeline: the {system} run failed (exit {done.returncode})")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{system}: row peak {mib(runs[-1]['row_peak_bytes'])} MiB, tensor peak "
              f"{mib(runs[-1]['tensor_peak_bytes'])} MiB", file=sys.stderr)
    report = provenance(allocator=allocator, settings={"model": args.model, "dataset": dataset, "epochs": args.epochs,
                                                       "warmup": args.warmup, "hidden": args.hidden})
    report["runs"] = runs
    write_results(args.out, report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
