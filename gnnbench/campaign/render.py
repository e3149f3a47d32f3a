"""The one renderer of published tables: a campaign's declared pages (Note [campaign declares its tables]) drawn
from its rows, as Markdown that is the same bytes for the same rows.

A page opens with its title and ``about`` text, then one generated paragraph: the settings the runs share,
how a figure is pooled, and where the rows come from (the load their processes recorded, Note [measured under
load], and the commits they ran at). Each table follows, one per section value when it declares ``sections``,
and the runs that did not succeed are listed under it. The paragraphs the page declares as findings close it
(Note [campaign findings] in :mod:`gnnbench.campaign.findings`).
"""
from __future__ import annotations

import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gnnbench.campaign.columns import COLUMNS, comparison_of, header
from gnnbench.campaign.declaration import Page, TableDeclaration
from gnnbench.campaign.entries import Entry, entries, field_of, selected, size_value
from gnnbench.campaign.findings import finding_lines
from gnnbench.core.stability import OTHER_CPU_LIMIT
from gnnbench.results.paired import paired_rounds

__all__ = ["render_page", "page_rows", "rows_load", "measured_note", "load_note", "quiet_note", "other_cpu",
           "commits_of"]


def load_note(start: float, end: float, cores: int | str | None = None) -> str:
    """The sentence a published table carries about the machine's load when its rows did not record what
    other processes took (Note [measured under load]; :func:`quiet_note` where they did).

    Note [measured under load]
        The benchmark machine is shared (2 cores, other work running), so an
        absolute time says as much about the load as about the system. The
        sweep interleaves the runs of a campaign (Note [sweep order] in
        gnnbench/run/sweep.py), so the load hits every system alike and the
        ratios within one table are what a table reports. The load average
        alone cannot say whether a campaign ran alone: the campaign's own
        processes are in it (two threads on two cores read about 1.5). Rows
        that record ``machine_state.other_cpu_share``, the share of the
        process's allowed CPUs that other processes took while it ran, can:
        a page whose processes saw a median share at or under
        ``OTHER_CPU_LIMIT`` says the machine was quiet and gives the median
        and the largest share (:func:`quiet_note`).
    """
    return (f"Load average at start {start:.1f}, at end {end:.1f} on {cores or os.cpu_count()} cores: the machine "
            "was shared, so absolute times were measured under load; the runs were interleaved, so the ratios "
            "within a table are what it reports.")


def other_cpu(rows: Iterable[Mapping[str, Any]]) -> tuple[float, float, int] | None:
    """The median and largest share of its allowed CPUs that other processes took while a process ran
    (``machine_state.other_cpu_share``), over the rows that recorded it, and their count; None when none did."""
    shares = sorted(float(s) for s in ((r.get("machine_state") or {}).get("other_cpu_share") for r in rows
                                       if isinstance(r.get("machine_state"), Mapping))
                    if isinstance(s, (int, float)))
    return (statistics.median(shares), shares[-1], len(shares)) if shares else None


def quiet_note(start: float, end: float, cores: int | str, others: tuple[float, float, int]) -> str:
    """The load sentence from what other processes took (Note [measured under load])."""
    median, most, count = others
    took = (f"Load average at start {start:.1f}, at end {end:.1f} on {cores} cores, the campaign's own processes "
            f"included; other processes took a median {median:.0%} (at most {most:.0%}) of the CPUs each of the "
            f"{count} processes was allowed while it ran")
    if median <= OTHER_CPU_LIMIT:
        return f"{took}: the machine was quiet."
    return (f"{took}: the machine was shared, so absolute times were measured under load; the runs were "
            "interleaved, so the ratios within a table are what it reports.")


def rows_load(rows: Iterable[Mapping[str, Any]]) -> tuple[float, float] | None:
    """The 1-minute load before the first and after the last run, from the rows' ``machine_state``
    (Note [machine state]); None when no row recorded it."""
    def state(row):
        value = row.get("machine_state")
        return value if isinstance(value, Mapping) else {}

    ordered = sorted((r for r in rows if state(r).get("load_before") and state(r).get("load_after")),
                     key=lambda r: str(r.get("timestamp") or ""))
    if not ordered:
        return None
    return state(ordered[0])["load_before"][0], state(ordered[-1])["load_after"][0]


def commits_of(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The rows' commits, short, in first-seen order (a dirty tree stays visible)."""
    short = (str(c)[:7] + ("-dirty" if str(c).endswith("-dirty") else "") for c in
             (r.get("git_commit") for r in rows) if c)
    return list(dict.fromkeys(short))


def _cores(rows: Sequence[Mapping[str, Any]]) -> int | None:
    for r in rows:
        machine = r.get("machine") if isinstance(r.get("machine"), Mapping) else {}
        if machine.get("cpu_count"):
            return int(machine["cpu_count"])
    return None


def measured_note(rows: Sequence[Mapping[str, Any]]) -> str:
    """Where a page's rows come from: the load they ran under and the commits they ran at."""
    commits = commits_of(rows)
    named = ("commits " if len(commits) > 1 else "commit ") + (", ".join(commits) or "unknown")
    load = rows_load(rows)
    if load is None:
        return f"Load not recorded. Measured at {named}."
    # the rows' own core count, never this machine's: a page renders the same everywhere
    cores = _cores(rows) or "an unrecorded number of"
    others = other_cpu(rows)
    said = quiet_note(*load, cores, others) if others else load_note(*load, cores)
    return f"{said} Measured at {named}."


def _shared(rows: Sequence[Mapping[str, Any]], name: str, missing: str = "?") -> str:
    """The values the rows hold in their own ``name`` (the allocator used, not the one asked for)."""
    values = list(dict.fromkeys(str(r[name]) for r in rows if r.get(name) is not None))
    return ", ".join(values) or missing


def _settings(rows: Sequence[Mapping[str, Any]]) -> str:
    ok = [r for r in rows if r.get("status") == "ok"] or list(rows)
    return (f"Epochs {_shared(ok, 'epochs')} ({_shared(ok, 'warmup')} untimed warm-up), threads "
            f"{_shared(ok, 'threads', 'default')}, allocator {_shared(ok, 'allocator')}, framework "
            f"{_shared(ok, 'framework')}; "
            "each run is its own process, and the processes of a configuration are pooled: a time is the median "
            "of the per-process medians, a per-run figure (prepare, tune, memory) the median over them "
            "(Note [campaign entries] in gnnbench/campaign/entries.py). `vs X` is X's time over the row's (above "
            "1: the row is faster) with a 95 % interval from the two-level bootstrap over processes, then epochs "
            "(Note [between-process statistics] in gnnbench/core/statistics.py); `(! ...)` and `stability` say "
            "why a figure is unsteady, and an interval beside an unsteady figure claims nothing.")


def _paired_note(sessions: Sequence[Any]) -> str:
    """How a decided table's comparisons ran (Note [decided tables] in gnnbench/campaign/columns.py): the
    thresholds and budgets their rows carry."""
    from gnnbench.core.sequential import ALPHA, BETA
    from gnnbench.results.paired import duration

    thresholds = ", ".join(dict.fromkeys(f"{s.threshold * 100:g} %" for s in sessions)) or "?"
    budgets = ", ".join(dict.fromkeys(duration(s.budget_s) for s in sessions if s.budget_s is not None)) \
        or "not recorded"
    return ("Each comparison ran in paired rounds, two processes of each system back to back in ABBA order "
            "(Note [paired rounds] in gnnbench/core/sequential.py), until the sequential test called it faster, "
            f"slower or the same at a threshold of {thresholds} (alpha {ALPHA:g}, beta {BETA:g}; Note [sequential "
            f"test]) or its next round would pass its budget of {budgets} (undecided). The verdict, the paired "
            "ratio (the baseline's time over the system's, with a 95 % interval over rounds), the rounds and the "
            "minutes are rebuilt from the stored processes (Note [decided tables] in gnnbench/campaign/columns.py).")


def _section_values(table: TableDeclaration, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    if table.sections is None:
        return [None]
    values = list(dict.fromkeys(field_of(r, table.sections) for r in rows))
    if table.sections == "edges":
        return sorted(values, key=size_value)
    return values


def _ordered(found: list[Entry], table: TableDeclaration) -> list[Entry]:
    """Rows grouped by their first field (graph sizes smallest first), systems in first-seen order."""
    def order(entry: Entry):
        first = entry[table.rows[0]]
        if table.rows[0] == "edges" and first is not None:
            return (size_value(first),)
        return ()
    return sorted(found, key=order)  # stable: first-seen order within a group


def _columns(table: TableDeclaration) -> list[tuple[str, str | None]]:
    """``(column, baseline)`` for each column shown: a ratio column once per baseline."""
    return [(c, name) for c in table.columns
            for name in (table.baselines if COLUMNS[c].needs_baseline else table.baselines[:1] or [None])]


def _table_lines(table: TableDeclaration, rows: Sequence[Mapping[str, Any]], sessions: Sequence[Any]) -> list[str]:
    from dataclasses import replace

    from gnnbench.results.tables import Table

    lines: list[str] = []
    paired = any(COLUMNS[c].paired for c in table.columns)
    for value in _section_values(table, rows):
        mine = rows if value is None else [r for r in rows if field_of(r, table.sections) == value]
        found = _ordered(entries(mine, table.rows), table)
        if paired:  # Note [decided tables] in gnnbench/campaign/columns.py
            found = [replace(e, comparison=comparison_of(e, sessions, table.rows, table.baselines[0]))
                     for e in found]
        group = [f for f in table.rows if f != table.against]
        columns = _columns(table)
        base = {(name, tuple(e[f] for f in group)): e for name in table.baselines for e in found
                if e[table.against] == name}
        cells = [[COLUMNS[c].cell(e, base.get((name, tuple(e[f] for f in group)))) for c, name in columns]
                 for e in found]
        if value is not None:
            lines += [f"### {table.sections} {value}" if table.title else f"## {value}", ""]
        rendered = Table([header(c, name) for c, name in columns], cells,
                         [COLUMNS[c].numeric for c, _ in columns]).render("markdown").rstrip("\n")
        lines += [rendered, ""]
        failed = [e for e in found if not e.ok]
        if failed:
            lines += ["Not successful:", ""]
            lines += [f"- {' '.join(str(v) for _, v in e.key)}: {COLUMNS['status'].cell(e, None)}" for e in failed]
            lines.append("")
    return lines


def _paired(page: Page) -> bool:
    """Whether ``page`` shows paired comparisons (Note [decided tables] in gnnbench/campaign/columns.py)."""
    return any(COLUMNS[c].paired for t in page.tables for c in t.columns)


def page_rows(page: Page, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows any of ``page``'s tables shows, once each; for a page of paired comparisons, every process of
    them, the baselines' too (half of every comparison shown)."""
    shown = [r for t in page.tables for r in selected(rows, t.where)]
    if _paired(page):
        shown += [r for s in paired_rounds(rows).values() for r in s.rows]
    return list({id(r): r for r in shown}.values())


def render_page(page: Page, rows: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown of ``page`` drawn from ``rows`` (every stored process of the campaign)."""
    lines = [f"# {page.title}", ""]
    if page.about:
        lines += [page.about.strip(), ""]
    paired = _paired(page)
    sessions = list(paired_rounds(rows).values()) if paired else []
    unique = page_rows(page, rows)
    lines += [f"{_settings(unique)} {measured_note(unique)}" + (f" {_paired_note(sessions)}" if paired else ""), ""]
    for table in page.tables:
        mine = selected(rows, table.where)
        if table.title:
            lines += [f"## {table.title}", ""]
        if table.about:
            lines += [table.about.strip(), ""]
        if not mine:
            lines += ["No rows.", ""]
            continue
        lines += _table_lines(table, mine, sessions)
    for finding in page.findings:  # Note [campaign findings] in gnnbench/campaign/findings.py
        lines += finding_lines(finding, rows)
    return "\n".join(lines).rstrip("\n") + "\n"
