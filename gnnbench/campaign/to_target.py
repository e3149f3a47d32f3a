"""Time to a target accuracy as a campaign table shows it: a configuration's seeds, MLPerf's figure over them, its
parts, and its ratio to a baseline paired by seed.

Note [time to target in tables]
    A run with ``--target-accuracy`` records its time to the target in parts
    (Note [time to accuracy] in gnnbench/run/target.py). A table line pools a
    configuration's runs (Note [campaign entries]); a campaign that measures
    time to accuracy runs one process per seed, so its line holds one run per
    seed (the latest of each). The figure is MLPerf's: the mean over seeds with
    the fastest and the slowest dropped (``trimmed_mean``, Note [seed
    statistics]), a seed that missed the target counting as infinite, so two
    misses make it ``not reached``. The parts (training, evaluation,
    preparation, tuning) are means over the same kept seeds, so they add up to
    the figure. Against a baseline the cell is the baseline's figure over the
    line's with its 95 % interval from the bootstrap over seeds, paired by seed
    when both ran the same seeds (``seed_speedup``). ``converges early`` marks
    a line that reached the target in significantly fewer epochs than the
    baseline (MLPerf's convergence check against its reference, Note
    [convergence check]): its speed is not claimed until someone looks at
    what it trains. A system whose wall time is a simulation's (``pim``, Note
    [modeled rows]) shows its epochs and no time.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["PARTS", "records", "seconds_by_seed", "epochs_by_seed", "kept_seeds", "figure", "part",
           "figure_text", "part_text", "epochs_text", "reached_text", "speedup_text", "convergence_text",
           "simulated_entry"]

#: the parts of a time to the target, in the order they are shown: the record's key and the word for it
PARTS = (("train_s", "training"), ("eval_s", "evaluation"), ("prepare_s", "preparation"), ("tune_s", "tuning"))


def _record(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    extra = row.get("extra")
    record = extra.get("time_to_accuracy") if isinstance(extra, Mapping) else None
    return record if isinstance(record, Mapping) and (row.get("status") or "ok") == "ok" else None


def records(entry) -> dict[Any, Mapping[str, Any]]:
    """Seed -> the time-to-accuracy record of its latest successful run (the entry's runs are oldest first)."""
    out: dict[Any, Mapping[str, Any]] = {}
    for row in entry.runs:
        record = _record(row)
        if record is not None:
            out[row.get("seed")] = record
    return out


def _by_seed(entry, key: str) -> dict[Any, float]:
    return {seed: float(r[key]) if r.get("reached") and r.get(key) is not None else math.inf
            for seed, r in records(entry).items()}


def seconds_by_seed(entry) -> dict[Any, float]:
    """Seed -> seconds to the target (``inf`` for a seed that missed it)."""
    return _by_seed(entry, "seconds")


def epochs_by_seed(entry) -> dict[Any, float]:
    """Seed -> epochs to the target (``inf`` for a seed that missed it)."""
    return _by_seed(entry, "epochs")


def kept_seeds(values: Mapping[Any, float]) -> list[Any]:
    """The seeds MLPerf's mean keeps: all but the fastest and the slowest when there are three or more (ties
    broken by seed, so the choice is the same on every machine)."""
    ordered = sorted(values, key=lambda s: (values[s], str(s)))
    return ordered[1:-1] if len(ordered) >= 3 else ordered


def figure(entry) -> float | None:
    """The trimmed mean of the seconds to the target; ``inf`` when two seeds or more missed; None without runs."""
    from gnnbench.core.statistics import trimmed_mean

    seconds = seconds_by_seed(entry)
    return trimmed_mean(seconds) if seconds else None


def part(entry, key: str) -> float | None:
    """A part of the time to the target (a key of :data:`PARTS`), the mean over the seeds :func:`figure` keeps;
    None when the figure is not finite."""
    seconds = seconds_by_seed(entry)
    kept = kept_seeds(seconds)
    if not kept or not all(math.isfinite(seconds[s]) for s in kept):
        return None
    found = records(entry)
    return sum(float(found[s].get(key) or 0.0) for s in kept) / len(kept)


def simulated_entry(entry) -> bool:
    """Whether the entry's times are a simulation's wall time (Note [modeled rows])."""
    from gnnbench.results.time_to_accuracy import simulated

    return simulated(entry.runs)


def figure_text(entry) -> str:
    """``12.34``; ``not reached`` (two seeds or more missed); ``simulated: epochs only``; ``-`` without records."""
    from gnnbench.results.time_to_accuracy import SIMULATED

    value = figure(entry)
    if value is None:
        return "-"
    if not math.isfinite(value):
        return "not reached"
    return SIMULATED if simulated_entry(entry) else f"{value:.2f}"


def part_text(entry, key: str) -> str:
    value = part(entry, key)
    return "-" if value is None or simulated_entry(entry) else f"{value:.2f}"


def epochs_text(entry) -> str:
    """The trimmed mean of the epochs to the target, two decimals (a sampled run's evaluations fall inside
    epochs)."""
    from gnnbench.core.statistics import trimmed_mean

    epochs = epochs_by_seed(entry)
    if not epochs:
        return "-"
    value = trimmed_mean(epochs)
    return f"{value:.2f}" if math.isfinite(value) else "not reached"


def reached_text(entry) -> str:
    """``4 of 5``: the seeds that reached the target, of those that ran."""
    seconds = seconds_by_seed(entry)
    return f"{sum(math.isfinite(v) for v in seconds.values())} of {len(seconds)}" if seconds else "-"


def speedup_text(entry, base) -> str:
    """The baseline's figure over the entry's with its interval over seeds, paired by seed (``1.09x [1.01,
    1.17]``); ``-`` where a side has no finite figure or a simulated one."""
    from gnnbench.core.statistics import seed_speedup

    mine, theirs = seconds_by_seed(entry), seconds_by_seed(base)
    if not mine or not theirs or simulated_entry(entry) or simulated_entry(base):
        return "-"
    ratio, low, high = seed_speedup(theirs, mine)
    if not math.isfinite(ratio) or ratio == 0:
        return "-"
    return f"{ratio:.2f}x" + ("" if low is None else f" [{low:.2f}, {high:.2f}]")


def convergence_text(entry, base) -> str:
    """``c (p = 0.012)`` when the entry reached the target in significantly fewer epochs than the baseline (Note
    [convergence check]); empty otherwise, and on the baseline's own line."""
    from gnnbench.core.statistics import converges_early

    if entry is base or entry["system"] == base["system"]:
        return ""
    p = converges_early(epochs_by_seed(entry), epochs_by_seed(base))
    return "" if p is None else f"c (p = {p:.2g})"
