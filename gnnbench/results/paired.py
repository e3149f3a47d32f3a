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
    can be recomputed from the store alone.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gnnbench.core.measurement import Measurement
from gnnbench.core.sequential import BASELINE, SYSTEM, THRESHOLD, Verdict, decide, round_value

__all__ = ["AB_KEY", "stamp", "pairing", "Session", "paired_rounds"]

#: the key under ``extra`` that pairs a row (Note [paired rows])
AB_KEY = "ab"


def stamp(row: Mapping[str, Any], *, session: str, round: int, position: int, role: str, system: str,
          baseline: str, threshold: float) -> dict[str, Any]:
    """``row`` with its place in a paired comparison under ``extra.ab`` (Note [paired rows])."""
    extra = dict(row.get("extra") or {})
    extra[AB_KEY] = {"session": session, "round": round, "position": position, "role": role, "system": system,
                     "baseline": baseline, "threshold": threshold}
    return {**row, "extra": extra}


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
    """

    session: str
    system: str
    baseline: str
    threshold: float
    values: tuple[float, ...]
    processes: int

    def verdict(self) -> Verdict:
        """The sequential test's verdict on the stored rounds (Note [sequential test])."""
        return decide(self.values, self.threshold)


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
        values = []
        for index in range(len(rounds)):  # the verdict is a function of the sequence: stop at the first gap
            value = _value(rounds.get(index, []))
            if value is None:
                break
            values.append(value)
        out[sid] = Session(sid, *names[sid], tuple(values), counts[sid])
    return out


def _value(members: list[tuple[str, Mapping[str, Any]]]) -> float | None:
    """A round's value, or None when a process of it did not succeed (or a side has none)."""
    if any((row.get("status") or "ok") != "ok" for _, row in members):
        return None
    medians = {role: [Measurement.from_row(row).median for r, row in members if r == role]
               for role in (BASELINE, SYSTEM)}
    if not (medians[BASELINE] and medians[SYSTEM]) or not all(m > 0 for ms in medians.values() for m in ms):
        return None
    return round_value(medians[BASELINE], medians[SYSTEM])
