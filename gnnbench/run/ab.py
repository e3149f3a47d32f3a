"""Paired comparisons that run until decided: rounds of two systems' processes, judged after each round.

:func:`run_paired` runs ABBA rounds (Note [paired rounds] in
:mod:`gnnbench.core.sequential`) of a system and a baseline through a round
runner until the sequential test decides (Note [sequential test]) or the
budget is spent, handing every row, stamped with its place (Note [paired
rows] in :mod:`gnnbench.results.paired`), to the caller as it arrives.
``gnnbench ab`` runs one; a campaign with ``baseline`` and ``decide = true``
runs one per configuration (:func:`decide_campaign`).

Note [deciding campaigns]
    A campaign (or ``gnnbench sweep``) with ``baseline = "dgl-native"`` and
    ``decide = true`` answers ``gnnbench ab``'s question for every
    configuration of its matrices whose system is not the baseline: each is
    run in paired rounds against the same configuration on the baseline
    system until decided or out of ``budget`` (each comparison's, default
    :data:`BUDGET`), at ``threshold`` (default
    :data:`~gnnbench.core.sequential.THRESHOLD`). ``rounds`` does not apply:
    the test decides how many. Comparisons run one after another, each
    paired within itself, and every process is stored with ``extra.ab`` and
    ``extra.sweep``'s campaign name, so ``compare`` pools them. Its processes
    start as ``gnnbench ab``'s do, ``processes = "warm"`` (the default) or
    ``"fresh"`` (Note [round runners]).

Note [round runners]
    A round runner takes the :class:`~gnnbench.run.config.RunConfig`\\ s of one
    round, in run order, and yields their rows in that order as each finishes
    (the same rows :func:`gnnbench.run.runner.run_task` returns).
    :func:`fresh_round` starts a fresh worker process for each;
    :func:`warm_round` forks each from a warm parent that has imported
    everything once (issue 54), a new parent every round so that what a
    parent fixes (its memory layout) is sampled round by round rather than
    kept for the whole comparison. Tests pass a runner of canned rows.
"""
from __future__ import annotations

import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gnnbench.core.sequential import (BASELINE, PER_ROUND, SYSTEM, THRESHOLD, Verdict, decide, round_order,
                                      round_value)
from gnnbench.errors import UserError

__all__ = ["BUDGET", "CLOCK", "RoundRunner", "parse_budget", "parse_threshold", "fresh_round", "warm_round",
           "ROUND_RUNNERS", "PROCESSES", "AbResult", "run_paired", "deciding", "comparisons", "identities",
           "decide_campaign"]

#: the time budget of a comparison when none is given
BUDGET = "10m"
_UNITS = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
RoundRunner = Callable[[Sequence[Any]], Iterable[dict]]
#: the clock a comparison's time is read from (a module attribute, so that tests can stand in a fake one)
CLOCK = time.monotonic


def parse_budget(text: Any, name: str = "--budget") -> float:
    """``90s``, ``10m``, ``1.5h`` or a number of seconds, as seconds above 0; ``name`` is how the user wrote it.

    Raises:
        UserError: anything else, or no time at all.
    """
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-z]*)\s*", str(text).lower())
    seconds = float(match.group(1)) * _UNITS[match.group(2)] if match and match.group(2) in _UNITS else 0.0
    if not (seconds > 0 and math.isfinite(seconds)):
        raise UserError(f"{name} must be a time above 0 such as 90s, 10m or 1h (got {text!r})")
    return seconds


def parse_threshold(text: Any, name: str = "--threshold") -> float:
    """``5%`` or ``0.05`` (text or a number) as a fraction in (0, 1); ``name`` is how the user wrote it.

    Raises:
        UserError: anything else.
    """
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise UserError(f"{name} must be a fraction in (0, 1) such as 5% or 0.05 (got {text!r})")
    return value


# ---------------------------------------------------------------- round runners (Note [round runners])

def fresh_round(configs: Sequence[Any]) -> Iterable[dict]:
    """Each process a fresh worker (:func:`gnnbench.run.runner.run_task`), one after another."""
    from gnnbench.run import runner

    for config in configs:
        yield runner.run_task(config)


def warm_round(configs: Sequence[Any]) -> Iterable[dict]:
    """Each process forked from one warm parent started for this round (Note [round runners]; Note [cheap
    processes] in :mod:`gnnbench.run.warm`): a parent per round, so its memory layout is sampled as a fresh
    process's is. Should the parent start a thread pool (``ForkUnsafe``, raised before anything of that run
    ran), the rest of the round runs in fresh processes.
    """
    from gnnbench.run.warm import ForkUnsafe, WarmParent

    configs = list(configs)
    with WarmParent(configs) as parent:
        for index, config in enumerate(configs):
            try:
                row = parent.run(config)
            except ForkUnsafe:
                yield from fresh_round(configs[index:])
                return
            yield row


ROUND_RUNNERS: dict[str, RoundRunner] = {"fresh": fresh_round, "warm": warm_round}
#: how a comparison's processes start unless told otherwise (``gnnbench ab --processes``, a campaign's
#: ``processes``)
PROCESSES = "warm"


# ---------------------------------------------------------------- the comparison

@dataclass
class AbResult:
    """What a paired comparison found.

    Args:
        system, baseline (str): the systems (``system`` is the one judged).
        verdict (Verdict): the test's.
        budget_s (float): the time budget.
        elapsed_s (float): time the rounds took.
        session (str): the id in the rows' ``extra.ab``.
        rows (list of dict): every process's row, in run order.
        stopped (str): ``decided``, ``budget`` or ``failed`` (a process did not succeed).
    """

    system: str
    baseline: str
    verdict: Verdict
    budget_s: float
    elapsed_s: float
    session: str
    rows: list[dict] = field(default_factory=list)
    stopped: str = "decided"

    @property
    def failed(self) -> list[dict]:
        return [row for row in self.rows if row.get("status") != "ok"]

    def as_dict(self) -> dict[str, Any]:
        return {"system": self.system, "baseline": self.baseline, **self.verdict.as_dict(),
                "processes": len(self.rows), "elapsed_s": self.elapsed_s, "budget_s": self.budget_s,
                "stopped": self.stopped, "session": self.session}


def run_paired(system_config, baseline_config, *, budget_s: float, threshold: float = THRESHOLD,
               runner: RoundRunner = fresh_round, per_round: int = PER_ROUND,
               on_row: Callable[[dict], None] | None = None, session: str | None = None,
               clock: Callable[[], float] | None = None,
               on_round: Callable[[int, AbResult], None] | None = None) -> AbResult:
    """Run paired rounds of ``system_config`` and ``baseline_config`` until decided or out of budget.

    Each row goes to ``on_row`` as it arrives (the caller stores it: Note [store first]); a round is judged
    once all its processes are in. A round that would end past ``budget_s`` (judged by the last round's
    time, as the rows' stamps give it: Note [how a comparison ends]) is not started.

    Args:
        runner (callable): the round runner (Note [round runners]; default: :func:`fresh_round`).
        on_row (callable, optional): ``on_row(row)`` for each row, stamped (Note [paired rows]).
        session (str, optional): the id stamped on the rows (default: a new random one).
        clock (callable): monotonic seconds (default: :data:`CLOCK`).
        on_round (callable, optional): ``on_round(round_index, result_so_far)`` after each judged round.

    Raises:
        UserError: bad input found by a worker (Note [bad input in a worker]); earlier rows went to ``on_row``.
    """
    import uuid

    from gnnbench.results.paired import over_budget, stamp
    from gnnbench.run.record import bad_input_error

    session = session or uuid.uuid4().hex[:12]
    clock = clock or CLOCK
    result = AbResult(system_config.system, baseline_config.system, decide([], threshold), budget_s, 0.0, session)
    values: list[float] = []
    started = clock()
    spent = 0.0  # seconds from the start to the latest row, as stamped on it (Note [how a comparison ends])
    for index in range(sys.maxsize):
        order = round_order(index, per_round)
        configs = [baseline_config if role == BASELINE else system_config for role in order]
        round_started_at = spent
        medians: dict[str, list[float]] = {}
        rows = runner(configs)
        for position, (role, row) in enumerate(zip(order, rows)):
            refused = bad_input_error(row)
            if refused is not None:
                raise UserError(refused)
            spent = clock() - started
            row = stamp(row, session=session, round=index, position=position, role=role,
                        system=result.system, baseline=result.baseline, threshold=threshold, budget_s=budget_s,
                        elapsed_s=spent)
            if on_row is not None:
                on_row(row)
            result.rows.append(row)
            median = _median(row)
            if row.get("status") != "ok" or not median > 0:  # a failure, or an ok row without epoch times
                break
            medians.setdefault(role, []).append(median)
        getattr(rows, "close", lambda: None)()  # a runner's generator ends now, its warm parent with it
        result.elapsed_s = spent
        if any(len(medians.get(r, ())) != per_round for r in (BASELINE, SYSTEM)):  # a process failed
            result.stopped = "failed"
            break
        values.append(round_value(medians[BASELINE], medians[SYSTEM]))
        result.verdict = decide(values, threshold)
        if on_round is not None:
            on_round(index, result)
        if result.verdict.decided:
            break
        if over_budget(spent, spent - round_started_at, budget_s):  # read from the rows alone, as stored
            result.stopped = "budget"
            break
    return result


def _median(row: dict) -> float:
    from gnnbench.core.measurement import Measurement

    return Measurement.from_row(row).median




# ---------------------------------------------------------------- campaigns (Note [deciding campaigns])

def deciding(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A campaign's ``baseline``, ``decide``, ``budget``, ``threshold`` and ``processes``, checked, as
    :class:`Campaign` fields.

    Raises:
        UserError: ``decide`` not true or false, or true without a ``baseline``; a bad budget, threshold or
        processes.
    """
    decide_ = data.get("decide", False)
    if not isinstance(decide_, bool):
        raise UserError(f"{where}: 'decide' must be true or false (got {decide_!r})")
    if decide_ and not data.get("baseline"):
        raise UserError(f"{where}: 'decide = true' needs a 'baseline' system to decide against")
    budget = data.get("budget")
    threshold = data.get("threshold")
    processes = data.get("processes", PROCESSES)
    if "processes" in data and not decide_:
        raise UserError(f"{where}: 'processes' applies to a campaign that decides (decide = true); a sweep starts "
                        f"a fresh worker for each run")
    if not isinstance(processes, str) or processes not in ROUND_RUNNERS:
        raise UserError(f"{where}: 'processes' must be {' or '.join(sorted(ROUND_RUNNERS, reverse=True))} "
                        f"(got {processes!r})")
    return {"baseline": data.get("baseline"), "decide": decide_,
            "budget": None if budget is None else parse_budget(budget, f"{where}: 'budget'"),
            "threshold": None if threshold is None else parse_threshold(threshold, f"{where}: 'threshold'"),
            "processes": processes}


def comparisons(campaign) -> list[tuple[Any, Any]]:
    """``(system config, baseline config)`` for each configuration of ``campaign`` not on its baseline, in the
    campaign's order, each once."""
    from dataclasses import replace

    out, seen = [], set()
    for matrix in campaign.matrices:
        for config in matrix.configs:
            key = json.dumps(config.as_dict(), sort_keys=True, default=str)
            if config.system == campaign.baseline or key in seen:
                continue
            seen.add(key)
            out.append((config, replace(config, system=campaign.baseline)))
    return out


def identities(system_config, baseline_config) -> dict[str, dict[str, Any]]:
    """The provenance fields each role's rows carry (Note [provenance] in :mod:`gnnbench.run.sweep`), as
    :func:`gnnbench.run.sweep.identity` computes them (sweep reads a campaign's deciding keys from this module,
    so this one does not import it)."""
    from gnnbench.run.preflight import check_names
    from gnnbench.run.record import identity_columns

    return {role: identity_columns(config, None, resolved=check_names(config))
            for role, config in ((SYSTEM, system_config), (BASELINE, baseline_config))}


def decide_campaign(campaign, *, runner: RoundRunner = fresh_round, on_row: Callable[[dict], None] | None = None,
                    on_result: Callable[[AbResult], None] | None = None,
                    on_round: Callable[[int, AbResult], None] | None = None,
                    pairs: Sequence[tuple[Any, Any]] | None = None) -> list[AbResult]:
    """Every comparison of ``campaign`` (Note [deciding campaigns]), or those of ``pairs``, one after another;
    their results. Each row carries the campaign's name and, a failed process's too, its configuration's
    provenance fields (Note [resuming decided comparisons] in :mod:`gnnbench.campaign.publish`)."""
    budget_s = campaign.budget or parse_budget(BUDGET)
    threshold = campaign.threshold or THRESHOLD
    results = []
    for system_config, baseline_config in (comparisons(campaign) if pairs is None else pairs):
        fields = identities(system_config, baseline_config)

        def stamped(row: dict, fields=fields) -> None:  # as a sweep stamps its rows (run.sweep._stamp)
            ok = row.get("status") == "ok"
            for name, value in fields[row["extra"]["ab"]["role"]].items():
                if not ok or row.get(name) is None:
                    row[name] = value
            row["extra"] = {**row["extra"], "sweep": {"campaign": campaign.name}}
            if on_row is not None:
                on_row(row)

        result = run_paired(system_config, baseline_config, budget_s=budget_s, threshold=threshold, runner=runner,
                            on_row=stamped, on_round=on_round)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results
