"""Comparison of stored runs: every system against a baseline, group by group.

:func:`compare` pivots the results frame (:func:`gnnbench.load_results`, or rows
of the results store) into a :class:`Comparison`: per group (by default
dataset x model x framework) and system, the figure of its pooled processes (every stored run of the
configuration, Note [configurations] in :mod:`gnnbench.results.configurations`),
the speedup over the baseline with its two-level bootstrap interval
(Note [between-process statistics] in :mod:`gnnbench.core.statistics`),
the peak-memory ratio and the accuracy difference against ``reference``. It
returns objects and never prints; :meth:`Comparison.table` is a
:class:`gnnbench.results.tables.Table` and :meth:`Comparison.render` its text, markdown,
CSV or HTML.

Note [claims need verification]
    A speedup is only claimed for a system whose run was verified against
    ``reference`` (``verified == 'passed'``): a fast wrong kernel proves nothing.
    Failed and unverified systems still appear, with their memory and accuracy,
    but their speedup cell names why it is missing, unless
    ``include_unverified=True``. The baseline itself is never gated.

Note [marks]
    As in asv ``compare``: ``-`` faster and ``+`` slower when the speedup is
    beyond ``factor`` (either way), its confidence interval excludes 1
    (significant) and neither figure is unstable (one process, too few, or
    too spread: Note [between-process statistics]); ``~`` when beyond
    ``factor`` but not significant or unstable, the CI cell then saying why; ``!`` a run
    that did not succeed; ``f`` a run that borrowed operators from a fallback
    system (Note [fallback accounting] in :mod:`gnnbench.runtime.fallback`): its epoch
    holds the lender's kernel time, so no speedup is credited to the system; ``x`` not comparable: the system's run and the
    baseline's differ in what decides speed (Note [comparable runs]), so no
    speedup is claimed; ``m`` a modeled time (Note [modeled rows] in
    :mod:`gnnbench.results.frame`): the speedup sets a model beside
    measurements, one figure without a confidence interval, and a run whose
    times are a simulation's wall time shows no time and no speedup at all. A time cell gets ``(! XX%)`` when the measurement is
    noisy (Note [noise threshold] in :mod:`gnnbench.core.measurement`).

Note [comparable runs]
    A ratio of two epoch times means something only when both runs had the same
    machine and the same problem: :data:`COMPARABLE_FIELDS` (device, CPU model,
    threads, allocator, graph size) must agree between a system's run and the
    baseline's in its group. A field null on either side (rows stored before
    it existed) is not a difference. The table-wide ``warnings`` still report
    mixed settings across groups.

Note [spmm columns]
    A row whose run stored SpMM figures (``extra.spmm_figures``, Note [spmm
    figures] in :mod:`gnnbench.run.bounds`) shows its costliest SpMM-type
    kernel's name, GB/s, GFLOP/s and fractions of the STREAM and gather
    bounds of the machine it ran on: figures that compare across machines
    and with papers, where an epoch time does not. The five columns appear
    only when some row of the table has them, so a table of rows stored
    before the figures existed (or of systems whose kernels are not timed)
    reads as it always did; in CSV they are always there (one column per
    :class:`SystemResult` field), empty where unknown.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from gnnbench.core.oracle import REFERENCE
from gnnbench.core.measurement import NOISE_THRESHOLD, Measurement
from gnnbench.core.stability import MIN_PROCESSES, OTHER_CPU_LIMIT, OUTLIER_LIMIT, PRECISION, SPREAD_LIMIT
from gnnbench.core.statistics import CONFIDENCE, FACTOR, RESAMPLES, SEED, Processes, speedup
from gnnbench.results.configurations import Configuration, configurations
from gnnbench.results.row import COMPARABLE_FIELDS, Extra, Profile, SpmmFigures
from gnnbench.results.tables import FORMATS, Table, flat_records, fmt_number

__all__ = ["compare", "compare_profiles", "Comparison", "SystemResult", "REFERENCE", "COMPARABLE_FIELDS",
           "spmm_columns", "processes_of", "stability_footnote", "FACTOR", "RESAMPLES", "CONFIDENCE", "SEED"]

_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6))


@dataclass(frozen=True)
class SystemResult:
    """One system in one group of a :class:`Comparison`.

    Attributes:
        group: the ``group_by`` fields and their values.
        median_s, iqr_s: the figure (median of per-process median epoch times) and the median of the
            per-process IQRs, in seconds (:class:`~gnnbench.core.statistics.Processes`; ``samples``
            counts the epochs, ``processes`` the pooled runs).
        noise, noisy: median over processes of IQR / median, and whether it passes the noise threshold.
        spread: standard deviation of the process medians over their mean (``None`` below two).
        unstable: why the figure can carry no significance mark (Note [between-process statistics]), or ``None``.
        speedup, ci_low, ci_high: baseline figure / this figure and its CI;
            ``None`` when no claim is made (``note`` says why).
        significant: the CI excludes 1 (``None`` when no interval was computed or a figure is unstable).
        withheld: why a speedup claims no significance (this figure's or the baseline's instability).
        mark: ``-``, ``+``, ``~``, ``!``, ``f``, ``x`` or ``''`` (Note [marks]).
        fallback: the system that lent operators to this run, or ``None``.
        timing: ``measured``, ``modeled`` or ``simulated`` (Note [modeled rows]).
        memory_ratio: peak memory / the baseline's.
        accuracy_diff: test accuracy minus ``reference``'s, as a fraction.
        spmm_kernel, spmm_GBps, spmm_GFLOPs, spmm_of_stream, spmm_of_gather: the run's costliest
            SpMM-type kernel and its figures (Note [spmm columns]), ``None`` when the row has none.
    """

    group: dict[str, Any]
    system: str
    status: str
    verified: str
    run_id: int | None = None
    error: str | None = None
    median_s: float | None = None
    iqr_s: float | None = None
    samples: int = 0
    processes: int = 0
    noisy: bool = False
    noise: float | None = None
    spread: float | None = None
    unstable: str | None = None
    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    significant: bool | None = None
    mark: str = ""
    note: str | None = None
    withheld: str | None = None
    memory_ratio: float | None = None
    accuracy_diff: float | None = None
    fallback: str | None = None
    timing: str = "measured"
    spmm_kernel: str | None = None
    spmm_GBps: float | None = None
    spmm_GFLOPs: float | None = None
    spmm_of_stream: float | None = None
    spmm_of_gather: float | None = None

    @property
    def interval(self) -> str:
        """The CI cell: ``[low, high]`` and why no significance is claimed; the baseline's own instability."""
        ci = f"[{self.ci_low:.2f}, {self.ci_high:.2f}]" if self.ci_low is not None else ""
        why = self.withheld or (self.unstable if self.note == "baseline" else None)
        return " ".join(part for part in (ci, why) if part)

    @property
    def noise_mark(self) -> str:
        """``" (! 12%)"`` after the time when the figure is noisy, else ``""`` (Note [noise threshold])."""
        return f" (! {self.noise:.0%})" if self.noisy and self.noise is not None else ""


@dataclass
class Comparison:
    """The result of :func:`compare`: results in table order plus warnings.

    ``warnings`` lists reasons to distrust the table (mixed machines, library
    versions, commits); the library never prints them.
    """

    results: list[SystemResult]
    baseline: str
    group_by: tuple[str, ...]
    include_unverified: bool = False
    factor: float = FACTOR
    resamples: int = RESAMPLES
    confidence: float = CONFIDENCE
    warnings: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[SystemResult]:
        """Results marked ``+`` (significantly slower) or ``!`` (did not succeed), for exit codes."""
        return [r for r in self.results if r.mark in ("+", "!")]

    @property
    def unclaimed(self) -> list[SystemResult]:
        """Speedups that claim no significance because a figure is unstable (``withheld``), for ``--strict``."""
        return [r for r in self.results if r.withheld]

    @property
    def unit(self) -> tuple[str, float]:
        """The table's time unit: the largest of s, ms, us that keeps the smallest median >= 1."""
        medians = [r.median_s for r in self.results if r.median_s]
        smallest = min(medians, default=1.0)
        return next(((n, s) for n, s in _UNITS if smallest >= s), _UNITS[-1])

    def as_dicts(self) -> list[dict[str, Any]]:
        """Plain dicts (group fields flattened), for ``--json`` and CSV."""
        return flat_records(self.results)

    def table(self, *, warnings: bool = True) -> Table:
        """The comparison as a :class:`~gnnbench.results.tables.Table`: one formatted row per result, footnotes."""
        unit, scale = self.unit
        header = ["", *self.group_by, "system", "verified", f"epoch time ({unit})", "procs", "speedup",
                  f"{self.confidence:.0%} CI", f"peak mem vs {self.baseline}", f"test acc vs {REFERENCE}"]
        rows = []
        for r in self.results:
            if r.status != "ok":
                time = r.status
            elif r.timing == "simulated":
                time = "simulated"
            elif r.median_s is None:
                time = "n/a"
            else:
                time = fmt_number(r.median_s / scale) + r.noise_mark
                time += " (modeled)" if r.timing == "modeled" else ""
            if r.speedup is not None:
                speedup = f"{r.speedup:.2f}x"
            else:  # a failed run's status already shows in the time cell
                speedup = r.note if r.note and r.status == "ok" else "n/a"
            rows.append([r.mark, *r.group.values(), r.system, r.verified, time, r.processes or "", speedup,
                         r.interval,
                         f"{r.memory_ratio:.2f}x" if r.memory_ratio is not None else "n/a",
                         f"{r.accuracy_diff * 100:+.2f} pp" if r.accuracy_diff is not None else "n/a"])
        spmm_header, spmm_cells, spmm_numeric, spmm_notes = spmm_columns(self.results)
        rows = [row + cells for row, cells in zip(rows, spmm_cells)]
        notes = _footer(self) + spmm_notes + ([f"Warning: {w}" for w in self.warnings] if warnings else [])
        numeric = [False] * (len(self.group_by) + 3) + [True] * 6 + spmm_numeric
        return Table(header + spmm_header, rows, numeric, notes=notes)

    def render(self, format: str = "text", *, warnings: bool = True) -> str:
        """The table as ``text`` (aligned), ``markdown``, ``csv`` or ``html``.

        CSV holds the raw numbers of :meth:`as_dicts` (seconds, ratios), one
        column per :class:`SystemResult` field, and never the warnings.

        Args:
            format (str): one of text, markdown, csv, html (default: text).
            warnings (bool): append :attr:`warnings` after the footer (default: True).
        """
        if format == "csv":
            from gnnbench.results.tables import records_csv

            columns = [*self.group_by, *(f for f in SystemResult.__dataclass_fields__ if f != "group")]
            return records_csv(self.as_dicts(), columns)
        if format not in FORMATS:
            from gnnbench.errors import UserError

            raise UserError(f"unknown comparison format {format!r}; choose one of {list(FORMATS)}")
        return self.table(warnings=warnings).render(format)


def compare(data: Any, baseline: str = REFERENCE,
            group_by: Sequence[str] = ("dataset", "model", "framework"), include_unverified: bool = False,
            *, factor: float = FACTOR, resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
            seed: int = SEED) -> Comparison:
    """Pivots stored runs into a :class:`Comparison` against ``baseline``.

    Per group of ``group_by`` and system, every stored run of its latest build
    is pooled, one process each (Note [configurations]). Training epochs and
    inference passes are never compared: when the data holds an inference run,
    ``mode`` joins the group fields. The figure is the median of per-process
    median epoch times; the speedup is ``baseline figure / system figure`` with
    a seeded two-level bootstrap interval (Note [between-process statistics]).
    Speedups are claimed only for verified systems (Note [claims need
    verification]) whose run is comparable with the baseline's (Note
    [comparable runs]) and whose figures are both stable; marks follow
    Note [marks].

    Args:
        data: the results frame (:func:`gnnbench.load_results`), or runs as
            returned by ``ResultsStore.rows()``.
        baseline (str): the system speedups are measured against (default: reference).
        group_by (sequence of str): fields that define a group
            (default: dataset, model, framework).
        include_unverified (bool): also claim speedups of unverified or failed-
            verification systems (default: False).
        factor (float): speedup beyond which a change is marked (default: :data:`~gnnbench.core.statistics.FACTOR`).
        resamples, confidence, seed: bootstrap settings (default: ``RESAMPLES``, ``CONFIDENCE``, ``SEED`` of
            :mod:`gnnbench.core.statistics`).
    """
    import pandas as pd

    from gnnbench.results.frame import frame_from_rows

    frame = data if isinstance(data, pd.DataFrame) else frame_from_rows(data)
    group_by = tuple(group_by)
    if "mode" in frame.columns and "mode" not in group_by and set(frame["mode"].dropna()) - {"train"}:
        group_by = (*group_by, "mode")
    configs, pooled_warnings = configurations(frame, group_by)
    grouped: dict[tuple, dict[str, Configuration]] = {}
    for config in configs:
        grouped.setdefault(config.group, {})[config.system] = config
    settings = _Settings(baseline, include_unverified, factor, resamples, confidence, seed)
    results = []
    for key in sorted(grouped, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        systems = grouped[key]
        for name in sorted(systems, key=lambda s: (s != baseline, s)):
            results.append(_result(dict(zip(group_by, key)), name, systems, settings))
    used = [row for c in configs for row in c.rows]
    return Comparison(results, baseline, group_by, include_unverified, factor, resamples, confidence,
                      _warnings(used) + pooled_warnings)


def compare_profiles(data: Any, baseline: str = REFERENCE,
                     group_by: Sequence[str] = ("dataset", "model", "framework", "mode")) -> list[Table]:
    """Where each system's epoch goes, side by side: per group of ``group_by``, the latest run of each system made
    with ``--profile`` (Note [profiled epochs] in gnnbench/run/profile.py), phase by phase, its total and then
    its costliest operators, rank by rank, ``*`` marking a system's own kernels.

    Args:
        data: the results frame (:func:`gnnbench.load_results`), or runs as returned by ``ResultsStore.rows()``.
        baseline (str): the system shown first when present (default: reference); the others follow by name.

    Returns:
        one :class:`~gnnbench.results.tables.Table` per group with a profiled run, in the groups' order.
    """
    import pandas as pd

    from gnnbench.results.frame import frame_from_rows

    frame = data if isinstance(data, pd.DataFrame) else frame_from_rows(data)
    latest: dict[tuple, dict[str, tuple[Mapping[str, Any], Profile]]] = {}
    for row in frame.sort_values("id").to_dict("records"):
        profile = Extra.of(row).profile
        if _ok(row) and isinstance(profile, Profile):
            key = tuple(None if pd.isna(row.get(f)) else row.get(f) for f in group_by)
            latest.setdefault(key, {})[row["system"]] = (row, profile)
    return [_profile_table(dict(zip(group_by, key)), latest[key], baseline)
            for key in sorted(latest, key=lambda k: tuple("" if v is None else str(v) for v in k))]


def _profile_table(group: dict[str, Any], runs: dict[str, tuple[Mapping[str, Any], Profile]], baseline: str) -> Table:
    systems = sorted(runs, key=lambda s: (s != baseline, s))
    profiles = [runs[s][1] for s in systems]
    phases = list(dict.fromkeys(phase for p in profiles for phase in p.phases))
    ms = lambda seconds: f"{seconds * 1e3:.2f}"  # noqa: E731
    rows: list[list[Any]] = []
    for phase in phases:
        rows.append([phase, "all", *(cell for p in profiles for cell in
                                     (None, ms(p.totals[phase]) if phase in p.totals else None))])
        ranks = max(len(p.phases.get(phase, [])) for p in profiles)
        for rank in range(ranks):
            cells: list[Any] = []
            for p in profiles:
                ops = p.phases.get(phase, [])
                op = ops[rank] if rank < len(ops) else None
                cells += [None, None] if op is None else [("* " if op.kernel else "") + op.name, ms(op.self_s)]
            rows.append([None, str(rank + 1), *cells])
    header = ["phase", "#", *(cell for s in systems for cell in (s, "ms"))]
    where = " ".join(str(v) for v in (group.get("model"), "on", group.get("dataset"), group.get("framework"),
                                      group.get("mode")) if v is not None)
    runs_named = ", ".join(f"{s} run {runs[s][0].get('id')}" for s in systems)
    epochs = " or ".join(str(e) for e in sorted({p.epochs for p in profiles}))
    note = (f"{where}: self CPU milliseconds per profiled epoch ({epochs} extra epochs after the timed ones, Note "
            f"[profiled epochs]) of the latest profiled run of each system ({runs_named}); * a system's own kernels.")
    return Table(header, rows, numeric=[False, True, *([False, True] * len(systems))],
                 title=f"{where}: where an epoch goes", notes=[note])


@dataclass(frozen=True)
class _Settings:
    baseline: str
    include_unverified: bool
    factor: float
    resamples: int
    confidence: float
    seed: int


def _ok(row: Mapping[str, Any] | None) -> bool:
    return row is not None and (row.get("status") or "ok") == "ok"


def _difference(row: Mapping[str, Any], base: Mapping[str, Any]) -> str | None:
    """What makes ``row`` not comparable with ``base`` (Note [comparable runs]), or None."""
    for name in COMPARABLE_FIELDS:
        mine, theirs = row.get(name), base.get(name)
        if mine is not None and theirs is not None and mine != theirs:
            return f"not comparable: {name} {mine} vs {theirs}"
    return None


def processes_of(rows: Sequence[Mapping[str, Any]]) -> Processes:
    """The pooled runs' times as :class:`~gnnbench.core.statistics.Processes` (a modeled run's one figure)."""
    return Processes.from_rows(rows, _measurement)


def _figures(ps: Processes, confidence: float) -> dict[str, Any]:
    """The :class:`SystemResult` fields that describe one configuration's figure."""
    if not len(ps):
        return dict(processes=0)
    spread = ps.between_spread
    return dict(median_s=ps.median, iqr_s=ps.iqr, samples=ps.samples, processes=len(ps), noisy=ps.noisy,
                noise=ps.within_spread, spread=None if spread != spread else spread,
                unstable=ps.note(confidence))


def _others(row: Mapping[str, Any], base: Configuration | None, ref: Configuration | None) -> dict[str, Any]:
    """Memory against the baseline's and accuracy against reference's, from the latest pooled runs."""
    out: dict[str, Any] = {}
    base_row = base.latest if base and _ok(base.latest) else {}
    if row.get("peak_memory_bytes") is not None and base_row.get("peak_memory_bytes"):
        out["memory_ratio"] = row["peak_memory_bytes"] / base_row["peak_memory_bytes"]
    ref_row = ref.latest if ref and _ok(ref.latest) else {}
    if row.get("test_accuracy") is not None and ref_row.get("test_accuracy") is not None:
        out["accuracy_diff"] = row["test_accuracy"] - ref_row["test_accuracy"]
    return out


def _result(group: dict[str, Any], name: str, systems: Mapping[str, Configuration],
            s: _Settings) -> SystemResult:
    config = systems[name]
    row = config.latest
    common = dict(group=group, system=name, status=row.get("status") or "ok",
                  verified=row.get("verified") or "unverified", run_id=row.get("id"), error=row.get("error"))
    if common["status"] != "ok":
        return SystemResult(**common, mark="!", note=common["status"])
    timing = row.get("timing") or "measured"
    common["timing"] = timing
    if timing == "simulated":  # Note [modeled rows]: a simulation's wall time is no epoch
        return SystemResult(**common, mark="m", note="simulated: no time to compare")
    mine = processes_of(config.rows)
    base_config = systems.get(s.baseline)
    out: dict[str, Any] = dict(**_figures(mine, s.confidence), **_spmm(row),
                               **_others(row, base_config, systems.get(REFERENCE)))
    if name == s.baseline:
        return SystemResult(**common, **out, note="baseline")
    lent = ((row.get("extra") or {}).get("fallback") or {})
    if lent.get("operators"):  # Note [marks]: the lender's time is in the epoch; claim nothing for the system
        share = lent.get("kernel_share")
        note = f"with fallback {lent['system']}" + (f" ({share:.0%} of kernel time)" if share is not None else "")
        return SystemResult(**common, **out, mark="f", note=note, fallback=lent["system"])
    if common["verified"] != "passed" and not s.include_unverified:
        note = "unverified" if common["verified"] == "unverified" else "verify failed"
        return SystemResult(**common, **out, note=note)
    base = processes_of(base_config.rows) if base_config and _ok(base_config.latest) else Processes(())
    if not len(base) or not len(mine):
        return SystemResult(**common, **out, note="no time" if len(base) else "no baseline")
    difference = _difference(row, base_config.latest)
    if difference:
        return SystemResult(**common, **out, mark="x", note=difference)
    ratio, low, high = speedup(base, mine, resamples=s.resamples, confidence=s.confidence, seed=s.seed)
    base_note = base.note(s.confidence)
    withheld = out.get("unstable") or (f"baseline {base_note}" if base_note else None)
    significant = None if low is None or withheld else bool(low > 1 or high < 1)
    beyond = ratio >= s.factor or ratio <= 1 / s.factor
    mark = ("-" if ratio > 1 else "+") if beyond and significant else ("~" if beyond else "")
    out.update(speedup=ratio, ci_low=low, ci_high=high, significant=significant, withheld=withheld)
    if timing == "modeled" or (base_config.latest.get("timing") or "measured") == "modeled":
        return SystemResult(**{**common, **out, "withheld": None, "significant": None}, mark="m", note="modeled")
    return SystemResult(**common, **out, mark=mark)


def _spmm(row: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`SystemResult` fields of the run's costliest SpMM-type kernel (Note [spmm columns])."""
    figures = (Extra.from_dict(row.get("extra")) or Extra()).spmm_figures
    top = figures.top() if isinstance(figures, SpmmFigures) else None
    if top is None or top[1].GBps is None:
        return {}
    name, k = top
    return dict(spmm_kernel=name, spmm_GBps=k.GBps, spmm_GFLOPs=k.GFLOPs, spmm_of_stream=k.of_stream,
                spmm_of_gather=k.of_gather)


def spmm_columns(results: Sequence[SystemResult]) -> tuple[list[str], list[list[str]], list[bool], list[str]]:
    """``(header, cells per result, numeric flags, footnotes)`` of the SpMM columns, all empty when no result
    has figures (Note [spmm columns])."""
    if not any(r.spmm_GBps is not None for r in results):
        return [], [[] for _ in results], [], []
    share = lambda v: f"{v:.0%}" if v is not None else "n/a"  # noqa: E731
    cells = [[r.spmm_kernel, fmt_number(r.spmm_GBps), fmt_number(r.spmm_GFLOPs), share(r.spmm_of_stream),
              share(r.spmm_of_gather)] if r.spmm_GBps is not None else ["", "", "", "", ""] for r in results]
    note = ("SpMM: the run's costliest SpMM-type kernel, its GB/s (bytes it moved at least over its median "
            "time per epoch), GFLOP/s (E F / t) and their share of the STREAM triad and random-gather bounds of "
            "the machine it ran on; n/a where no bounds were cached (`gnnbench bounds`). See Note [spmm figures] "
            "in gnnbench/run/bounds.py.")
    return (["SpMM kernel", "GB/s", "GFLOP/s", "of STREAM", "of gather"], cells, [False, True, True, True, True],
            [note])


def _measurement(row: Mapping[str, Any]) -> Measurement:
    """The run's times: its samples, or its one modeled figure (Note [modeled rows]); empty when simulated."""
    timing = row.get("timing") or "measured"
    if timing == "modeled":
        return Measurement((float(row["modeled_time_s"]),), "modeled pass")
    return Measurement(()) if timing == "simulated" else Measurement.from_row(row)


def _distinct(rows: Iterable[Mapping[str, Any]], name: str) -> dict[Any, int]:
    counts: dict[Any, int] = {}
    for row in rows:
        if row.get(name) is not None:
            counts[row[name]] = counts.get(row[name], 0) + 1
    return counts


def _listing(counts: Mapping[Any, int]) -> str:
    return ", ".join(f"{v!r} ({n} run{'s' * (n != 1)})" for v, n in sorted(counts.items(), key=str))


def _warnings(rows: list[Mapping[str, Any]]) -> list[str]:
    """Why the compared rows may not be comparable with each other."""
    out = []
    for name, what in (("cpu_model", "CPUs"), ("device", "devices"), ("threads", "thread counts"),
                       ("allocator", "memory allocators"),
                       ("git_commit", "gnnbench commits")):
        counts = _distinct(rows, name)
        if len(counts) > 1:
            out.append(f"compared runs used different {what}: {_listing(counts)}")
    for key, name, what in (("framework", "framework_version", "versions"),
                            ("system", "system_hash", "builds (system_hash)")):
        for value in sorted(_distinct(rows, key), key=str):
            counts = _distinct([r for r in rows if r.get(key) == value], name)
            if len(counts) > 1:
                out.append(f"{key} {value!r} appears with different {what}: {_listing(counts)}")
    return out


def stability_footnote(confidence: float = CONFIDENCE) -> str:
    """One sentence naming every reason a figure is unstable, with its limit (Note [stability thresholds])."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return (f"Unstable (no - or + mark; the CI cell says why): 1 process, or fewer than {MIN_PROCESSES} or than "
            f"({z:.2f} x spread / {PRECISION:.0%})^2; within-process IQR/median > {SPREAD_LIMIT:.0%}; spread "
            f"(stdev/mean of process medians) > {SPREAD_LIMIT:.0%}; a process median >= {OUTLIER_LIMIT:.0%} from "
            f"the median; other processes took > {OTHER_CPU_LIMIT:.0%} of the CPUs.")


def _footer(c: Comparison) -> list[str]:
    unit = c.unit[0]
    gate = ("including unverified systems" if c.include_unverified
            else "only for systems whose verification passed")
    return [
        f"Epoch time: median in {unit} of the per-process median epoch times over every stored run (process) of "
        f"the configuration, procs of them; (! XX%) marks a median within-process IQR/median > {NOISE_THRESHOLD:.0%}.",
        f"Speedup: {c.baseline} figure / system figure (above 1 is faster), claimed {gate}; "
        f"{c.confidence:.0%} CI by a two-level bootstrap, processes then their epochs ({c.resamples} resamples); "
        f"none with 1 process.",
        f"Marks: - faster, + slower (beyond {c.factor:g}x, CI excludes 1, both figures stable), "
        f"~ beyond {c.factor:g}x but not significant or unstable, ! run did not succeed, "
        f"x not comparable: one of {', '.join(COMPARABLE_FIELDS)} differs from {c.baseline}'s run.",
        stability_footnote(c.confidence),
        f"Peak memory: system / {c.baseline}. Test accuracy: system - {REFERENCE}, in percentage points.",
    ] + (["f: the run borrowed operators from a fallback system, whose kernel time is in its epoch; "
          "no speedup is credited to the system."] if any(r.mark == "f" for r in c.results) else []) + (
        ["m: a modeled time (host share measured, aggregation modeled), one figure with no confidence interval; "
         "'simulated': the run's times are a simulation's wall time, never shown as an epoch."]
        if any(r.mark == "m" for r in c.results) else [])
