"""The sequential test's error rates by simulation, on process noise as measured on this machine (issue 54).

    python benchmarks/studies/bench_sequential.py [--trials N] [--max-rounds R] [--out results/studies/sequential]

No process is run: :func:`gnnbench.core.simulation.simulate` draws paired ABBA
rounds from :class:`~gnnbench.core.simulation.ProcessNoise` fitted to issue 54's
A/A figures (quiet, and with ASLR off), for identical systems and for systems
5 % and 10 % slower, and runs the test of Note [sequential test] in
gnnbench/core/sequential.py on each trial. The table gives how often each
verdict came and how many rounds (and processes, both systems) a trial needed.
A figure measured on real processes comes from ``bench_aa.py --decide``.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py, also when loaded by path
from _common import ROOT, Parser, Table, count, out_path, provenance, run_script, write_results  # noqa: E402

#: the slowdowns simulated: identical systems, one at the default threshold, issue 54's demo system
EFFECTS = (0.0, 0.05, 0.10)


def measure(trials: int, max_rounds: int, seed: int = 0) -> list[dict]:
    """One record per noise model and effect: the verdicts' shares and the rounds trials needed."""
    from dataclasses import replace

    from gnnbench.core.simulation import ASLR_OFF, OUTLIER, QUIET, simulate

    out = []
    noises = (("quiet", QUIET), (f"quiet, 3 % of processes {OUTLIER:.0%} slower", replace(QUIET, outliers=0.03)),
              ("ASLR off", ASLR_OFF))
    for name, noise in noises:
        for i, effect in enumerate(EFFECTS):
            s = simulate(noise, effect, trials=trials, max_rounds=max_rounds, seed=seed + i)
            out.append({"noise": name, "spread": noise.spread, "paired_sd": noise.paired_sd(), "effect": effect,
                        "threshold": s.threshold, "trials": s.trials, **{w: s.share(w) for w in s.counts},
                        "rounds_median": s.rounds_quantile(0.5), "rounds_p90": s.rounds_quantile(0.9),
                        "processes_median": s.processes_quantile(0.5), "processes_p90": s.processes_quantile(0.9)})
    return out


def render(records: list[dict], meta: dict) -> str:
    from gnnbench.core.sequential import ALPHA, BETA, MIN_ROUNDS

    cells = [[r["noise"], f"{r['paired_sd']:.1%}", f"{r['effect']:.0%} slower" if r["effect"] else "identical",
              f"{r['faster'] + r['slower']:.1%}", f"{r['slower']:.1%}", f"{r['same']:.1%}", f"{r['undecided']:.1%}",
              f"{r['rounds_median']:.0f} / {r['rounds_p90']:.0f}",
              f"{r['processes_median']:.0f} / {r['processes_p90']:.0f}"] for r in records]
    return "\n".join([
        "# The sequential test's error rates, by simulation (issue 54)", "",
        f"`python benchmarks/studies/bench_sequential.py`: {meta['trials']} simulated comparisons a row, each up to "
        f"{meta['max_rounds']} ABBA rounds (2 processes of each system a round), decided by the test of Note "
        f"[sequential test] in gnnbench/core/sequential.py at a {records[0]['threshold']:.0%} threshold, alpha = "
        f"{ALPHA:g}, beta = {BETA:g}, looking from round {MIN_ROUNDS}. Process medians are drawn as "
        "gnnbench.core.simulation.ProcessNoise: a drift shared by neighbouring processes (lag-1 "
        "autocorrelation 0.54, lag 2 0.36) plus what each process keeps, fitted to issue 54's A/A runs (quiet: "
        "spread 12 %; ASLR off: paired sd 8.4 %); the second block adds outlier processes, a heavier tail than "
        "the normal's. Simulated, not measured: the A/A campaign "
        "(`benchmarks/studies/bench_aa.py --decide`) measures the same on real processes.", "",
        Table(["noise", "paired sd", "system", "called different", "called slower", "same", "undecided",
               "rounds (median / 90th pct)", "processes (median / 90th pct)"], cells,
              [False, True, False, True, True, True, True, True, True]).render("markdown").rstrip("\n"), "",
        "Targets (issue 54): identical systems called different in at most 5 % of trials, the 10 %-slower "
        "system called slower in at least 90 %.", ""])


def _run(args) -> int:
    records = measure(args.trials, args.max_rounds)
    meta = provenance(trials=args.trials, max_rounds=args.max_rounds)
    write_results(args.out, {"meta": meta, "rows": records}, render(records, meta))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=count, default=10_000, help="comparisons simulated a row (default: 10000)")
    parser.add_argument("--max-rounds", type=count, default=60,
                        help="the budget of each comparison, in rounds (default: 60)")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "studies" / "sequential"))
    return run_script("bench_sequential", parser, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
