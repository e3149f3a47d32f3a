"""``gnnbench ab``: is this system faster than that one here? Paired rounds until a sequential test decides.

Rounds of ABBA processes (Note [paired rounds] in
:mod:`gnnbench.core.sequential`) run until the sequential test decides
faster, slower or the same (Note [sequential test]) or the budget is spent
(undecided). Every process is stored as a row, paired through ``extra.ab``
(Note [paired rows] in :mod:`gnnbench.results.paired`), so ``compare`` pools
them and the verdict can be rebuilt from the store.

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

import math
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gnnbench.core.sequential import (BASELINE, PER_ROUND, SYSTEM, THRESHOLD, Verdict, decide, round_order,
                                      round_value)
from gnnbench.errors import UserError

from ._common import add_results_option, open_store, print_json

HELP = "is one system faster than another here? paired ABBA rounds until a sequential test decides"
EPILOG = """The verdict line always holds one of the words faster, slower, same or undecided
(Note [sequential test] in gnnbench/core/sequential.py).

exit status:
  0  a verdict was printed (undecided too: out of budget)
  1  a process did not succeed; the rounds before it are judged and every row is stored
  2  bad input"""

#: the time budget when --budget is not given
BUDGET = "10m"
_UNITS = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
RoundRunner = Callable[[Sequence[Any]], Iterable[dict]]
#: the clock a comparison's time is read from (a module attribute, so that tests can stand in a fake one)
CLOCK = time.monotonic


def add_arguments(p) -> None:
    from gnnbench.run.config import add_config_flags

    add_config_flags(p)  # the flags `run` takes (Note [one run configuration]); --system is the one judged
    p.add_argument("--baseline", required=True, metavar="SYSTEM", help="the system --system is compared with")
    p.add_argument("--budget", default=BUDGET, metavar="TIME",
                   help=f"stop undecided when the next round would pass this much time: 90s, 10m, 1h "
                        f"(default: {BUDGET})")
    p.add_argument("--threshold", default=f"{THRESHOLD:.0%}", metavar="FRACTION",
                   help="the smallest change called faster or slower, as 5%% or 0.05 (default: %(default)s)")
    p.add_argument("--processes", choices=("fresh", "warm"), default="fresh",
                   help="fresh: a worker process started for each measurement; warm: forked from a parent "
                        "started once a round (Note [round runners]) (default: fresh)")
    p.add_argument("--no-store", action="store_true", help="do not write the rows to the results store")
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    add_results_option(p)


def parse_budget(text: str) -> float:
    """``90s``, ``10m``, ``1.5h`` or a number of seconds, as seconds above 0.

    Raises:
        UserError: anything else, or no time at all.
    """
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-z]*)\s*", str(text).lower())
    seconds = float(match.group(1)) * _UNITS[match.group(2)] if match and match.group(2) in _UNITS else 0.0
    if not (seconds > 0 and math.isfinite(seconds)):
        raise UserError(f"--budget must be a time above 0 such as 90s, 10m or 1h (got {text!r})")
    return seconds


def parse_threshold(text: str) -> float:
    """``5%`` or ``0.05`` as a fraction in (0, 1).

    Raises:
        UserError: anything else.
    """
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise UserError(f"--threshold must be a fraction in (0, 1) such as 5% or 0.05 (got {text!r})")
    return value


# ---------------------------------------------------------------- round runners (Note [round runners])

def fresh_round(specs: Sequence[Any]) -> Iterable[dict]:
    """Each process a fresh worker (:func:`gnnbench.run.runner.run_task`), one after another."""
    from gnnbench.run import runner

    for spec in specs:
        yield runner.run_task(spec)


def warm_round(specs: Sequence[Any]) -> Iterable[dict]:
    """Each process forked from one warm parent, started for this round (issue 54; Note [round runners]).

    THE PLACE WHERE THE WARM PARENT PLUGS IN: ``gnnbench.run.warm.WarmParent`` is a context manager started
    from the round's RunConfigs whose ``.run(spec)`` returns the same row as ``run_task`` (Note [cheap
    processes] there). A parent that cannot fork safely (``ForkUnsafe``: it started a thread pool) leaves
    the round to fresh processes.
    """
    try:
        from gnnbench.run.warm import ForkUnsafe, WarmParent
    except ModuleNotFoundError as err:
        if err.name != "gnnbench.run.warm":
            raise
        raise UserError("--processes warm needs gnnbench.run.warm (issue 54's warm parent), which this "
                        "installation lacks; use --processes fresh") from None
    from contextlib import ExitStack

    with ExitStack() as stack:
        try:
            parent = stack.enter_context(WarmParent(list(specs)))  # a parent per round: its layout is sampled
        except ForkUnsafe:
            parent = None
        if parent is None:
            yield from fresh_round(specs)
            return
        for spec in specs:
            yield parent.run(spec)


ROUND_RUNNERS: dict[str, RoundRunner] = {"fresh": fresh_round, "warm": warm_round}


# ---------------------------------------------------------------- the comparison

@dataclass
class AbResult:
    """What ``gnnbench ab`` found.

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
                "stopped": self.stopped, "session": self.session, "line": verdict_line(self)}


def run(system_spec, baseline_spec, *, budget_s: float, threshold: float = THRESHOLD,
        runner: RoundRunner = fresh_round, per_round: int = PER_ROUND, store_path: str | None = None,
        store: bool = True, session: str | None = None, clock: Callable[[], float] | None = None,
        on_round: Callable[[int, AbResult], None] | None = None) -> AbResult:
    """Run paired rounds of ``system_spec`` and ``baseline_spec`` until decided or out of budget.

    Each row is stored as it arrives (Note [store first]); a round is judged once all its processes are in.
    A round that would start past ``budget_s`` (judged by the last round's time) is not started.

    Args:
        runner (callable): the round runner (Note [round runners]; default: :func:`fresh_round`).
        session (str, optional): the id stamped on the rows (default: a new random one).
        clock (callable): monotonic seconds (default: :data:`CLOCK`).
        on_round (callable, optional): ``on_round(round_index, result_so_far)`` after each judged round.

    Raises:
        UserError: bad input found by a worker (Note [bad input in a worker]); earlier rows stay stored.
    """
    import uuid

    from gnnbench.results.paired import stamp
    from gnnbench.run.record import bad_input_error

    from .run import _store

    session = session or uuid.uuid4().hex[:12]
    clock = clock or CLOCK
    result = AbResult(system_spec.system, baseline_spec.system, decide([], threshold), budget_s, 0.0, session)
    db = open_store(store_path, create=True) if store else None
    values: list[float] = []
    started = clock()
    try:
        for index in range(sys.maxsize):
            order = round_order(index, per_round)
            specs = [baseline_spec if role == BASELINE else system_spec for role in order]
            round_started = clock()
            medians: dict[str, list[float]] = {}
            for position, (role, row) in enumerate(zip(order, runner(specs))):
                refused = bad_input_error(row)
                if refused is not None:
                    raise UserError(refused)
                row = stamp(row, session=session, round=index, position=position, role=role,
                            system=result.system, baseline=result.baseline, threshold=threshold)
                if db is not None:
                    _store(db, row)
                result.rows.append(row)
                if row.get("status") != "ok":
                    break
                medians.setdefault(role, []).append(_median(row))
            result.elapsed_s = clock() - started
            if any(len(medians.get(r, ())) != per_round for r in (BASELINE, SYSTEM)):  # a process failed
                result.stopped = "failed"
                break
            values.append(round_value(medians[BASELINE], medians[SYSTEM]))
            result.verdict = decide(values, threshold)
            if on_round is not None:
                on_round(index, result)
            if result.verdict.decided:
                break
            if result.elapsed_s + (clock() - round_started) > budget_s:
                result.stopped = "budget"
                break
    finally:
        if db is not None:
            db.close()
    return result


def _median(row: dict) -> float:
    from gnnbench.core.measurement import Measurement

    return Measurement.from_row(row).median


# ---------------------------------------------------------------- rendering

def duration(seconds: float) -> str:
    """``3 min 10 s``, ``42 s``, ``1 h 05 min``."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m:02d} min" if h else (f"{m} min {s} s" if m else f"{s} s")


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def ratio_text(verdict: Verdict, baseline: str | None = None) -> str:
    """``1.12x faster than B [1.06, 1.19]`` or ``1.08x slower than B [1.02, 1.15]``: the factor shown and its
    interval (without ``than B`` when no ``baseline`` is named)."""
    if math.isnan(verdict.speedup):
        return "no rounds"
    faster = verdict.speedup >= 1
    factor = verdict.speedup if faster else 1 / verdict.speedup
    text = f"{factor:.2f}x {'faster' if faster else 'slower'}" + (f" than {baseline}" if baseline else "")
    if verdict.low is None:
        return text + " (1 round: no interval)"
    low, high = (verdict.low, verdict.high) if faster else (1 / verdict.high, 1 / verdict.low)
    return text + f" [{low:.2f}, {high:.2f}]"


def verdict_line(result: AbResult) -> str:
    """The one line ``gnnbench ab`` prints; it always holds faster, slower, same or undecided."""
    v = result.verdict
    spent = (f"{v.rounds} round{'s' * (v.rounds != 1)} ({len(result.rows)} processes, "
             f"{duration(result.elapsed_s)})")
    if v.word in ("faster", "slower"):
        return f"{result.system} {ratio_text(v, result.baseline)}, decided after {spent}"
    if v.word == "same":
        return (f"{result.system} the same as {result.baseline} within {_percent(v.threshold)} "
                f"({ratio_text(v)}), decided after {spent}")
    why = {"budget": f"out of its budget of {duration(result.budget_s)}",
           "failed": "stopped by a process that did not succeed"}.get(result.stopped, "")
    return (f"{result.system} undecided against {result.baseline} at {_percent(v.threshold)}: "
            f"{ratio_text(v, result.baseline)} after {spent}" + (f", {why}" if why else ""))


def _progress_text(index: int, result: AbResult) -> str:
    return (f"round {index + 1}: {result.system} {ratio_text(result.verdict, result.baseline)} so far, "
            f"{duration(result.elapsed_s)} of {duration(result.budget_s)}")


def main(args) -> int:
    from gnnbench.progress import progress
    from gnnbench.run.config import config_values_from_flags, make_config

    from .run import failure_lines, validate

    budget_s = parse_budget(args.budget)
    threshold = parse_threshold(args.threshold)
    values = config_values_from_flags(args)
    if args.baseline == values.get("system"):
        raise UserError(f"--system and --baseline both name {args.baseline}; name two systems to compare")
    system_spec = make_config(values)
    baseline_spec = make_config({**values, "system": args.baseline})
    validate(system_spec)
    validate(baseline_spec)
    with progress(None, f"{system_spec.system} against {baseline_spec.system}", plain_steps=True) as bar:
        def on_round(index: int, result: AbResult) -> None:
            bar.advance(description=_progress_text(index, result))

        result = run(system_spec, baseline_spec, budget_s=budget_s, threshold=threshold,
                     runner=ROUND_RUNNERS[args.processes], store_path=args.results, store=not args.no_store,
                     on_round=on_round)
    if args.json:
        print_json(result.as_dict())
    else:
        print(verdict_line(result))
    for row in result.failed:
        for line in failure_lines(row, args.results):
            print(line, file=sys.stderr)
    return 1 if result.stopped == "failed" else 0
