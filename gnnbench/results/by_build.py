"""Build against build: every stored build of a system side by side, or one store against another.

:func:`compare_builds` sets each stored build (``system_hash``) of a system
beside a chosen one, oldest first; :func:`compare_stores` sets each system of
one store beside the same system in another store (yesterday's campaign
against today's). Both relabel the runs and hand them to
:func:`gnnbench.results.compare.compare`, so every stored run of a build is
pooled as one process (Note [configurations] in
:mod:`gnnbench.results.configurations`), and the figures, the two-level
bootstrap CI of the speedup, the stability flags, the comparability check and
the marks are the ones ``compare`` uses (Note [between-process statistics] in
:mod:`gnnbench.core.statistics`, Note [marks], Note [comparable runs] in
:mod:`gnnbench.results.compare`): nothing here computes a statistic of its own.

Note [builds are compared unverified]
    ``compare`` claims a speedup over another system only for verified runs
    (Note [claims need verification]). Two builds of one system are the same
    system measured twice, and what the author asks is whether an edit made
    it slower; a regression must show before anybody verifies the new build.
    So build-against-build comparisons include unverified builds, and the
    table's footer says so.

Note [build order]
    A build's place is the time of its first stored run (then its smallest
    id): "oldest first" means oldest measured. A run stored by ``gnnbench
    history`` carries the commit it measured (``extra.history.commit``) and
    that commit's place in the walk (``extra.history.index``), which wins
    over the timestamp, and the build is labelled by the commit. Two commits
    with the same ``system_hash`` (a commit that left the kernels alone, or
    one that reverted them) are two points of the history, and every row of
    one commit is that commit's build, a failed row of a broken commit (which
    has no hash) included: a build is its history commit where there is one,
    else its ``system_hash`` (:func:`build_key`).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gnnbench.core.statistics import CONFIDENCE, FACTOR, RESAMPLES, SEED
from gnnbench.errors import UserError
from gnnbench.results.compare import Comparison, SystemResult, compare, spmm_columns, stability_footnote
from gnnbench.results.tables import Table, fmt_number

__all__ = ["Build", "BuildComparison", "builds_of", "compare_builds", "compare_stores", "history_of", "build_key"]

_GROUP = ("dataset", "model", "framework")


def history_of(extra: Any) -> dict[str, Any]:
    """``extra.history`` of a run stored by ``gnnbench history`` (commit, index, subject), else ``{}``."""
    h = extra.get("history") if isinstance(extra, dict) else None
    return h if isinstance(h, dict) else {}


@dataclass(frozen=True)
class Build:
    """One build of a system: its ``system_hash`` and where it sits (Note [build order])."""

    system: str
    system_hash: str | None
    order: tuple
    commit: str | None = None
    subject: str | None = None

    @property
    def label(self) -> str:
        """``isplib@1a2b3c4`` (the commit) or ``isplib#0f3c9a12`` (the hash)."""
        if self.commit:
            return f"{self.system}@{self.commit[:7]}"
        return f"{self.system}#{(self.system_hash or 'unknown')[:8]}"


def build_key(row) -> tuple[str, str | None]:
    """What tells one build of a system from another (Note [build order]): the history commit of a row
    ``gnnbench history`` stored (a failed row of a broken commit has no hash), else its ``system_hash``."""
    commit = history_of(row.get("extra")).get("commit")
    if commit:
        return "commit", commit
    h = row.get("system_hash")
    return "hash", (h if isinstance(h, str) else None)


def builds_of(frame, system: str) -> list[Build]:
    """The builds of ``system`` in ``frame``, oldest first (Note [build order])."""
    from gnnbench.results.frame import frame_records

    first: dict[Any, Build] = {}
    for position, row in enumerate(frame_records(frame[frame["system"] == system])):
        h = history_of(row.get("extra"))
        key = build_key(row)
        order = (h.get("index", float("inf")), str(row.get("timestamp")), row.get("id") or 0, position)
        known = first.get(key)
        digest = row.get("system_hash") if isinstance(row.get("system_hash"), str) else None
        if known is None or order < known.order:
            first[key] = Build(system, digest or (known.system_hash if known else None), order, h.get("commit"),
                               h.get("subject"))
        elif known.system_hash is None and digest:
            first[key] = replace(known, system_hash=digest)
    return sorted(first.values(), key=lambda b: b.order)


def _key_of(build: Build) -> tuple[str, str | None]:
    return ("commit", build.commit) if build.commit else ("hash", build.system_hash)


def _pick(builds: list[Build], prefix: str | None, system: str) -> Build:
    if prefix is None:
        return builds[0]
    hits = [b for b in builds if (b.system_hash or "").startswith(prefix) or (b.commit or "").startswith(prefix)]
    if len(hits) != 1:
        choices = [f"{(b.system_hash or '?')[:8]}" + (f" ({b.commit[:7]})" if b.commit else "") for b in builds]
        what = "matches no build" if not hits else "matches several builds"
        raise UserError(f"--baseline-build {prefix!r} {what} of {system}; choose a hash or commit prefix among "
                        f"{choices}")
    return hits[0]


@dataclass
class BuildComparison:
    """Results of :func:`compare_builds` or :func:`compare_stores`, in table order.

    ``comparison`` is the underlying :class:`~gnnbench.results.compare.Comparison`
    whose ``system`` labels are builds (``isplib@1a2b3c4``) or stores
    (``baseline``/``current``); ``columns`` names what the label column shows.
    """

    comparison: Comparison
    results: list[SystemResult]
    column: str
    what: str
    baseline_label: str
    builds: list[Build]

    @property
    def regressions(self) -> list[SystemResult]:
        """Results marked ``+`` or ``!``, for ``--strict``."""
        return [r for r in self.results if r.mark in ("+", "!")]

    @property
    def unclaimed(self) -> list[SystemResult]:
        """Speedups that claim no significance because a figure is unstable, for ``--strict``."""
        return [r for r in self.results if r.withheld]

    @property
    def warnings(self) -> list[str]:
        # a comparison of builds differs in system_hash on purpose: that warning says nothing here
        return [w for w in self.comparison.warnings if "builds (system_hash)" not in w]

    def as_dicts(self) -> list[dict[str, Any]]:
        keep = {id(r) for r in self.results}
        return [d for r, d in zip(self.comparison.results, self.comparison.as_dicts()) if id(r) in keep]

    def table(self) -> Table:
        c = self.comparison
        unit, scale = c.unit
        header = ["", *c.group_by, self.column, f"epoch time ({unit})", "procs",
                  f"speedup vs {self.baseline_label}", f"{c.confidence:.0%} CI"]
        rows = []
        for r in self.results:
            if r.status != "ok":
                time = r.status
            elif r.median_s is None:
                time = "n/a"
            else:
                time = fmt_number(r.median_s / scale) + r.noise_mark
            speedup = f"{r.speedup:.2f}x" if r.speedup is not None else (r.note or "n/a")
            rows.append([r.mark, *(r.group.get(g) for g in c.group_by), r.system, time, r.processes or "",
                         speedup, r.interval])
        notes = [
            (f"Epoch time: median in {unit} of the per-process median epoch times over every stored run (process) "
             f"of the build, procs of them. Speedup: {self.what} figure / this figure (above 1 is faster); "
             f"{c.confidence:.0%} CI by a two-level bootstrap, processes then their epochs; none with 1 process."),
            (f"Marks: - faster, + slower (beyond {c.factor:g}x, CI excludes 1, both figures stable), ~ beyond "
             f"{c.factor:g}x but not significant or unstable, ! run did not succeed, x not comparable (a machine or "
             f"problem field differs). Unverified runs are included (Note [builds are compared unverified])."),
            stability_footnote(c.confidence),
        ]
        spmm_header, spmm_cells, spmm_numeric, spmm_notes = spmm_columns(self.results)  # Note [spmm columns]
        rows = [row + cells for row, cells in zip(rows, spmm_cells)]
        return Table(header + spmm_header, rows, [False] * (len(c.group_by) + 2) + [True] * 4 + spmm_numeric,
                     notes=notes + spmm_notes)

    def render(self, format: str = "text") -> str:
        if format == "csv":
            from gnnbench.results.tables import records_csv

            return records_csv(self.as_dicts())
        return self.table().render(format)


def compare_builds(frame, system: str, baseline_build: str | None = None,
                   group_by: Sequence[str] = _GROUP, *, factor: float = FACTOR, resamples: int = RESAMPLES,
                   confidence: float = CONFIDENCE, seed: int = SEED) -> BuildComparison:
    """Every stored build of ``system`` against one of them, group by group, oldest first.

    Args:
        frame: the results frame (:func:`gnnbench.load_results`).
        system (str): the system whose builds are compared.
        baseline_build (str, optional): a ``system_hash`` or history-commit prefix
            (default: the oldest build, Note [build order]).
        group_by, factor, resamples, confidence, seed: as :func:`~gnnbench.results.compare.compare`.

    Raises:
        UserError: no run of ``system``, or a prefix matching no build or several.
    """
    rows = frame[frame["system"] == system].copy()
    if rows.empty:
        known = sorted({s for s in frame["system"] if isinstance(s, str)})
        raise UserError(f"no stored runs of system {system!r}; stored systems are {known}")
    builds = builds_of(frame, system)
    base = _pick(builds, baseline_build, system)
    label = {_key_of(b): b.label for b in builds}
    rows["system"] = [label[build_key({"system_hash": h, "extra": e})]
                      for h, e in zip(rows["system_hash"], rows["extra"])]
    c = compare(rows, baseline=base.label, group_by=group_by, include_unverified=True, factor=factor,
                resamples=resamples, confidence=confidence, seed=seed)
    rank = {b.label: i for i, b in enumerate(builds)}
    ordered = sorted(c.results, key=lambda r: (tuple(str(v) for v in r.group.values()), rank.get(r.system, 0)))
    return BuildComparison(c, ordered, "build", base.label, base.label, builds)


def compare_stores(frame, baseline_frame, group_by: Sequence[str] = _GROUP, *, factor: float = FACTOR,
                   resamples: int = RESAMPLES, confidence: float = CONFIDENCE, seed: int = SEED) -> BuildComparison:
    """Each system of ``frame`` against the same system in ``baseline_frame``: one row per system and group.

    Every stored run of each side's latest build is pooled, as in ``compare``
    (Note [configurations]); a system in only one store shows ``no baseline``
    (or is absent when only the baseline has it).
    """
    import pandas as pd

    sides = []
    for side, data in (("baseline", baseline_frame), ("current", frame)):
        part = data.copy()
        part["_system"] = part["system"]
        part["system"] = side
        sides.append(part)
    both = pd.concat(sides, ignore_index=True)
    groups = (*group_by, "_system")
    c = compare(both, baseline="baseline", group_by=groups, include_unverified=True, factor=factor,
                resamples=resamples, confidence=confidence, seed=seed)
    results = []
    for r in c.results:
        if r.system != "current":
            continue
        group = dict(r.group)
        name = group.pop("_system")
        results.append(SystemResult(**{**r.__dict__, "group": group, "system": name}))
    c = Comparison(results, "baseline", tuple(group_by), True, factor, resamples, confidence, c.warnings)
    return BuildComparison(c, results, "system", "the baseline store", "baseline", [])


def load_pair(path: str | os.PathLike | None, baseline_path: str | os.PathLike, **filters):
    """Both stores as frames; either one failing to open is a :class:`UserError` naming it."""
    from gnnbench.results.frame import load_results

    return load_results(path, **filters), load_results(baseline_path, **filters)
