"""The training loop's share outside the kernels, before and after the fused dense ops and dropout (issue 19).

    python benchmarks/studies/bench_loop_share.py [--quick] [--rounds 10] [--models gcn,sage,gin]
        [--systems floor,dgl-native] [--dataset rmat:...]

``results/bench_training.md`` found gnnbench's loop around the cheapest SpMM
(``floor``, benchmarks/bound_systems) slower than dgl-native's whole epoch for
SAGE and GIN. This script measures where that time goes and what the changes
of Note [fused dense ops] and Note [fused dropout] saved, in ONE process: each
(system, loop) arm is built once on the same graph, then the arms run one
epoch each, round after round (A B C D A B C D ...), so the machine's drift
hits every arm alike (COMMON.md: the 2 vCPUs swing ~2x within seconds). It
reports each arm's median epoch, its kernel time (Note [kernel time]) and
rest, the median of the per-round ratios with their spread, and a per-op
table of one profiled epoch per arm (``torch.profiler`` self CPU time).

The arms are ``before`` (:func:`unfused_frontend`: the op set as it was,
``add(matmul)`` for a bias, ``add(mul)`` for GCN's scale, a float mask
multiplied in and kept for the backward, the loss over gathered rows, and
GIN's identity multiply) and
``after`` (the frontend and models as they are). ``dgl-native`` uses the
frontend's dropout too, so it runs in both. Writes
results/studies/bench_loop_share.{md,json}.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import ROOT, Table, load_note, ms, out_path, provenance, versions, write_results  # noqa: E402

import numpy as np  # noqa: E402

FULL = "rmat:nodes=131072,edges=4000000,features=128,classes=8"
QUICK = "rmat:nodes=16384,edges=500000,features=128,classes=8"
MODELS = ("gcn", "sage", "gin")
SYSTEMS = ("floor", "dgl-native")
LOOPS = ("before", "after")
BOUND_SYSTEMS = ROOT / "benchmarks" / "bound_systems"


def unfused_frontend(threads: int):
    """The torch frontend as it was before Note [fused dense ops], Note [fused dropout] and Note [loss without a
    gather]."""
    import torch
    from torch.profiler import record_function

    from gnnbench.frameworks.dropout import dropout_mask
    from gnnbench.frameworks.torch_frontend import TorchFrontend

    class UnfusedFrontend(TorchFrontend):
        def linear(self, x, w, b):
            return self.add(self.matmul(x, w), b)

        def mul_add(self, a, b, c):
            return self.add(self.mul(a, b), c)

        def dropout(self, x, p, training):
            if p <= 0 or not training:
                return x
            with record_function("dropout_mask (numba)"):  # else invisible to the profiler
                mask = dropout_mask(self._seed, self._dropout_calls, tuple(x.shape), p, np.float32)
            self._dropout_calls += 1
            return x * torch.from_numpy(mask)

        def nll_loss(self, log_probs, labels, mask):
            return torch.nn.functional.nll_loss(log_probs[mask], labels[mask])

    F = UnfusedFrontend()
    F.set_threads(threads)
    return F


def _gin_before():
    """GIN as it was: the self term multiplied by ``1 + epsilon`` even when epsilon is 0."""
    from gnnbench.models.base import Conv, glorot, zeros
    from gnnbench.models.gin import EPSILON, GIN

    class GINBefore(GIN):
        def conv(self, index, in_dim, out_dim):
            hidden = self.hyper.hidden

            def forward(F, p, graph, x):
                h = F.add(F.mul(x, 1.0 + EPSILON), F.spmm(graph, x, None, reduce="sum"))
                h = F.relu(F.linear(h, p["weight1"], p["bias1"]))
                return F.linear(h, p["weight2"], p["bias2"])

            return Conv({"weight1": ((in_dim, hidden), glorot), "bias1": ((hidden,), zeros),
                         "weight2": ((hidden, out_dim), glorot), "bias2": ((out_dim,), zeros)}, forward)

    return GINBefore


class Arm:
    """One (system, loop) pair built on the dataset: ``epoch()`` trains one epoch and returns (seconds, kernel s)."""

    def __init__(self, system: str, loop: str, model_name: str, dataset, F, hidden: int = 64):
        from gnnbench.datasets.objective import Objective
        from gnnbench.models import get_model

        self.system, self.loop, self.F = system, loop, F
        model_cls = get_model(model_name)
        if loop == "before" and model_name == "gin":
            model_cls = _gin_before()
        hyper = replace(model_cls.defaults, hidden=hidden)
        graph = dataset.graph.with_self_loops() if model_cls.self_loops else dataset.graph
        model = model_cls(dataset.features.shape[1], dataset.num_classes, hyper)
        F.seed(0)
        initial = model.init_params(0)
        x = F.tensor(dataset.features)
        self.objective = Objective(F, dataset)
        self.kernel_system = not system.endswith("-native")
        self.bound, self.tune_s = None, None
        if self.kernel_system:
            from gnnbench.runtime.glue import BoundGraph
            from gnnbench.runtime.registry import load_system

            self.bound = bound = BoundGraph(graph, load_system(system, "torch", "cpu"))
            bound.prepare()
            params = {name: F.parameter(value) for name, value in initial.items()}
            self.forward: Callable[[bool], Any] = lambda training: model.forward(F, params, bound, x, training)
        else:
            from gnnbench.peers import build_native

            params, self.forward = build_native(system, model, graph, initial, F, x)
        self.optimizer = F.optimizer(params, hyper.lr, hyper.weight_decay)

    @property
    def name(self) -> str:
        return f"{self.system}, {self.loop}"

    def epoch(self) -> tuple[float, float | None]:
        from gnnbench.runtime.kernel_clock import measuring

        F = self.F
        with measuring() as kernels:
            start = time.perf_counter()
            F.zero_grad(self.optimizer)
            F.backward(self.objective.loss(self.forward(True)))
            F.step(self.optimizer)
            seconds = time.perf_counter() - start
        return seconds, (kernels.total if self.kernel_system else None)

    def tune(self, first_epoch_s: float) -> None:
        """Tune on first use as a run does (Note [tune on first use]): the paths the warm-ups ran untuned."""
        hook = self.bound.system.hook("tune") if self.bound is not None else None
        if hook is None:
            return
        from gnnbench.run.tuning import tune_budget_s

        result = hook(self.bound.graph, views=(self.bound.view(False), self.bound.view(True)),
                      budget_s=tune_budget_s(first_epoch_s, 200), progress=None)
        self.tune_s = result.wall_time_s if result is not None else 0.0

    def profile(self) -> dict[str, float]:
        """Self CPU seconds per op name over one epoch (``torch.profiler``)."""
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            self.epoch()
        return {e.key: e.self_cpu_time_total / 1e6 for e in prof.key_averages()}


def call_overhead(system: str, calls: int = 2000, blocks: int = 7) -> dict[str, float]:
    """Microseconds per ``spmm`` call spent outside the kernel: the frontend's fixed cost.

    The system's ``spmm`` runs through the frontend with its kernel function
    swapped for one that returns at once, so what remains is everything a
    model's call pays besides the kernel: the autograd bridge, the boundary's
    checks (dtype, device, shape, contiguity), the output's allocation, the
    DLPack views and the kernel clock (running, as in a timed epoch). Timing a
    real kernel on a tiny graph instead measures the parallel region's wake-up
    on a busy machine (milliseconds, at random). Forward alone, and forward
    plus backward (two bridge calls), in alternating blocks of ``calls``.
    """
    from dataclasses import replace as replace_field

    import torch

    from gnnbench.frameworks.torch_frontend import TorchFrontend
    from gnnbench.runtime.glue import BoundGraph, OperatorCall
    from gnnbench.runtime.graph import Graph
    from gnnbench.runtime.kernel_clock import measuring
    from gnnbench.runtime.registry import load_system

    rng = np.random.default_rng(0)
    graph = Graph.from_edges(rng.integers(0, 64, 256), rng.integers(0, 64, 256), 64)
    bound = BoundGraph(graph, load_system(system, "torch", "cpu"))
    bound.prepare()
    real = bound.system.find("spmm", {"reduce": "sum"}).apply.__self__

    def nothing(*args, **kwargs):
        return None

    plan = real.plan
    plan = replace_field(plan, decl=replace_field(plan.decl, fn=nothing),
                         rules=tuple(replace_field(r, callee=replace_field(r.callee, fn=nothing)) for r in plan.rules))
    call = OperatorCall(real.__module__, plan, real.arrays, real._bridge)
    F = TorchFrontend()
    x = torch.randn(64, 16, requires_grad=True)
    grad = torch.ones(64, 1, 16)

    def forward():
        with torch.no_grad():
            call.apply(bound, {"reduce": "sum"}, x.detach().unsqueeze(1), None)

    def both():
        call.apply(bound, {"reduce": "sum"}, x.unsqueeze(1), None).backward(grad)

    cases = {"forward": forward, "forward and backward": both}
    times: dict[str, list[float]] = {name: [] for name in cases}
    with measuring():
        for _ in range(blocks):
            for name, run in cases.items():
                start = time.perf_counter()
                for _ in range(calls):
                    run()
                times[name].append((time.perf_counter() - start) / calls * 1e6)
    del F
    return {name: float(np.median(v)) for name, v in times.items()}


def _quantiles(values: list[float]) -> dict[str, float]:
    q25, q50, q75 = np.percentile(values, [25, 50, 75])
    return {"median": float(q50), "q25": float(q25), "q75": float(q75)}


def measure(arms: list[Arm], rounds: int, warmup: int = 2) -> dict[str, dict[str, Any]]:
    """Interleaved epochs: every arm once per round, after its warm-ups and its first-use tuning.

    Returns per arm its epoch and kernel times.
    """
    for arm in arms:
        first = [arm.epoch()[0] for _ in range(max(warmup, 1))][0]
        arm.tune(first)
        arm.epoch()  # a tuned variant's compilation stays out of the timed rounds
    out = {arm.name: {"epoch_s": [], "kernel_s": [], "tune_s": arm.tune_s} for arm in arms}
    for _ in range(rounds):
        for arm in arms:
            seconds, kernels = arm.epoch()
            out[arm.name]["epoch_s"].append(seconds)
            if kernels is not None:
                out[arm.name]["kernel_s"].append(kernels)
    return out


def summarise(samples: dict[str, dict[str, list[float]]], pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Medians per arm (epoch, kernels, rest) and the per-round ratios ``a / b`` of each pair."""
    arms = {}
    for name, s in samples.items():
        entry = {"epoch": _quantiles(s["epoch_s"])}
        if s["kernel_s"]:
            entry["kernel"] = _quantiles(s["kernel_s"])
            entry["rest"] = _quantiles([e - k for e, k in zip(s["epoch_s"], s["kernel_s"])])
        arms[name] = entry
    ratios = {}
    for a, b in pairs:
        if a in samples and b in samples:
            ratios[f"{a} / {b}"] = _quantiles([x / y for x, y in zip(samples[a]["epoch_s"], samples[b]["epoch_s"])])
            if samples[a]["kernel_s"] and samples[b]["kernel_s"]:
                rest = [(ea - ka) / (eb - kb) for ea, ka, eb, kb in zip(samples[a]["epoch_s"], samples[a]["kernel_s"],
                                                                        samples[b]["epoch_s"], samples[b]["kernel_s"])]
                ratios[f"rest: {a} / {b}"] = _quantiles(rest)
    return {"arms": arms, "ratios": ratios}


def pairs_for(names: list[str]) -> list[tuple[str, str]]:
    """The ratios to report: each system after / before, and every arm / dgl-native in the same loop."""
    out = []
    systems = list(dict.fromkeys(n.split(", ")[0] for n in names))
    for system in systems:
        out.append((f"{system}, after", f"{system}, before"))
    for loop in LOOPS:
        for system in systems:
            if system != "dgl-native":
                out.append((f"{system}, {loop}", f"dgl-native, {loop}"))
    return [p for p in out if p[0] in names and p[1] in names]


def _spread(q: dict[str, float], digits: int = 2) -> str:
    return f"{q['median']:.{digits}f}x ({q['q25']:.{digits}f}-{q['q75']:.{digits}f})"


def op_table(profiles: dict[str, dict[str, float]], rows: int = 18) -> tuple[list[str], list[list[str]]]:
    """Header and cells: the ops with the most self CPU time in any arm, ms per epoch in each arm."""
    names = list(profiles)
    ops = sorted({op for p in profiles.values() for op in p}, key=lambda op: -max(p.get(op, 0.0) for p in
                                                                                 profiles.values()))
    cells = [[op] + [ms(profiles[n].get(op), 1) if op in profiles[n] else "-" for n in names] for op in ops[:rows]]
    cells.append(["(all ops)"] + [ms(sum(profiles[n].values()), 1) for n in names])
    return ["op (self CPU ms)"] + names, cells


def render(results: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = ["# The training loop's share outside the kernels, before and after (issue 19)", "",
             f"{meta['dataset']}, hidden 64, threads {meta['threads']}, float32, {meta['allocator']} allocator, "
             f"one process: each arm built once, then {meta['rounds']} rounds of one epoch per arm, interleaved "
             f"(after {meta['warmup']} warm-up epochs each). {load_note(meta['load_average_start'], meta['load_average_end'])} "
             "Medians with the interquartile range in brackets; ratios are medians of per-round ratios. Absolute "
             "times on this machine swing ~2x within seconds: read the ratios. `before` is the loop as it was "
             "(unfused_frontend in this script: unfused bias adds, a float dropout mask multiplied in and kept for "
             "the backward, the loss over gathered rows, GIN's identity multiply); `after` is Note [fused dense "
             "ops], Note [fused dropout] and Note [loss without a gather]. "
             "`floor` is the bound system (isplib's unweighted row mean for every SpMM; it tunes on first use, "
             "after the warm-ups, with isplib's hook); kernel ms is its time "
             "inside kernels (Note [kernel time]), rest = epoch - kernels.", ""]
    for model, r in results.items():
        lines += [f"## {model}", ""]
        cells = []
        for name, a in r["arms"].items():
            e = a["epoch"]
            cells.append([name, f"{ms(e['median'], 0)} ({ms(e['q25'], 0)}-{ms(e['q75'], 0)})",
                          ms(a["kernel"]["median"], 0) if "kernel" in a else "-",
                          ms(a["rest"]["median"], 0) if "rest" in a else "-"])
        lines.append(Table(["arm", "epoch ms", "kernel ms", "rest ms"], cells, [False, True, True, True])
                     .render("markdown").rstrip("\n"))
        lines += [""]
        cells = [[pair, _spread(q)] for pair, q in r["ratios"].items()]
        lines.append(Table(["ratio", "median (q25-q75)"], cells, [False, True]).render("markdown").rstrip("\n"))
        header, cells = op_table(r["profiles"])
        lines += ["", "One profiled epoch per arm (self CPU ms; custom autograd functions such as `_Bridge` "
                  "include their kernel, `_Dropout` its fused pass; numba's mask fill is wrapped in a "
                  "record_function so that it shows):", ""]
        lines.append(Table(header, cells, [False] + [True] * (len(header) - 1)).render("markdown").rstrip("\n"))
        lines.append("")
    overhead = meta.get("call_overhead")
    if overhead:
        lines += ["## Fixed cost of one kernel call", "",
                  f"`spmm` of {meta['call_overhead_system']} through the frontend with its kernel swapped for one "
                  "that returns at once (`call_overhead`): the autograd bridge, the boundary checks (dtype, device, "
                  "shape, contiguity), the output's allocation, the DLPack views and the running kernel clock cost "
                  f"{overhead['forward']:.0f} us per forward call and {overhead['forward and backward']:.0f} us per "
                  "forward plus backward, whatever the graph's size. An epoch of GCN, SAGE or GIN makes 3 or 4 "
                  "forward and 2 to 4 backward calls, so the boundary costs well under a millisecond of it: the "
                  "loop's share is the dense work above, not the checks. No spmm input is an index array, so no "
                  "index-range scan runs per call.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"use {QUICK} instead of {FULL}")
    parser.add_argument("--dataset", default=None, help=f"dataset (default: {FULL})")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default: 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed epochs per arm first (default: 2)")
    parser.add_argument("--threads", type=int, default=2, help="(default: 2)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"(default: {','.join(MODELS)})")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"(default: {','.join(SYSTEMS)})")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "bench_loop_share"))
    args = parser.parse_args(argv)
    os.environ.setdefault("GNNBENCH_SYSTEMS_PATH", str(BOUND_SYSTEMS))
    from gnnbench.run.allocator import run_under

    allocator = run_under("auto")  # as every run (Note [allocator]); re-executes this script once if needed
    from gnnbench.datasets import load_dataset
    from gnnbench.frameworks.torch_frontend import TorchFrontend

    dataset_name = args.dataset or (QUICK if args.quick else FULL)
    dataset = load_dataset(dataset_name)
    fused = TorchFrontend()
    fused.set_threads(args.threads)
    frontends = {"before": unfused_frontend(args.threads), "after": fused}
    load_start = os.getloadavg()[0]
    results = {}
    for model in args.models.split(","):
        arms = [Arm(system, loop, model, dataset, frontends[loop])
                for system in args.systems.split(",") for loop in LOOPS]
        samples = measure(arms, args.rounds, args.warmup)
        summary = summarise(samples, pairs_for([a.name for a in arms]))
        summary["profiles"] = {arm.name: arm.profile() for arm in arms}
        summary["samples"] = samples
        results[model] = summary
        print(f"{model}: " + ", ".join(f"{n} {a['epoch']['median'] * 1e3:.0f} ms" for n, a in summary["arms"].items()),
              file=sys.stderr)
        del arms
    kernel_systems = [name for name in args.systems.split(",") if not name.endswith("-native")]
    overhead_system = kernel_systems[0] if kernel_systems else "reference"
    meta = provenance(dataset=dataset_name, call_overhead=call_overhead(overhead_system),
                      call_overhead_system=overhead_system, threads=args.threads, rounds=args.rounds, warmup=args.warmup,
                      allocator=allocator, load_average_start=load_start, load_average_end=os.getloadavg()[0],
                      versions=versions("torch", "dgl", "numba"))
    write_results(args.out, {"meta": meta, "models": results}, render(results, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
