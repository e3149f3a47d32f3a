"""Paired rounds in the store: how a row says which round it ran in, and the rounds rebuilt from rows.

Note [paired rows]
    Every process of a paired comparison (``gnnbench ab``, a campaign that
    decides against a baseline) is stored as an ordinary row, so ``compare``
    pools it with any other process of its configuration (Note
    [configurations] in :mod:`gnnbench.results.configurations`). What pairs it
    is ``extra.ab``: the ``session`` (one comparison), its ``round`` (from 0),
    its ``position`` in the round's run order, its ``role`` (``baseline`` or
    ``system``), the two systems' names and the test's ``threshold``. :func:`paired_rounds` rebuilds each
    session's round values (Note [paired rounds] in
    :mod:`gnnbench.core.sequential`) from rows in any order, so the verdict
    can be recomputed from the store alone. ``extra.ab`` also holds the
    comparison's ``budget_s`` and, per row, ``elapsed_s``: the seconds from the
    comparison's start to that row's arrival. They let the rows say how a
    comparison ended (:attr:`Session.stopped`) and how long it took, so a
    published table and a resumed campaign read both from the rows alone.

Note [how a comparison ends]
    A comparison stops when the test decides, when a process does not
    succeed, or when its next round would end past its budget, the next
    round taken to cost what the last did: the ``elapsed_s`` of the last
    round's last row, plus that round's own span, above ``budget_s``
    (:func:`over_budget`). ``gnnbench ab``
    (:func:`gnnbench.run.ab.run_paired`) applies exactly that rule to the
    times it stamps on the rows, so :func:`paired_rounds` tells the four
    endings apart from stored rows: ``decided``, ``failed``, ``budget``, and
    ``cut short`` for rows that end otherwise (the command was interrupted).
    A cut-short comparison has no verdict to publish; a resumed campaign
    runs it again (Note [resuming decided comparisons] in
    :mod:`gnnbench.run.ab`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
import math
from dataclasses import dataclass, field
from typing import Any

from gnnbench.core.measurement import Measurement
from gnnbench.core.sequential import BASELINE, SYSTEM, THRESHOLD, Verdict, decide, round_value

__all__ = ["AB_KEY", "STOPPED", "stamp", "pairing", "over_budget", "Session", "paired_rounds", "latest",
           "duration", "ratio_text", "verdict_line"]

#: the key under ``extra`` that pairs a row (Note [paired rows])
AB_KEY = "ab"
#: how a comparison ends (Note [how a comparison ends])
STOPPED = ("decided", "failed", "budget", "cut short")


def stamp(row: Mapping[str, Any], *, session: str, round: int, position: int, role: str, system: str,
          baseline: str, threshold: float, budget_s: float | None = None,
          elapsed_s: float | None = None) -> dict[str, Any]:
    """``row`` with its place in a paired comparison under ``extra.ab`` (Note [paired rows]); ``budget_s`` and
    ``elapsed_s`` when given."""
    extra = dict(row.get("extra") or {})
    extra[AB_KEY] = {"session": session, "round": round, "position": position, "role": role, "system": system,
                     "baseline": baseline, "threshold": threshold}
    extra[AB_KEY].update({k: v for k, v in (("budget_s", budget_s), ("elapsed_s", elapsed_s)) if v is not None})
    return {**row, "extra": extra}


def over_budget(spent_s: float, round_s: float, budget_s: float) -> bool:
    """Whether a next round as long as the last (``round_s``), started at ``spent_s``, would end past
    ``budget_s`` (Note [how a comparison ends])."""
    return spent_s + round_s > budget_s


def pairing(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A row's ``extra.ab``, or None for a row of no paired comparison."""
    extra = row.get("extra")
    ab = extra.get(AB_KEY) if isinstance(extra, Mapping) else None
    return ab if isinstance(ab, Mapping) and "session" in ab and "round" in ab else None


@dataclass(frozen=True)
class Session:
    """One paired comparison rebuilt from the store.

    Args:
        session (str): its id.
        system, baseline (str): the systems compared.
        threshold (float): the test's threshold.
        values (tuple of float): the round values of its complete rounds, in round order (a round with a
            process that did not succeed, or missing one, has none and ends the sequence).
        processes (int): its stored rows.
        budget_s (float or None): its budget (None in rows stored before budgets were).
        elapsed_s (float or None): the time from its start to its last row's arrival.
        stopped (str): how it ended, one of :data:`STOPPED` (Note [how a comparison ends]).
        last (str): its latest row's timestamp.
        rows (tuple of dict): its rows, in id order.
    """

    session: str
    system: str
    baseline: str
    threshold: float
    values: tuple[float, ...]
    processes: int
    budget_s: float | None = None
    elapsed_s: float | None = None
    stopped: str = "cut short"
    last: str = ""
    rows: tuple[Mapping[str, Any], ...] = field(default=(), compare=False, repr=False)

    def verdict(self) -> Verdict:
        """The sequential test's verdict on the stored rounds (Note [sequential test])."""
        return decide(self.values, self.threshold)

    def line(self) -> str:
        """The verdict line ``gnnbench ab`` printed for it, from its rows (:func:`verdict_line`)."""
        return verdict_line(self.system, self.baseline, self.verdict(), processes=self.processes,
                            elapsed_s=self.elapsed_s, budget_s=self.budget_s, stopped=self.stopped)


def paired_rounds(rows: Iterable[Mapping[str, Any]]) -> dict[str, Session]:
    """Every session among ``rows``, by id (Note [paired rows])."""
    by_session: dict[str, dict[int, list[tuple[str, Mapping[str, Any]]]]] = {}
    names: dict[str, tuple[str, str, float]] = {}
    counts: dict[str, int] = {}
    for row in rows:
        ab = pairing(row)
        if ab is None:
            continue
        sid = str(ab["session"])
        by_session.setdefault(sid, {}).setdefault(int(ab["round"]), []).append((ab.get("role"), row))
        names[sid] = (str(ab.get("system")), str(ab.get("baseline")), float(ab.get("threshold") or THRESHOLD))
        counts[sid] = counts.get(sid, 0) + 1
    out = {}
    for sid, rounds in by_session.items():
        values, ends, failed = [], [], False
        size = max(len(members) for members in rounds.values())  # a whole round's processes
        for index in range(len(rounds)):  # the verdict is a function of the sequence: stop at the first gap
            members = rounds.get(index, [])
            failed = any(not _succeeded(row) for _, row in members)
            value = None if len(members) < size else _value(members)
            if value is None:
                break
            values.append(value)
            times = [_elapsed(row) for _, row in members]
            ends.append(None if None in times else max(times))
        every = sorted((row for members in rounds.values() for _, row in members),
                       key=lambda r: (r.get("id") is None, r.get("id") or 0))
        elapsed = [e for e in map(_elapsed, every) if e is not None]
        budgets = [_float(pairing(r).get("budget_s")) for r in every]
        budget = next((b for b in budgets if b is not None), None)
        session = Session(sid, *names[sid], tuple(values), counts[sid], budget, max(elapsed, default=None),
                          rows=tuple(every), last=max((str(r.get("timestamp") or "") for r in every), default=""))
        out[sid] = _ended(session, failed, ends, complete=len(values) == len(rounds))
    return out


def _ended(session: Session, failed: bool, ends: list[float | None], complete: bool) -> Session:
    """``session`` with how it ended (Note [how a comparison ends])."""
    from dataclasses import replace

    if session.verdict().decided:
        stopped = "decided"
    elif failed:
        stopped = "failed"
    elif complete and ends and session.budget_s is not None and None not in ends and \
            over_budget(ends[-1], ends[-1] - (ends[-2] if len(ends) > 1 else 0.0), session.budget_s):
        stopped = "budget"
    else:
        stopped = "cut short"
    return replace(session, stopped=stopped)


def latest(sessions: Iterable[Session]) -> Session | None:
    """The latest of ``sessions`` that ended (anything but ``cut short``), else the latest of all; None for
    none. Latest is by the last row's timestamp, then its id."""
    def when(s: Session):
        return (s.last, max((r.get("id") or 0 for r in s.rows), default=0))

    sessions = list(sessions)
    ended = [s for s in sessions if s.stopped != "cut short"]
    return max(ended or sessions, key=when, default=None)


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _elapsed(row: Mapping[str, Any]) -> float | None:
    return _float((pairing(row) or {}).get("elapsed_s"))


def _succeeded(row: Mapping[str, Any]) -> bool:
    """A process that succeeded and measured epochs (a row without epoch times ends a comparison too)."""
    if (row.get("status") or "ok") != "ok":
        return False
    median = Measurement.from_row(row).median
    return median > 0


def _value(members: list[tuple[str, Mapping[str, Any]]]) -> float | None:
    """A round's value, or None when a process of it did not succeed (or a side has none)."""
    if any((row.get("status") or "ok") != "ok" for _, row in members):
        return None
    medians = {role: [Measurement.from_row(row).median for r, row in members if r == role]
               for role in (BASELINE, SYSTEM)}
    if not (medians[BASELINE] and medians[SYSTEM]) or not all(m > 0 for ms in medians.values() for m in ms):
        return None
    return round_value(medians[BASELINE], medians[SYSTEM])


# ---------------------------------------------------------------- the verdict as text

def duration(seconds: float | None) -> str:
    """``3 min 10 s``, ``42 s``, ``1 h 05 min``; ``time not recorded`` for None."""
    if seconds is None:
        return "time not recorded"
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


def verdict_line(system: str, baseline: str, verdict: Verdict, *, processes: int, elapsed_s: float | None,
                 budget_s: float | None, stopped: str) -> str:
    """The one line ``gnnbench ab`` prints; it always holds faster, slower, same or undecided."""
    v = verdict
    spent = f"{v.rounds} round{'s' * (v.rounds != 1)} ({processes} processes, {duration(elapsed_s)})"
    if v.word in ("faster", "slower"):
        return f"{system} {ratio_text(v, baseline)}, decided after {spent}"
    if v.word == "same":
        return (f"{system} the same as {baseline} within {_percent(v.threshold)} ({ratio_text(v)}), decided "
                f"after {spent}")
    why = {"budget": f"out of its budget of {duration(budget_s)}",
           "failed": "stopped by a process that did not succeed",
           "cut short": "cut short before its budget was spent"}.get(stopped, "")
    return (f"{system} undecided against {baseline} at {_percent(v.threshold)}: "
            f"{ratio_text(v, baseline)} after {spent}" + (f", {why}" if why else ""))
