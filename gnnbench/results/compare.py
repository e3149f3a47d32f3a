"""Comparison of stored runs: every system against a baseline, group by group.

:func:`compare` pivots the results frame (:func:`gnnbench.load_results`, or rows
of the results store) into a :class:`Comparison`: per group (by default
dataset x model x framework) and system, the median epoch time, the speedup over
the baseline with a bootstrap confidence interval (``scipy.stats.bootstrap``),
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
    beyond ``factor`` (either way) and its confidence interval excludes 1
    (significant); ``~`` when beyond ``factor`` but not significant; ``!`` a run
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
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gnnbench.core.oracle import REFERENCE
from gnnbench.core.measurement import NOISE_THRESHOLD, Measurement
from gnnbench.results.row import COMPARABLE_FIELDS, Extra, SpmmFigures
from gnnbench.results.tables import FORMATS, Table, fmt_number

__all__ = ["compare", "bootstrap_speedup", "Comparison", "SystemResult", "REFERENCE", "COMPARABLE_FIELDS",
           "latest_runs", "spmm_columns"]

MIN_SAMPLES = 3  # below this a bootstrap interval is degenerate; no significance is claimed
_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6))


#: compare's defaults, stated once: the factor beyond which a speedup is marked, the bootstrap's resamples
#: and confidence level, its seed (Note [marks])
FACTOR, RESAMPLES, CONFIDENCE, SEED = 1.1, 2000, 0.95, 0


def bootstrap_speedup(baseline: Sequence[float], samples: Sequence[float], *, resamples: int = RESAMPLES,
                      confidence: float = CONFIDENCE, seed: int = SEED) -> tuple[float, float, float]:
    """Speedup ``median(baseline) / median(samples)`` and its percentile bootstrap CI.

    ``scipy.stats.bootstrap`` resamples the two samples independently (unpaired)
    ``resamples`` times and takes the ratio of their medians; the interval is the
    percentile interval of those ratios at ``confidence``. The generator is
    ``numpy.random.default_rng(seed)``, so the result is deterministic.

    Args:
        baseline (sequence of float): per-epoch times of the baseline.
        samples (sequence of float): per-epoch times of the system.
        resamples (int): bootstrap resamples (default: 2000).
        confidence (float): interval coverage (default: 0.95).
        seed (int): seed of the resampling generator (default: 0).

    Returns:
        ``(speedup, low, high)``; above 1 means the system is faster.
    """
    from scipy.stats import bootstrap

    base, own = np.asarray(baseline, dtype=float), np.asarray(samples, dtype=float)
    if base.size == 0 or own.size == 0:
        raise ValueError(f"bootstrap needs samples on both sides (got {base.size} and {own.size})")

    def ratio(b: np.ndarray, o: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(b, axis=axis) / np.median(o, axis=axis)

    res = bootstrap((base, own), ratio, n_resamples=resamples, confidence_level=confidence,
                    method="percentile", vectorized=True, paired=False, rng=np.random.default_rng(seed))
    return float(ratio(base, own)), float(res.confidence_interval.low), float(res.confidence_interval.high)


def latest_runs(data: Any, group_by: Sequence[str] = ("dataset", "model", "framework")) -> list[dict[str, Any]]:
    """The latest run (by timestamp, then id) of each group and system, as plain dicts.

    Args:
        data: a results frame (:func:`gnnbench.load_results`) or an iterable of
            run dicts (``ResultsStore.rows()``).
    """
    import pandas as pd

    from gnnbench.results.frame import frame_from_rows, frame_records

    frame = data if isinstance(data, pd.DataFrame) else frame_from_rows(data)
    if frame.empty:
        return []
    ordered = frame.assign(_order=range(len(frame))).sort_values(
        ["timestamp", "id", "_order"], na_position="first", kind="stable")
    latest = ordered.drop_duplicates([*group_by, "system"], keep="last").drop(columns="_order")
    return frame_records(latest)


@dataclass(frozen=True)
class SystemResult:
    """One system in one group of a :class:`Comparison`.

    Attributes:
        group: the ``group_by`` fields and their values.
        median_s, iqr_s: epoch time statistics in seconds, from the run's
            :class:`~gnnbench.core.measurement.Measurement` (``samples`` counts them).
        noisy: IQR / median passes the noise threshold.
        speedup, ci_low, ci_high: baseline median / this median and its CI;
            ``None`` when no claim is made (``note`` says why).
        significant: the CI excludes 1 (``None`` with too few samples).
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
    noisy: bool = False
    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    significant: bool | None = None
    mark: str = ""
    note: str | None = None
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
    def noise(self) -> float | None:
        """IQR / median, or ``None``."""
        return self.iqr_s / self.median_s if self.iqr_s is not None and self.median_s else None


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
    def unit(self) -> tuple[str, float]:
        """The table's time unit: the largest of s, ms, us that keeps the smallest median >= 1."""
        medians = [r.median_s for r in self.results if r.median_s]
        smallest = min(medians, default=1.0)
        return next(((n, s) for n, s in _UNITS if smallest >= s), _UNITS[-1])

    def as_dicts(self) -> list[dict[str, Any]]:
        """Plain dicts (group fields flattened), for ``--json`` and CSV."""
        out = []
        for r in self.results:
            d = asdict(r)
            d.update(d.pop("group"))
            out.append(d)
        return out

    def table(self, *, warnings: bool = True) -> Table:
        """The comparison as a :class:`~gnnbench.results.tables.Table`: one formatted row per result, footnotes."""
        unit, scale = self.unit
        header = ["", *self.group_by, "system", "verified", f"epoch time ({unit})", "speedup",
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
                time = fmt_number(r.median_s / scale) + (f" (! {r.noise:.0%})" if r.noisy else "")
                time += " (modeled)" if r.timing == "modeled" else ""
            if r.speedup is not None:
                speedup = f"{r.speedup:.2f}x"
            else:  # a failed run's status already shows in the time cell
                speedup = r.note if r.note and r.status == "ok" else "n/a"
            rows.append([r.mark, *r.group.values(), r.system, r.verified, time, speedup,
                         f"[{r.ci_low:.2f}, {r.ci_high:.2f}]" if r.ci_low is not None else "",
                         f"{r.memory_ratio:.2f}x" if r.memory_ratio is not None else "n/a",
                         f"{r.accuracy_diff * 100:+.2f} pp" if r.accuracy_diff is not None else "n/a"])
        spmm_header, spmm_cells, spmm_numeric, spmm_notes = spmm_columns(self.results)
        rows = [row + cells for row, cells in zip(rows, spmm_cells)]
        notes = _footer(self) + spmm_notes + ([f"Warning: {w}" for w in self.warnings] if warnings else [])
        numeric = [False] * (len(self.group_by) + 3) + [True] * 5 + spmm_numeric
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
            import pandas as pd

            columns = [*self.group_by, *(f for f in SystemResult.__dataclass_fields__ if f != "group")]
            return pd.DataFrame(self.as_dicts(), columns=columns).to_csv(index=False, lineterminator="\n")
        if format not in FORMATS:
            from gnnbench.errors import UserError

            raise UserError(f"unknown comparison format {format!r}; choose one of {list(FORMATS)}")
        return self.table(warnings=warnings).render(format)


def compare(data: Any, baseline: str = REFERENCE,
            group_by: Sequence[str] = ("dataset", "model", "framework"), include_unverified: bool = False,
            *, factor: float = FACTOR, resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
            seed: int = SEED) -> Comparison:
    """Pivots stored runs into a :class:`Comparison` against ``baseline``.

    Per group of ``group_by`` and system, the latest run (by timestamp, then id)
    is used (:func:`latest_runs`). Training epochs and inference passes are
    never compared: when the data holds an inference run, ``mode`` joins the
    group fields. Its median epoch time comes from its raw
    ``epoch_times`` (:class:`~gnnbench.core.measurement.Measurement`); the speedup is
    ``baseline median / system median`` with a percentile bootstrap CI of that
    ratio of medians (:func:`bootstrap_speedup`, seeded). Speedups are claimed
    only for verified systems (Note [claims need verification]) whose run is
    comparable with the baseline's (Note [comparable runs]); marks follow
    Note [marks].

    Args:
        data: the results frame (:func:`gnnbench.load_results`), or runs as
            returned by ``ResultsStore.rows()``.
        baseline (str): the system speedups are measured against (default: reference).
        group_by (sequence of str): fields that define a group
            (default: dataset, model, framework).
        include_unverified (bool): also claim speedups of unverified or failed-
            verification systems (default: False).
        factor (float): speedup beyond which a change is marked (default: 1.1).
        resamples, confidence, seed: bootstrap settings (default: 2000, 0.95, 0).
    """
    import pandas as pd

    from gnnbench.results.frame import frame_from_rows

    frame = data if isinstance(data, pd.DataFrame) else frame_from_rows(data)
    group_by = tuple(group_by)
    if "mode" in frame.columns and "mode" not in group_by and set(frame["mode"].dropna()) - {"train"}:
        group_by = (*group_by, "mode")
    latest: dict[tuple, dict[str, Mapping[str, Any]]] = {}
    for row in latest_runs(frame, group_by):
        latest.setdefault(tuple(row.get(g) for g in group_by), {})[row.get("system") or "?"] = row
    results = []
    for key in sorted(latest, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        systems = latest[key]
        for name in sorted(systems, key=lambda s: (s != baseline, s)):
            results.append(_result(dict(zip(group_by, key)), name, systems, baseline, include_unverified,
                                   factor, resamples, confidence, seed))
    used = [row for systems in latest.values() for row in systems.values()]
    return Comparison(results, baseline, group_by, include_unverified, factor, resamples, confidence,
                      _warnings(used))


def _ok(row: Mapping[str, Any] | None) -> bool:
    return row is not None and (row.get("status") or "ok") == "ok"


def _difference(row: Mapping[str, Any], base: Mapping[str, Any]) -> str | None:
    """What makes ``row`` not comparable with ``base`` (Note [comparable runs]), or None."""
    for name in COMPARABLE_FIELDS:
        mine, theirs = row.get(name), base.get(name)
        if mine is not None and theirs is not None and mine != theirs:
            return f"not comparable: {name} {mine} vs {theirs}"
    return None


def _result(group: dict[str, Any], name: str, systems: Mapping[str, Mapping[str, Any]], baseline: str,
            include_unverified: bool, factor: float, resamples: int, confidence: float,
            seed: int) -> SystemResult:
    row = systems[name]
    common = dict(group=group, system=name, status=row.get("status") or "ok",
                  verified=row.get("verified") or "unverified", run_id=row.get("id"), error=row.get("error"))
    if common["status"] != "ok":
        return SystemResult(**common, mark="!", note=common["status"])
    timing = row.get("timing") or "measured"
    common["timing"] = timing
    if timing == "simulated":  # Note [modeled rows]: a simulation's wall time is no epoch
        return SystemResult(**common, mark="m", note="simulated: no time to compare")
    m = _measurement(row)
    out: dict[str, Any] = dict(median_s=None if m.empty else m.median, iqr_s=None if m.empty else m.iqr,
                               samples=len(m), noisy=m.noisy, **_spmm(row))
    base = systems.get(baseline)
    if _ok(base) and row.get("peak_memory_bytes") is not None and base.get("peak_memory_bytes"):
        out["memory_ratio"] = row["peak_memory_bytes"] / base["peak_memory_bytes"]
    ref = systems.get(REFERENCE)
    if _ok(ref) and row.get("test_accuracy") is not None and ref.get("test_accuracy") is not None:
        out["accuracy_diff"] = row["test_accuracy"] - ref["test_accuracy"]
    if name == baseline:
        return SystemResult(**common, **out, note="baseline")
    lent = ((row.get("extra") or {}).get("fallback") or {})
    if lent.get("operators"):  # Note [marks]: the lender's time is in the epoch; claim nothing for the system
        share = lent.get("kernel_share")
        note = f"with fallback {lent['system']}" + (f" ({share:.0%} of kernel time)" if share is not None else "")
        return SystemResult(**common, **out, mark="f", note=note, fallback=lent["system"])
    if common["verified"] != "passed" and not include_unverified:
        note = "unverified" if common["verified"] == "unverified" else "verify failed"
        return SystemResult(**common, **out, note=note)
    b = _measurement(base) if _ok(base) else None
    if b is None or b.empty or m.empty:
        return SystemResult(**common, **out, note="no baseline" if b is None or b.empty else "no time")
    difference = _difference(row, base)
    if difference:
        return SystemResult(**common, **out, mark="x", note=difference)
    if len(m) >= MIN_SAMPLES and len(b) >= MIN_SAMPLES:
        speedup, low, high = bootstrap_speedup(b.samples, m.samples, resamples=resamples,
                                               confidence=confidence, seed=seed)
        significant = bool(low > 1 or high < 1)
        out.update(ci_low=low, ci_high=high, significant=significant)
    else:
        speedup, significant = b.median / m.median, False
    beyond = speedup >= factor or speedup <= 1 / factor
    mark = ("-" if speedup > 1 else "+") if beyond and significant else ("~" if beyond else "")
    if timing == "modeled" or (base.get("timing") or "measured") == "modeled":
        return SystemResult(**common, **out, speedup=speedup, mark="m", note="modeled")
    return SystemResult(**common, **out, speedup=speedup, mark=mark)


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


def _footer(c: Comparison) -> list[str]:
    unit = c.unit[0]
    gate = ("including unverified systems" if c.include_unverified
            else "only for systems whose verification passed")
    return [
        f"Epoch time: median in {unit} over the timed epochs; (! XX%) marks IQR/median > {NOISE_THRESHOLD:.0%}.",
        f"Speedup: {c.baseline} median / system median (above 1 is faster), claimed {gate}; "
        f"{c.confidence:.0%} CI by bootstrap of the ratio of medians ({c.resamples} resamples).",
        f"Marks: - faster, + slower (beyond {c.factor:g}x and CI excludes 1), "
        f"~ beyond {c.factor:g}x but not significant, ! run did not succeed, "
        f"x not comparable: one of {', '.join(COMPARABLE_FIELDS)} differs from {c.baseline}'s run.",
        f"Peak memory: system / {c.baseline}. Test accuracy: system - {REFERENCE}, in percentage points.",
    ] + (["f: the run borrowed operators from a fallback system, whose kernel time is in its epoch; "
          "no speedup is credited to the system."] if any(r.mark == "f" for r in c.results) else []) + (
        ["m: a modeled time (host share measured, aggregation modeled), one figure with no confidence interval; "
         "'simulated': the run's times are a simulation's wall time, never shown as an epoch."]
        if any(r.mark == "m" for r in c.results) else [])
