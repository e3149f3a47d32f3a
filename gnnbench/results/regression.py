"""Regression detection over each benchmark's series of builds: where did the median step beyond noise?

A *benchmark* is one system on one (dataset, model, framework, mode); its
*series* is its builds in order (Note [build order] in
:mod:`gnnbench.results.by_build`: the commit order of ``gnnbench history``,
else the time each build was first measured), one point per build pooling
every stored run of the build as one process each (Note [configurations] in
:mod:`gnnbench.results.configurations`). :func:`find_regressions` walks each
series and tests every step between neighbouring successful points.

Note [step test]
    A step from point ``a`` to point ``b`` is the ratio of their figures
    (medians of per-process medians), ``figure(b) / figure(a) - 1`` (``+18%``:
    b is slower), with the two-level bootstrap CI of that ratio:
    :func:`gnnbench.core.statistics.speedup` of ``a``'s processes against
    ``b``'s, the same test ``compare`` marks with (Note [between-process
    statistics]). A step is a *regression* when it is slower beyond
    ``factor`` (compare's :data:`~gnnbench.core.statistics.FACTOR`), its CI
    excludes 0 and neither point is unstable; an *improvement* likewise the
    other way; a step beyond ``factor`` that cannot be claimed (one process,
    too few, too spread) is *unclaimed*, printed with ``~`` and the reason,
    and fails ``--strict`` as compare's unstable figures do: a gate that
    cannot see does not pass. Neighbouring medians rather than a change-point fit over the
    whole series: every commit is measured with its own samples, so each
    step has its own CI and the first bad commit is the first significant
    step. A build that did not succeed is a ``fails`` step of its own and the
    next successful build is compared with the last successful one before it,
    so a broken commit neither hides nor invents a step. Points whose machine
    or problem differ (Note [comparable runs]) are never compared.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gnnbench.core.statistics import CONFIDENCE, FACTOR, RESAMPLES, SEED, Processes, relative_change, speedup
from gnnbench.results.by_build import Build, _key_of, build_key, builds_of
from gnnbench.results.compare import _difference, processes_of

__all__ = ["Point", "Series", "Step", "series_of", "find_regressions", "KEY", "FAILING"]

#: the fields that name one benchmark
KEY = ("system", "dataset", "model", "framework", "mode")
#: the kinds of step that fail ``--strict`` (Note [step test])
FAILING = ("regression", "fails", "unclaimed")


@dataclass(frozen=True)
class Point:
    """One build in a series: its status (its latest run's) and its pooled processes (Note [configurations])."""

    build: Build
    status: str
    processes: Processes
    row: dict = field(repr=False, compare=False, default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and len(self.processes) > 0


@dataclass(frozen=True)
class Step:
    """A significant step, or a failure, at one build of a series (Note [step test]).

    ``change``, ``low``, ``high``: ``median(after) / median(before) - 1`` and its CI
    (``+0.18`` is 18% slower); ``None`` for ``kind == 'fails'``.
    """

    series: tuple
    kind: str                 # 'regression', 'improvement', 'unclaimed' or 'fails'
    build: Build
    before: Build | None
    change: float | None = None
    low: float | None = None
    high: float | None = None
    why: str | None = None    # an unclaimed step: why no significance is claimed

    @property
    def name(self) -> str:
        system, dataset, model, framework, mode = self.series
        return f"{system} {model} {dataset}" + (f" {framework}" if framework != "torch" else "") + (
            f" {mode}" if mode not in (None, "train") else "")

    @property
    def where(self) -> str:
        b = self.build
        return b.commit[:7] if b.commit else (b.system_hash or "?")[:8]

    def __str__(self) -> str:
        if self.kind == "fails":
            return f"{self.name}: fails at {self.where}"
        if self.kind == "unclaimed":
            interval = f" [{self.low:+.0%}, {self.high:+.0%}]" if self.low is not None else ""
            return f"{self.name}: ~{self.change:+.0%} at {self.where}{interval} ({self.why})"
        return f"{self.name}: {self.change:+.0%} at {self.where} [{self.low:+.0%}, {self.high:+.0%}]"


@dataclass(frozen=True)
class Series:
    """One benchmark's points in build order."""

    key: tuple
    points: tuple[Point, ...]


def series_of(frame) -> list[Series]:
    """Every benchmark's series in ``frame`` (every run of a build pooled), sorted by benchmark."""
    from gnnbench.results.frame import frame_records

    if frame.empty:
        return []
    out = []
    ordered = frame.assign(_order=range(len(frame))).sort_values(
        ["timestamp", "id", "_order"], na_position="first", kind="stable").drop(columns="_order")
    for system in sorted({s for s in frame["system"] if isinstance(s, str)}):
        builds = builds_of(frame, system)
        rank = {_key_of(b): i for i, b in enumerate(builds)}
        runs: dict[tuple, dict[Any, list[dict]]] = {}
        for row in frame_records(ordered[ordered["system"] == system]):
            runs.setdefault(tuple(row.get(k) for k in KEY), {}).setdefault(build_key(row), []).append(row)
        for key in sorted(runs, key=lambda k: tuple(str(v) for v in k)):
            by_rank = sorted(runs[key].items(), key=lambda kv: rank[kv[0]])
            out.append(Series(key, tuple(_point(builds[rank[h]], rows) for h, rows in by_rank)))
    return out


def _point(build: Build, rows: list[dict]) -> Point:
    """A build's point: its successful runs pooled, else its latest run's failure (Note [configurations])."""
    ok = [r for r in rows if (r.get("status") or "ok") == "ok"]
    latest = (ok or rows)[-1]
    return Point(build, latest.get("status") or "ok", processes_of(ok), latest)


def _step(series: Series, before: Point, after: Point, factor: float, resamples: int, confidence: float,
          seed: int) -> Step | None:
    if _difference(after.row, before.row):
        return None
    change, low, high = relative_change(speedup(before.processes, after.processes, resamples=resamples,
                                                confidence=confidence, seed=seed))
    slower, faster = change >= factor - 1, 1 / (1 + change) >= factor
    if not (slower or faster):
        return None
    mine, theirs = after.processes.note(confidence), before.processes.note(confidence)
    if mine or theirs or low is None:
        why = mine or (f"before: {theirs}" if theirs else "no interval")
        return Step(series.key, "unclaimed", after.build, before.build, change, low, high, why)
    if slower and low > 0:
        return Step(series.key, "regression", after.build, before.build, change, low, high)
    if faster and high < 0:
        return Step(series.key, "improvement", after.build, before.build, change, low, high)
    return None


def find_regressions(frame, *, factor: float = FACTOR, resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
                     seed: int = SEED, improvements: bool = False) -> list[Step]:
    """Significant steps of every series in ``frame``, in series then build order (Note [step test]).

    Args:
        frame: the results frame (:func:`gnnbench.load_results`).
        factor (float): a step counts when beyond this ratio (default: :data:`~gnnbench.core.statistics.FACTOR`).
        resamples, confidence, seed: bootstrap settings (default: ``RESAMPLES``, ``CONFIDENCE``, ``SEED`` of
            :mod:`gnnbench.core.statistics`).
        improvements (bool): also return significant (and unclaimed) speed-ups (default: False).

    Returns:
        :class:`Step` objects: regressions, unclaimed slower steps and failures (and improvements when asked).
    """
    steps = []
    for s in series_of(frame):
        last_ok: Point | None = None
        for point in s.points:
            if not point.ok:
                if point.status != "skipped":
                    steps.append(Step(s.key, "fails", point.build, last_ok.build if last_ok else None))
                continue
            if last_ok is not None:
                step = _step(s, last_ok, point, factor, resamples, confidence, seed)
                if step is not None and (improvements or step.change > 0 and step.kind != "improvement"):
                    steps.append(step)
            last_ok = point
    return steps


def first_regressions(steps: Sequence[Step]) -> dict[tuple, Step]:
    """The first regression of each series: the first bad commit."""
    out: dict[tuple, Step] = {}
    for step in steps:
        if step.kind == "regression":
            out.setdefault(step.series, step)
    return out
