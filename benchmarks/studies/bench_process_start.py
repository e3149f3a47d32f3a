"""Fresh or forked measurement processes: what each costs and how much they spread (issue 54, Note [cheap processes]).

    python benchmarks/studies/bench_process_start.py [--rounds N] [--condition quiet|loaded] [--toy] [--render-only]

The A/A configuration (``campaigns/aa.toml``: GCN on its R-MAT graph, 1 thread, pinned to CPU 1), its two
identically built systems ``aa_one`` and ``aa_two`` as the pair of a round, measured three ways, round by
round interleaved (the order of the three rotates each round) so that they share the machine's drift:

* ``fresh``: each process a new Python process (:func:`gnnbench.run.runner.run_task`, as ``gnnbench run``
  and ``sweep`` do);
* ``fork, one parent``: every process a fork of one warm parent (:class:`gnnbench.run.warm.WarmParent`),
  started once;
* ``fork, parent per round``: the round's two processes forks of a parent started for that round
  (:meth:`WarmParent.renew`), the design Note [cheap processes] argues keeps intervals honest.
* ``fork, spare parent per round``: the same with ``WarmParent(spare=True)``: the next round's parent
  prepares beside the runs, on a CPU they are not pinned to (Note [a spare parent]).

For each: the per-process overhead (wall seconds of a process less its timed epochs, plus its share of its
parent's start), the median epoch, and the spread of process medians across processes and within them
(:class:`gnnbench.core.statistics.Processes`). Every process's row is kept in ``results/process_start_*.sqlite``
(``extra.bench``: its way and round). ``--toy`` runs a tiny graph instead, only to prove the script works.
Writes results/studies/process_start_{quiet,loaded}.{md,json} (rows in results/process_start_*.sqlite, the store of
that condition).
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import (ROOT, Parser, Table, campaign, count, load_generator, measured_note, ok,  # noqa: E402
                     out_path, provenance, put_on_systems_path, rows_load, run_script, write_results)

SYSTEMS_DIR = ROOT / "benchmarks" / "aa_systems"
PAIR = ("aa_one", "aa_two")
WAYS = ("fresh", "fork, one parent", "fork, parent per round", "fork, spare parent per round")
TOY_DATASET = "sbm:nodes=400,classes=3,features=16,degree=8"


def store_of(args) -> Path:
    """Each condition's rows apart (a toy run's in results/tmp/), so that a quiet table pools quiet processes."""
    name = f"process_start_{args.condition}" if not args.toy else "tmp/process_start_toy"
    return ROOT / "results" / f"{name}.sqlite"


def configs(toy: bool, rounds: int) -> list:
    """The round's pair of configurations: the A/A campaign's ``aa_one`` and ``aa_two`` (a tiny graph with
    ``toy``)."""
    the_campaign = campaign("aa")
    chosen = [c for c in the_campaign.matrices[0].configs if c.system in PAIR]
    if toy:
        chosen = [c.replace(dataset=TOY_DATASET, epochs=6) for c in chosen]
    return chosen


class Ways:
    """The three ways of starting a process, each a callable ``run(spec) -> (row, overhead seconds)``."""

    def __init__(self, pair: Sequence):
        from gnnbench.run.warm import WarmParent

        self.pair = list(pair)
        self.one = WarmParent(self.pair)
        self.per_round = {"fork, parent per round": WarmParent(self.pair),
                          "fork, spare parent per round": WarmParent(self.pair, spare=True)}
        self.one_start_s = self._start(self.one)
        self.round_start_s = dict.fromkeys(self.per_round, 0.0)

    @staticmethod
    def _start(parent) -> float:
        start = time.perf_counter()
        parent.start()
        return time.perf_counter() - start

    def new_round(self) -> None:
        """A fresh parent for each per-round way (the wait for it is shared by the round's processes)."""
        for way, parent in self.per_round.items():
            start = time.perf_counter()
            parent.renew()
            self.round_start_s[way] = time.perf_counter() - start

    def run(self, way: str, spec) -> tuple[dict, float]:
        from gnnbench.run.runner import run_task

        start = time.perf_counter()
        if way == "fresh":
            row = run_task(spec)
        elif way == "fork, one parent":
            row = self.one.run(spec)
        else:
            row = self.per_round[way].run(spec)
        wall = time.perf_counter() - start
        return row, wall

    def close(self) -> None:
        self.one.close()
        for parent in self.per_round.values():
            parent.close()


def measure(args, pair: Sequence) -> None:
    """Run ``args.rounds`` rounds of each way, interleaved, storing every row."""
    from gnnbench.results.store import ResultsStore

    ways = Ways(pair)
    try:
        with ResultsStore(store_of(args)) as store:
            for r in range(args.rounds):
                ways.new_round()
                order = WAYS[r % len(WAYS):] + WAYS[:r % len(WAYS)]  # rotate, so no way always runs first
                for way in order:
                    for spec in (pair if r % 2 == 0 else pair[::-1]):  # ABBA within a way
                        row, wall = ways.run(way, spec)
                        parent_s = (0.0 if way == "fresh" else None if way == "fork, one parent" else
                                    ways.round_start_s[way] / len(pair))
                        row.setdefault("extra", {})
                        row["extra"] = {**(row["extra"] or {}), "bench": {
                            "way": way, "round": r, "wall_s": wall, "parent_share_s": parent_s,
                            "one_parent_start_s": ways.one_start_s if way == "fork, one parent" else None}}
                        store.insert(row)
                print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
    finally:
        ways.close()


def summarise(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per way: processes, overhead per process, median epoch, spreads across and within processes."""
    import numpy as np

    from gnnbench.core.statistics import Processes

    out = []
    for way in WAYS:
        mine = [r for r in rows if ok(r) and ((r.get("extra") or {}).get("bench") or {}).get("way") == way]
        if len(mine) < 2:
            out.append({"way": way, "processes": len(mine)})
            continue
        bench = [r["extra"]["bench"] for r in mine]
        one_start = max((b.get("one_parent_start_s") or 0.0) for b in bench)
        overhead = [b["wall_s"] - sum(r.get("epoch_times") or []) + (b["parent_share_s"] if b["parent_share_s"]
                    is not None else one_start / len(mine)) for b, r in zip(bench, mine)]
        p = Processes.from_rows(mine)
        parents = len({(r.get("extra") or {}).get("warm_parent") for r in mine}) if way != "fresh" else len(mine)
        out.append({"way": way, "processes": len(mine), "parents": parents,
                    "overhead_s": float(np.median(overhead)), "overhead_p90_s": float(np.quantile(overhead, 0.9)),
                    "timed_s": float(np.median([sum(r.get("epoch_times") or []) for r in mine])),
                    "median_s": p.median, "low_s": float(p.medians.min()), "high_s": float(p.medians.max()),
                    "between_spread": p.between_spread, "within_spread": p.within_spread})
    return out


def render(summaries: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> str:
    header = ["way", "processes", "parents", "overhead a process (median, p90)", "timed epochs a process",
              "epoch (median of process medians)", "process medians", "spread across processes",
              "within a process"]
    rows = []
    for s in summaries:
        if "median_s" not in s:
            rows.append([s["way"], str(s["processes"])] + ["-"] * 7)
            continue
        rows.append([s["way"], str(s["processes"]), str(s["parents"]),
                     f"{s['overhead_s']:.2f} s, {s['overhead_p90_s']:.2f} s", f"{s['timed_s']:.2f} s",
                     f"{s['median_s'] * 1e3:.2f} ms", f"{s['low_s'] * 1e3:.2f}-{s['high_s'] * 1e3:.2f} ms",
                     f"{s['between_spread']:.1%}", f"{s['within_spread']:.1%}"])
    toy = " **Toy run** (a tiny graph, only to prove the script works: not the A/A configuration)." \
        if meta.get("toy") else ""
    return "\n".join([
        "# Fresh or forked measurement processes (issue 54)", "",
        f"`python benchmarks/studies/bench_process_start.py --rounds {meta['rounds']} --condition {meta['condition']}`"
        f"{' --toy' if meta.get('toy') else ''}: GCN on `{meta['dataset']}`, "
        f"{meta['epochs']} epochs ({meta['warmup']} untimed warm-up), {meta['threads']} thread(s), pinned to CPU "
        f"{meta.get('cpus')}, systems `aa_one` and `aa_two` (built identically) as each round's pair, the three "
        "ways interleaved round by round. Overhead: a process's wall seconds, as its caller waits for it, less "
        "its timed epochs, plus its share of its warm parent's start (all of one parent's processes share it; "
        "a round's two share the wait for the per-round parent). Spread across processes: the standard deviation "
        "of the process medians over their mean; within: the median of each process's IQR / median "
        "(gnnbench.core.statistics.Processes). "
        "What a fork keeps and loses: Note [cheap processes] in gnnbench/run/warm.py." + toy, "",
        Table(header, rows, [False] + [True] * 8).render("markdown").rstrip("\n"), "",
        meta.get("measured", ""), ""])


def _run(args) -> int:
    from gnnbench.results.frame import frame_records, load_results

    put_on_systems_path(SYSTEMS_DIR)  # the A/A systems live outside systems/
    pair = configs(args.toy, args.rounds)
    load = (None, None)
    if not args.render_only:
        generator = load_generator(avoid=pair[0].cpus) if args.condition == "loaded" else None
        try:
            start = os.getloadavg()[0]
            measure(args, pair)
            load = (start, os.getloadavg()[0])
        finally:
            if generator is not None:
                generator.kill()
                generator.wait()
    rows = frame_records(load_results(store_of(args))) if store_of(args).exists() else []
    commits = sorted({r.get("git_commit") for r in rows if r.get("git_commit")})
    summaries = summarise(rows)
    config = pair[0]
    meta = provenance(dataset=config.dataset, epochs=config.epochs, warmup=config.warmup, threads=config.threads,
                      cpus=config.cpus, rounds=args.rounds, condition=args.condition, toy=args.toy,
                      measured=f"{args.condition}: " + measured_note(rows_load(rows) if load[0] is None else load,
                                                                   commits))
    out = args.out if args.out != _DEFAULT_OUT else default_out(args)
    write_results(out, {"meta": meta, "ways": summaries}, render(summaries, meta))
    return 0


_DEFAULT_OUT = str(ROOT / "results" / "studies" / "process_start")


def default_out(args) -> str:
    """Where a condition's table goes: results/studies/process_start_CONDITION (a toy run's beside its store)."""
    if args.toy:
        return str(store_of(args).with_suffix(""))
    return f"{_DEFAULT_OUT}_{args.condition}"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=count, default=20,
                        help="rounds per way; a round is one process of each of aa_one and aa_two (default: 20)")
    parser.add_argument("--condition", choices=("quiet", "loaded"), default="quiet",
                        help="run quiet, or beside a load generator keeping one core busy (default: quiet)")
    parser.add_argument("--toy", action="store_true",
                        help="a tiny graph and 6 epochs, to prove the script works (its own store and output)")
    parser.add_argument("--render-only", action="store_true", help="render the stored rows; run nothing")
    parser.add_argument("--out", type=out_path, default=_DEFAULT_OUT,
                        help="output path without suffix (default: results/studies/process_start_CONDITION)")
    return run_script("bench_process_start", parser, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
