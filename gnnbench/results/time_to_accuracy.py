"""``compare --metric time-to-accuracy``: which system trains a usable model sooner, over seeds.

Runs made with ``--target-accuracy`` (Note [time to accuracy] in
:mod:`gnnbench.run.target`) are grouped by dataset, model, framework, batching
and target; within a group each system (with its options: ``pim`` in int32
and in float32 are two entries) is one distribution over seeds, the latest
run of each seed. The figure is MLPerf's mean with the fastest and slowest
dropped, its speedup over the baseline an interval over seeds (Note [seed
statistics] in :mod:`gnnbench.core.statistics`), and the convergence check
(Note [convergence check]) compares each system's epochs to the target with
``reference``'s.

Note [time-to-accuracy marks]
    As ``compare``'s (Note [marks] in :mod:`gnnbench.results.compare`): ``-``
    sooner and ``+`` later beyond the factor with an interval excluding 1,
    ``~`` beyond the factor without, ``!`` no run succeeded. A system that
    simulates its aggregation (``pim``; Note [modeled rows] in
    :mod:`gnnbench.results.frame`) has epochs to the target but no time: its
    wall time is a simulation's, so the cell says so and nothing is claimed.
    Two marks are
    its own: ``n`` the target was not reached (two seeds or more missed it,
    so the figure is infinite; the cell says in how many epochs), and ``c``
    the system reached the target in significantly fewer epochs than
    ``reference`` (Note [convergence check]): its speed is not claimed until
    someone has looked at what it trains. Speedups are claimed only for
    verified systems, as in ``compare``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gnnbench.core.oracle import REFERENCE
from gnnbench.core.stability import MIN_PROCESSES
from gnnbench.core.statistics import CONFIDENCE, FACTOR, converges_early, seed_speedup, trimmed_mean
from gnnbench.results.row import Extra, TimeToAccuracy
from gnnbench.results.tables import Table, flat_records, fmt_number

__all__ = ["TtaResult", "TtaComparison", "compare_time_to_accuracy", "runs_by_group", "seed_figures", "simulated",
           "GROUP", "SIMULATED"]

#: the fields that make one time-to-accuracy group
GROUP = ("dataset", "model", "framework", "batching", "target")
#: the time cell of a system whose times are a simulation's wall time (Note [modeled rows])
SIMULATED = "simulated: epochs only"


@dataclass(frozen=True)
class TtaResult:
    """One system (with its options) in one group: its seeds and the figures over them."""

    group: dict[str, Any]
    system: str
    verified: str
    seeds: int
    reached: int
    max_epochs: int | None
    epochs: float | None = None          # trimmed mean over seeds of the epochs to the target
    seconds: float | None = None         # trimmed mean over seeds of the time to the target
    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    mark: str = ""
    note: str | None = None
    convergence_p: float | None = None


@dataclass
class TtaComparison:
    results: list[TtaResult]
    baseline: str

    @property
    def regressions(self) -> list[TtaResult]:
        return [r for r in self.results if any(m in r.mark for m in "+!nc")]

    def as_dicts(self) -> list[dict[str, Any]]:
        return flat_records(self.results)

    def table(self) -> Table:
        header = ["", *GROUP, "system", "verified", "seeds reached", "epochs to target", "time to target (s)",
                  "speedup", f"{CONFIDENCE:.0%} CI"]
        rows = []
        for r in self.results:
            if r.seconds is None:
                time = r.note or "n/a"
            elif not np.isfinite(r.seconds):
                time = f"did not reach {r.group['target']:g} in {r.max_epochs} epochs"
            else:
                time = fmt_number(r.seconds)
            epochs = "" if r.epochs is None or not np.isfinite(r.epochs) else fmt_number(r.epochs)
            speedup = f"{r.speedup:.2f}x" if r.speedup is not None else (r.note if r.seconds is not None else "")
            ci = f"[{r.ci_low:.2f}, {r.ci_high:.2f}]" if r.ci_low is not None else ""
            rows.append([r.mark, *(r.group[g] for g in GROUP), r.system, r.verified, f"{r.reached} of {r.seeds}",
                         epochs, time, speedup or "", ci])
        notes = [
            "Time to target: training epochs (warm-ups included), evaluations, preparation and tuning until the "
            "first evaluation at the target; over seeds, the mean with the fastest and slowest dropped (MLPerf; "
            "a seed that missed counts as infinite). Epochs likewise.",
            f"Speedup: {self.baseline}'s figure / the system's (above 1 reaches the target sooner), "
            f"{CONFIDENCE:.0%} CI by bootstrap over seeds, the two sides paired by seed (Note [seed statistics]); claimed for verified systems.",
            f"Marks: - sooner, + later (beyond {FACTOR:g}x and CI excludes 1), ~ beyond {FACTOR:g}x without, "
            "! no run succeeded, n target not reached, c reached in significantly fewer epochs than reference "
            "(one-sided Welch t-test, p < 0.05; Note [convergence check]): look at what it trains before "
            "trusting its speed.",
        ]
        return Table(header, rows, [False] * (len(GROUP) + 3) + [True] * 5, notes=notes)

    def render(self, format: str = "text") -> str:
        if format == "csv":
            from gnnbench.results.tables import records_csv

            return records_csv(self.as_dicts())
        return self.table().render(format)


def _target_of(row: Mapping[str, Any]) -> TimeToAccuracy | None:
    record = (Extra.from_dict(row.get("extra")) or Extra()).time_to_accuracy
    return record if isinstance(record, TimeToAccuracy) else None


def _label(row: Mapping[str, Any]) -> str:
    """The system with its options: ``pim [arithmetic=float32]``; two option sets are two entries."""
    options = (row.get("hyperparameters") or {}).get("system_options") or {}
    name = row.get("system") or "?"
    return name + (" [" + ", ".join(f"{k}={v}" for k, v in sorted(options.items())) + "]" if options else "")


def runs_by_group(rows: Sequence[Mapping[str, Any]]) -> dict[tuple, dict[str, dict[Any, Mapping]]]:
    """group -> system label -> seed -> its latest run (by timestamp, then id)."""
    out: dict[tuple, dict[str, dict[Any, Mapping]]] = {}
    for row in sorted(rows, key=lambda r: (str(r.get("timestamp")), r.get("id") or 0)):
        hyper = row.get("hyperparameters") or {}
        if hyper.get("target_accuracy") is None:
            continue
        values = {"dataset": row.get("dataset"), "model": row.get("model"), "framework": row.get("framework"),
                  "batching": hyper.get("batching", "full"), "target": hyper["target_accuracy"]}
        key = tuple(values[g] for g in GROUP)
        out.setdefault(key, {}).setdefault(_label(row), {})[row.get("seed")] = row
    return out


def seed_figures(runs: Sequence[Mapping[str, Any]]) -> tuple[dict[Any, float], dict[Any, float], int | None]:
    """Seconds and epochs to the target by seed, per successful run (``inf`` for a miss), and the epoch limit.

    By seed, so that two systems' figures are paired by the seed they trained (Note [seed statistics])."""
    seconds, epochs, limit = {}, {}, None
    for row in runs:
        record = _target_of(row) if (row.get("status") or "ok") == "ok" else None
        if record is None:
            continue
        limit = record.max_epochs
        seconds[row.get("seed")] = record.seconds if record.reached else float("inf")
        epochs[row.get("seed")] = record.epochs if record.reached else float("inf")
    return seconds, epochs, limit


def compare_time_to_accuracy(data: Any, baseline: str = REFERENCE, include_unverified: bool = False, *,
                             factor: float = FACTOR) -> TtaComparison:
    """Every group of runs with a target, each system against ``baseline`` (Note [time-to-accuracy marks])."""
    import pandas as pd

    from gnnbench.results.frame import frame_from_rows, frame_records

    frame = data if isinstance(data, pd.DataFrame) else frame_from_rows(data)
    grouped = runs_by_group(frame_records(frame) if not frame.empty else [])
    results = []
    for key in sorted(grouped, key=lambda k: tuple(str(v) for v in k)):
        systems = grouped[key]
        base = seed_figures(list(systems.get(baseline, {}).values()))
        reference = seed_figures(list(systems.get(REFERENCE, {}).values()))
        for label in sorted(systems, key=lambda s: (s != baseline, s)):
            runs = list(systems[label].values())
            results.append(_result(dict(zip(GROUP, key)), label, runs, base, reference, baseline,
                                   include_unverified, factor))
    return TtaComparison(results, baseline)


def simulated(runs: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the runs' times are a simulation's wall time (Note [modeled rows]): epochs count, seconds do not."""
    from gnnbench.results.frame import timing_of

    return any(timing_of(r.get("extra"))[0] == "simulated" for r in runs)


def _result(group, label, runs, base, reference, baseline, include_unverified, factor) -> TtaResult:
    seconds, epochs, limit = seed_figures(runs)
    verified = runs[-1].get("verified") or "unverified"
    common = dict(group=group, system=label, verified=verified, seeds=len(runs),
                  reached=sum(np.isfinite(s) for s in seconds.values()), max_epochs=limit)
    if not seconds:
        return TtaResult(**common, mark="!", note="no run succeeded")
    figure, epoch_figure = trimmed_mean(seconds), trimmed_mean(epochs)
    out = dict(common, seconds=figure, epochs=epoch_figure)
    p = None if label == REFERENCE else converges_early(epochs, reference[1])
    if p is not None:
        return TtaResult(**out, mark="c", convergence_p=p,
                         note=f"fewer epochs than {REFERENCE} (p = {p:.2g}): look before claiming speed")
    if not np.isfinite(figure):
        return TtaResult(**out, mark="n", note="target not reached")
    if simulated(runs):
        return TtaResult(**dict(out, seconds=None), note=SIMULATED)
    if label == baseline:
        return TtaResult(**out, note="baseline")
    if verified != "passed" and not include_unverified:
        return TtaResult(**out, note="unverified" if verified == "unverified" else "verify failed")
    if not base[0] or not np.isfinite(trimmed_mean(base[0])):
        return TtaResult(**out, note="no baseline")
    speedup, low, high = seed_speedup(base[0], seconds)
    significant = low is not None and (low > 1 or high < 1)
    beyond = speedup >= factor or speedup <= 1 / factor
    mark = ("-" if speedup > 1 else "+") if beyond and significant else ("~" if beyond else "")
    note = None if low is not None else (
        "too few seeds: no significance claimed" if min(len(base[0]), len(seconds)) < MIN_PROCESSES
        else "missed seeds leave the interval open: no significance claimed")
    return TtaResult(**out, speedup=speedup, ci_low=low, ci_high=high, mark=mark, note=note)
