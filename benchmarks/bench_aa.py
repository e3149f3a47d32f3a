"""A/A: how often ``compare`` calls two identical configurations different, and how often it finds a slower one.

    python benchmarks/bench_aa.py [--seeds 10] [--epochs 30] [--draws 100] [--dry-run] [--render-only]

The runs are the campaign ``campaigns/aa.toml``: GCN on the embedded ``sbm``
with ``aa_one`` and ``aa_two`` (reference's ``spmm_sum`` under two names,
built identically) and ``aa_slow`` (the same plus extra gathers inside its
kernel, about 10 % slower per epoch), each system in ``--seeds`` processes,
interleaved by the sweep (benchmarks/aa_systems; put on
``GNNBENCH_SYSTEMS_PATH`` here). Then, from the stored processes:

* *before issue 42*: every pair of one ``aa_one`` and one ``aa_two`` process
  compared as ``compare`` used to, by a bootstrap over the two processes'
  epochs (reproduced here for contrast only; the library keeps one
  implementation, Note [between-process statistics]). Marked ``-``/``+`` is a
  false positive;
* *pooled processes*: ``--draws`` random draws of 5 ``aa_one`` against 5
  ``aa_two`` processes through :func:`gnnbench.results.compare.compare`: the
  share marked ``-``/``+`` is the false-positive rate, the share withheld as
  unstable says how often the gate could not see; 5 ``aa_one`` against 5
  ``aa_slow`` processes: the share marked ``+`` is the power at the measured
  slowdown.

Writes results/aa.{md,json}.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import (ROOT, Parser, Table, campaign, count, measure_or_render, measured_note, ok,  # noqa: E402
                     out_path, print_plan, provenance, run_script, write_results)

AA_SYSTEMS = ROOT / "benchmarks" / "aa_systems"
NAMES = ("aa_one", "aa_two", "aa_slow")
DRAWN = 5  # processes per side in a pooled draw: the fewest a claim needs (MIN_PROCESSES)


def _old_rule(base: list[float], own: list[float], factor: float) -> str:
    """The mark ``compare`` gave one process against one before issue 42: a bootstrap over their epochs."""
    import numpy as np
    from scipy.stats import bootstrap

    def ratio(b, o, axis=-1):
        return np.median(b, axis=axis) / np.median(o, axis=axis)

    res = bootstrap((np.asarray(base), np.asarray(own)), ratio, n_resamples=2000, method="percentile",
                    vectorized=True, paired=False, rng=np.random.default_rng(0))
    value, low, high = float(ratio(np.asarray(base), np.asarray(own))), res.confidence_interval.low, \
        res.confidence_interval.high
    beyond = value >= factor or value <= 1 / factor
    return ("-" if value > 1 else "+") if beyond and (low > 1 or high < 1) else ("~" if beyond else "")


def _draws(rows: dict[str, list[dict]], base: str, other: str, draws: int) -> list:
    """``draws`` comparisons of :data:`DRAWN` ``base`` processes against :data:`DRAWN` ``other`` ones."""
    import numpy as np

    from gnnbench.results.compare import compare

    rng = np.random.default_rng(0)
    out = []
    for _ in range(draws):
        pick = [rows[name][i] for name in (base, other)
                for i in rng.choice(len(rows[name]), DRAWN, replace=False)]
        out.append(next(r for r in compare(pick, baseline=base, include_unverified=True).results
                        if r.system == other))
    return out


def evaluate(rows: list[dict], draws: int) -> dict:
    """The false-positive rates and the power (module docstring) from the campaign's stored rows."""
    from gnnbench.core.statistics import FACTOR
    from gnnbench.results.compare import compare

    by = {name: [r for r in rows if r.get("system") == name and ok(r)] for name in NAMES}
    pairs = [_old_rule(a["epoch_times"], b["epoch_times"], FACTOR) for a in by["aa_one"] for b in by["aa_two"]]
    enough = all(len(by[n]) >= DRAWN for n in NAMES)
    aa = _draws(by, "aa_one", "aa_two", draws) if enough else []
    power = _draws(by, "aa_one", "aa_slow", draws) if enough else []
    everything = compare([r for n in NAMES for r in by[n]], baseline="aa_one", include_unverified=True).results
    return {
        "processes": {n: len(by[n]) for n in NAMES},
        "old_pairs": len(pairs), "old_false_positives": sum(m in ("-", "+") for m in pairs),
        "draws": len(aa), "false_positives": sum(r.mark in ("-", "+") for r in aa),
        "aa_unclaimed": sum(bool(r.withheld) for r in aa),
        "power": sum(r.mark == "+" for r in power), "power_unclaimed": sum(bool(r.withheld) for r in power),
        "pooled": {r.system: {"median_s": r.median_s, "speedup": r.speedup, "ci": [r.ci_low, r.ci_high],
                              "mark": r.mark, "withheld": r.withheld, "processes": r.processes}
                   for r in everything},
    }


def _share(hits: int, total: int) -> str:
    return f"{hits} of {total} ({hits / total:.0%})" if total else "-"


def render(result: dict, meta: dict) -> str:
    pooled = result["pooled"]
    slow = pooled.get("aa_slow", {})
    effect = f"{1 / slow['speedup'] - 1:+.1%}" if slow.get("speedup") else "unknown"
    table = Table(["comparison", "rule", "trials", "marked - or +", "withheld as unstable", "marked + (power)"], [
        ["aa_two vs aa_one, 1 process each", "before issue 42: bootstrap over one process's epochs",
         result["old_pairs"], _share(result["old_false_positives"], result["old_pairs"]), "-", "-"],
        [f"aa_two vs aa_one, {DRAWN} processes each", "pooled processes, two-level bootstrap", result["draws"],
         _share(result["false_positives"], result["draws"]), _share(result["aa_unclaimed"], result["draws"]), "-"],
        [f"aa_slow vs aa_one, {DRAWN} processes each", "pooled processes, two-level bootstrap", result["draws"],
         "-", _share(result["power_unclaimed"], result["draws"]), _share(result["power"], result["draws"])],
    ], [False, False, True, True, True, True])
    return "\n".join([
        "# A/A: false positives and power of `compare`", "",
        f"GCN on `sbm`, {meta['epochs']} epochs ({meta['warmup']} warm-up excluded), threads {meta['threads']}; "
        f"processes per system: {', '.join(f'{k} {v}' for k, v in result['processes'].items())}. aa_one and "
        f"aa_two are one build under two names; aa_slow does extra gathers inside its kernel, measured "
        f"{effect} per epoch over all its processes. {measured_note(meta['load'], meta['commits'])}", "",
        table.render("markdown"),
        "A false positive is aa_two marked `-` or `+` against its identical twin; the power is the share of draws "
        "that mark aa_slow `+`. Draws pick processes at random without replacement (seed 0); a draw withheld as "
        "unstable (Note [between-process statistics]) is never marked.", ""])


def run(args) -> int:
    os.environ["GNNBENCH_SYSTEMS_PATH"] = os.pathsep.join(
        p for p in (str(AA_SYSTEMS), os.environ.get("GNNBENCH_SYSTEMS_PATH", "")) if p)
    the_campaign = campaign("aa", seeds=list(range(args.seeds)) if args.seeds else None, epochs=args.epochs)
    results = ROOT / "results" / "benchmarks.sqlite"
    if args.dry_run:
        return print_plan("bench_aa", the_campaign, results)
    rows, load = measure_or_render(the_campaign, results, args.render_only,
                                   lambda r: (r.get("system"), r.get("seed")) if r.get("system") in NAMES else None)
    result = evaluate(rows, args.draws)
    first = rows[0] if rows else {}
    meta = {"epochs": first.get("epochs"), "warmup": first.get("warmup"), "threads": first.get("threads"),
            "load": None if load[0] is None else load,
            "commits": [r.get("git_commit") for r in rows if r.get("git_commit")]}
    write_results(args.out, {**provenance(campaign="aa"), **result, **meta}, render(result, meta))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=count, help="processes per system (default: the campaign's 10)")
    p.add_argument("--epochs", type=count, help="epochs per run, warm-ups included (default: the campaign's 30)")
    p.add_argument("--draws", type=count, default=100, help="random draws of 5 against 5 processes (default: 100)")
    p.add_argument("--dry-run", action="store_true", help="list the runs that would be made, make none")
    p.add_argument("--render-only", action="store_true", help="render from stored rows, run nothing")
    p.add_argument("--out", type=out_path, default=str(ROOT / "results" / "aa"), help="results path, no suffix")
    return run_script("bench_aa", p, run, argv)


if __name__ == "__main__":
    sys.exit(main())
