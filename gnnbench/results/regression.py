"""Regression detection over each benchmark's series of builds: where did the median step beyond noise?

A *benchmark* is one system on one (dataset, model, framework, mode); its
*series* is its builds in order (Note [build order] in
:mod:`gnnbench.results.by_build`: the commit order of ``gnnbench history``,
else the time each build was first measured), one point per build from the
build's latest run. :func:`find_regressions` walks each series and tests every
step between neighbouring successful points.

Note [step test]
    A step from point ``a`` to point ``b`` is the ratio of their medians,
    ``median(b) / median(a) - 1`` (``+18%``: b is slower), with the percentile
    bootstrap CI of that ratio: :func:`gnnbench.results.compare.bootstrap_speedup`
    of ``a``'s samples against ``b``'s, the same test ``compare`` marks with.
    A step is a *regression* when it is slower beyond ``factor`` (default
    1.1, as ``compare``) and its CI excludes 0; an *improvement* likewise the
    other way. Neighbouring medians rather than a change-point fit over the
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

from gnnbench.results.by_build import Build, _key_of, build_key, builds_of
from gnnbench.results.compare import MIN_SAMPLES, _difference, bootstrap_speedup
from gnnbench.core.measurement import Measurement

__all__ = ["Point", "Series", "Step", "series_of", "find_regressions", "KEY"]

#: the fields that name one benchmark
KEY = ("system", "dataset", "model", "framework", "mode")


@dataclass(frozen=True)
class Point:
    """One build in a series: its latest run's status and epoch-time measurement."""

    build: Build
    status: str
    measurement: Measurement
    row: dict = field(repr=False, compare=False, default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and not self.measurement.empty


@dataclass(frozen=True)
class Step:
    """A significant step, or a failure, at one build of a series (Note [step test]).

    ``change``, ``low``, ``high``: ``median(after) / median(before) - 1`` and its CI
    (``+0.18`` is 18% slower); ``None`` for ``kind == 'fails'``.
    """

    series: tuple
    kind: str                 # 'regression', 'improvement' or 'fails'
    build: Build
    before: Build | None
    change: float | None = None
    low: float | None = None
    high: float | None = None

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
        return f"{self.name}: {self.change:+.0%} at {self.where} [{self.low:+.0%}, {self.high:+.0%}]"


@dataclass(frozen=True)
class Series:
    """One benchmark's points in build order."""

    key: tuple
    points: tuple[Point, ...]


def series_of(frame) -> list[Series]:
    """Every benchmark's series in ``frame`` (latest run per build), sorted by benchmark."""
    from gnnbench.results.frame import frame_records

    if frame.empty:
        return []
    out = []
    for system in sorted({s for s in frame["system"] if isinstance(s, str)}):
        builds = builds_of(frame, system)
        rank = {_key_of(b): i for i, b in enumerate(builds)}
        latest: dict[tuple, dict[Any, dict]] = {}
        for row in frame_records(frame[frame["system"] == system]):
            key = tuple(row.get(k) for k in KEY)
            h = build_key(row)
            order = (str(row.get("timestamp")), row.get("id") or 0)
            old = latest.setdefault(key, {}).get(h)
            if old is None or order >= (str(old.get("timestamp")), old.get("id") or 0):
                latest[key][h] = row
        for key in sorted(latest, key=lambda k: tuple(str(v) for v in k)):
            points = [Point(builds[rank[h]], row.get("status") or "ok", Measurement.from_row(row), row)
                      for h, row in sorted(latest[key].items(), key=lambda kv: rank[kv[0]])]
            out.append(Series(key, tuple(points)))
    return out


def _step(series: Series, before: Point, after: Point, factor: float, resamples: int, confidence: float,
          seed: int) -> Step | None:
    if len(before.measurement) < MIN_SAMPLES or len(after.measurement) < MIN_SAMPLES:
        return None  # no interval without samples: no claim
    if _difference(after.row, before.row):
        return None
    speedup, low, high = bootstrap_speedup(before.measurement.samples, after.measurement.samples,
                                           resamples=resamples, confidence=confidence, seed=seed)
    change, c_low, c_high = 1 / speedup - 1, 1 / high - 1, 1 / low - 1
    if change >= factor - 1 and c_low > 0:
        return Step(series.key, "regression", after.build, before.build, change, c_low, c_high)
    if 1 / (1 + change) >= factor and c_high < 0:
        return Step(series.key, "improvement", after.build, before.build, change, c_low, c_high)
    return None


def find_regressions(frame, *, factor: float = 1.1, resamples: int = 2000, confidence: float = 0.95,
                     seed: int = 0, improvements: bool = False) -> list[Step]:
    """Significant steps of every series in ``frame``, in series then build order (Note [step test]).

    Args:
        frame: the results frame (:func:`gnnbench.load_results`).
        factor (float): a step counts when beyond this ratio (default: 1.1).
        resamples, confidence, seed: bootstrap settings (default: 2000, 0.95, 0).
        improvements (bool): also return significant speed-ups (default: False).

    Returns:
        :class:`Step` objects: regressions and failures (and improvements when asked).
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
                if step is not None and (step.kind == "regression" or improvements):
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
