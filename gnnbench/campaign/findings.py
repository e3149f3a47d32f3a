"""The paragraphs a page declares beside its tables (``[[publish.findings]]``), each computed from its rows when the
page renders.

Note [campaign findings]
    A sentence that states a result is a view of the rows as much as a table
    is, so a page declares it and the renderer writes it: never typed by
    hand, it changes when the rows do and a clean clone re-renders it byte for
    byte (Note [committed rows]). Each ``[[publish.findings]]`` names its
    ``kind``, an optional ``title`` (its heading) and ``where`` (the runs it
    reads, as a table's); the kinds and the keys each takes are
    :data:`~gnnbench.campaign.declaration.FINDING_KEYS`:

    * ``first-to-target``: per model, graph and target, which system reaches
      the target first, or that none is decided (:func:`first_to_target_lines`).
      A system leads on MLPerf's figure over seeds (Note [time to target in
      tables]); the lead is *decided* when the interval over seeds of every
      other system's time over the leader's, paired by seed, lies above 1.
      Left out of the race: a system whose time is a simulation's (``pim``),
      and one the convergence check marks against ``reference`` (its speed is
      not claimed until someone looks at what it trains).
    * ``extrapolation``: the time per batch and the kernels' share carried
      from the two measured graph sizes to a graph of ``nodes`` and ``edges``
      named ``to`` (Note [extrapolating a batch] in
      :mod:`gnnbench.campaign.extrapolation`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from gnnbench.campaign.declaration import Finding
from gnnbench.campaign.entries import entries, selected

__all__ = ["finding_lines", "first_to_target_lines"]

#: a finding's heading when it declares none
TITLES = {"first-to-target": "Which system reaches the target first",
          "extrapolation": "Extrapolated to the full graph"}


def finding_lines(finding: Finding, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Markdown of one finding: its heading, then its paragraph(s)."""
    mine = selected(rows, finding.where)
    if finding.kind == "extrapolation":
        from gnnbench.campaign.extrapolation import extrapolation_lines

        body = extrapolation_lines(mine, finding.value("to"), finding.value("nodes"), finding.value("edges"))
    else:
        body = first_to_target_lines(mine)
    return [f"## {finding.title or TITLES[finding.kind]}", "", *body, ""]


def _racing(found: list, reference) -> tuple[list, list[str]]:
    """The entries that race (a finite, measured figure, not marked by the convergence check against
    ``reference``) and why each other one is left out."""
    from gnnbench.campaign import to_target

    racing, out = [], []
    for e in found:
        value = to_target.figure(e) if e.ok else None
        if not e.ok:
            out.append(f"{e['system']} did not succeed ({e.latest.get('status')})")
        elif value is None or not math.isfinite(value):
            out.append(f"{e['system']} did not reach it")
        elif to_target.simulated_entry(e):
            out.append(f"{e['system']}'s time is a simulation's")
        elif reference is not None and to_target.convergence_text(e, reference):
            out.append(f"{e['system']} is marked by the convergence check")
        else:
            racing.append(e)
    return racing, out


def _race_text(racing: list, target: Any) -> str:
    from gnnbench.campaign import to_target
    from gnnbench.core.statistics import seed_speedup

    racing = sorted(racing, key=lambda e: (to_target.figure(e), str(e["system"])))
    leader = racing[0]
    seconds = to_target.seconds_by_seed(leader)
    head = (f"{leader['system']} has the lowest time to {target:g}, {to_target.figure(leader):.2f} s (MLPerf's mean "
            f"over {len(seconds)} seeds)")
    if len(racing) == 1:
        return f"{head}, and no other system reached it: {leader['system']} reaches it first."
    behind = []
    for other in racing[1:]:
        ratio, low, high = seed_speedup(to_target.seconds_by_seed(other), seconds)
        behind.append((other["system"], ratio, low, high))
    undecided = next((b for b in behind if b[2] is None or b[2] <= 1), None)
    if undecided is None:
        system, ratio, low, high = behind[0]
        rest = ", and every other system's interval lies above 1 too" if len(behind) > 1 else ""
        return (f"{head}: {leader['system']} reaches it first, decided (the next, {system}, takes {ratio:.2f}x as "
                f"long [{low:.2f}, {high:.2f}] over seeds{rest}).")
    system, ratio, low, high = undecided
    why = (f"{system} takes {ratio:.2f}x as long [{low:.2f}, {high:.2f}], an interval that reaches 1" if low is not None
           else f"{system} takes {ratio:.2f}x as long with no interval (too few seeds, or missed ones decide it)")
    return f"{head}, but none is decided: {why}."


def first_to_target_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per model, graph and target: which system reaches the target first, or that none is decided
    (Note [campaign findings])."""
    from gnnbench.core.oracle import REFERENCE

    lines = []
    fields = ["model", "dataset", "target_accuracy", "system"]
    found = [e for e in entries(rows, fields) if e["target_accuracy"] is not None]
    groups: dict[tuple, list] = {}
    for e in found:
        groups.setdefault(tuple(e[f] for f in fields[:-1]), []).append(e)
    for (model, dataset, target), group in groups.items():
        reference = next((e for e in group if e["system"] == REFERENCE), None)
        racing, out = _racing(group, reference)
        text = _race_text(racing, target) if racing else f"No system reached {target:g}: none is decided."
        left = f" Left out: {'; '.join(out)}." if out else ""
        lines.append(f"- {model} on {dataset}: {text}{left}")
    return lines or ["No runs with a target accuracy."]
