"""Comparison of stored runs: every system against a baseline, group by group.

:func:`compare` pivots rows of the results store (:mod:`gnnbench.store`) into a
:class:`Comparison`: per group (by default dataset x model x framework) and
system, the median epoch time, the speedup over the baseline with a bootstrap
confidence interval, the peak-memory ratio and the accuracy difference against
``reference``. It returns objects and never prints; :meth:`Comparison.render`
turns one into text, markdown, CSV or HTML.

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
    system (Note [fallback accounting] in :mod:`gnnbench.fallback`): its epoch
    holds the lender's kernel time, so no speedup is credited to the system. A time cell gets ``(! XX%)`` when IQR/median > 10%
    (torch ``Measurement``), a sign the machine was noisy.
"""
from __future__ import annotations

import csv
import html
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gnnbench.errors import UserError

__all__ = ["compare", "bootstrap_speedup", "Comparison", "SystemResult", "REFERENCE", "IQR_WARN"]

REFERENCE = "reference"
IQR_WARN = 0.10
MIN_SAMPLES = 3  # below this a bootstrap interval is degenerate; no significance is claimed
_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6))
_FORMATS = ("text", "markdown", "csv", "html")


def bootstrap_speedup(baseline: Sequence[float], samples: Sequence[float], *, resamples: int = 2000,
                      confidence: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """Speedup ``median(baseline) / median(samples)`` and its percentile bootstrap CI.

    Each resample draws ``len(baseline)`` baseline times and ``len(samples)``
    system times with replacement, independently, and takes the ratio of their
    medians; the interval is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
    quantiles of the ``resamples`` ratios. All resamples are drawn at once as a
    ``[resamples, n]`` index matrix from ``numpy.random.default_rng(seed)``, so
    the result is deterministic.

    Args:
        baseline (sequence of float): per-epoch times of the baseline.
        samples (sequence of float): per-epoch times of the system.
        resamples (int): bootstrap resamples (default: 2000).
        confidence (float): interval coverage (default: 0.95).
        seed (int): seed of the resampling generator (default: 0).

    Returns:
        ``(speedup, low, high)``; above 1 means the system is faster.
    """
    base, own = np.asarray(baseline, dtype=float), np.asarray(samples, dtype=float)
    if base.size == 0 or own.size == 0:
        raise ValueError(f"bootstrap needs samples on both sides (got {base.size} and {own.size})")
    rng = np.random.default_rng(seed)
    base_med = np.median(base[rng.integers(0, base.size, (resamples, base.size))], axis=1)
    own_med = np.median(own[rng.integers(0, own.size, (resamples, own.size))], axis=1)
    low, high = np.quantile(base_med / own_med, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(np.median(base) / np.median(own)), float(low), float(high)


@dataclass(frozen=True)
class SystemResult:
    """One system in one group of a :class:`Comparison`.

    Attributes:
        group: the ``group_by`` fields and their values.
        median_s, iqr_s: epoch time statistics in seconds, recomputed from the
            raw ``epoch_times`` when present (``samples`` counts them).
        speedup, ci_low, ci_high: baseline median / this median and its CI;
            ``None`` when no claim is made (``note`` says why).
        significant: the CI excludes 1 (``None`` with too few samples).
        mark: ``-``, ``+``, ``~``, ``!``, ``f`` or ``''`` (Note [marks]).
        fallback: the system that lent operators to this run, or ``None``.
        memory_ratio: peak memory / the baseline's.
        accuracy_diff: test accuracy minus ``reference``'s, as a fraction.
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
    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    significant: bool | None = None
    mark: str = ""
    note: str | None = None
    memory_ratio: float | None = None
    accuracy_diff: float | None = None
    fallback: str | None = None

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
    factor: float = 1.1
    resamples: int = 2000
    confidence: float = 0.95
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
        """Plain dicts (group fields flattened), for ``--json``."""
        out = []
        for r in self.results:
            d = asdict(r)
            d.update(d.pop("group"))
            out.append(d)
        return out

    def render(self, format: str = "text", *, warnings: bool = True) -> str:
        """The table as ``text`` (aligned), ``markdown``, ``csv`` or ``html``.

        Args:
            format (str): one of text, markdown, csv, html (default: text).
            warnings (bool): append :attr:`warnings` after the footer; CSV never
                carries them (default: True).
        """
        if format not in _FORMATS:
            raise UserError(f"unknown comparison format {format!r}; choose one of {list(_FORMATS)}")
        if format == "csv":
            return _render_csv(self)
        table = _Table.build(self)
        notes = _footer(self) + ([f"Warning: {w}" for w in self.warnings] if warnings else [])
        return {"text": table.text, "markdown": table.markdown, "html": table.html}[format](notes)


def compare(rows: Iterable[Mapping[str, Any]], baseline: str = REFERENCE,
            group_by: Sequence[str] = ("dataset", "model", "framework"), include_unverified: bool = False,
            *, factor: float = 1.1, resamples: int = 2000, confidence: float = 0.95,
            seed: int = 0) -> Comparison:
    """Pivots stored runs into a :class:`Comparison` against ``baseline``.

    Per group of ``group_by`` and system, the latest run (by timestamp, then id)
    is used. Its median epoch time is recomputed from the raw ``epoch_times``;
    the speedup is ``baseline median / system median`` with a percentile
    bootstrap CI of that ratio of medians (:func:`bootstrap_speedup`, seeded,
    ``resamples`` resamples of the per-epoch samples). Speedups are claimed only
    for verified systems (Note [claims need verification]); marks follow
    Note [marks].

    Args:
        rows (iterable of dict): runs as returned by ``ResultsStore.rows()``.
        baseline (str): the system speedups are measured against (default: reference).
        group_by (sequence of str): fields that define a group
            (default: dataset, model, framework).
        include_unverified (bool): also claim speedups of unverified or failed-
            verification systems (default: False).
        factor (float): speedup beyond which a change is marked (default: 1.1).
        resamples, confidence, seed: bootstrap settings (default: 2000, 0.95, 0).
    """
    group_by = tuple(group_by)
    latest: dict[tuple, dict[str, Mapping[str, Any]]] = {}
    order = sorted(enumerate(rows), key=lambda p: (p[1].get("timestamp") or "", p[1].get("id") or 0, p[0]))
    for _, row in order:
        key = tuple(row.get(g) for g in group_by)
        latest.setdefault(key, {})[row.get("system") or "?"] = row  # later rows replace earlier ones
    results = []
    for key in sorted(latest, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        systems = latest[key]
        names = sorted(systems, key=lambda s: (s != baseline, s))
        for name in names:
            results.append(_result(dict(zip(group_by, key)), name, systems, baseline, include_unverified,
                                   factor, resamples, confidence, seed))
    used = [row for systems in latest.values() for row in systems.values()]
    return Comparison(results, baseline, group_by, include_unverified, factor, resamples, confidence,
                      _warnings(used))


def _samples(row: Mapping[str, Any]) -> np.ndarray:
    raw = [t for t in (row.get("epoch_times") or []) if t is not None]
    samples = np.asarray(raw, dtype=float)
    return samples[np.isfinite(samples)]


def _median_iqr(row: Mapping[str, Any]) -> tuple[float | None, float | None, np.ndarray]:
    samples = _samples(row)
    if samples.size:
        q1, med, q3 = np.percentile(samples, [25, 50, 75])
        return float(med), float(q3 - q1), samples
    return row.get("epoch_time_median_s"), row.get("epoch_time_iqr_s"), samples


def _result(group: dict[str, Any], name: str, systems: Mapping[str, Mapping[str, Any]], baseline: str,
            include_unverified: bool, factor: float, resamples: int, confidence: float,
            seed: int) -> SystemResult:
    row = systems[name]
    common = dict(group=group, system=name, status=row.get("status") or "ok",
                  verified=row.get("verified") or "unverified", run_id=row.get("id"), error=row.get("error"))
    if common["status"] != "ok":
        return SystemResult(**common, mark="!", note=common["status"])
    median, iqr, samples = _median_iqr(row)
    out: dict[str, Any] = dict(median_s=median, iqr_s=iqr, samples=int(samples.size))
    base = systems.get(baseline)
    base_ok = base is not None and (base.get("status") or "ok") == "ok"
    if base_ok and row.get("peak_memory_bytes") is not None and base.get("peak_memory_bytes"):
        out["memory_ratio"] = row["peak_memory_bytes"] / base["peak_memory_bytes"]
    ref = systems.get(REFERENCE)
    if (ref is not None and (ref.get("status") or "ok") == "ok" and row.get("test_accuracy") is not None
            and ref.get("test_accuracy") is not None):
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
    base_median, _, base_samples = _median_iqr(base) if base_ok else (None, None, None)
    if not base_median or not median:
        return SystemResult(**common, **out, note="no baseline" if not base_median else "no time")
    if samples.size >= MIN_SAMPLES and base_samples.size >= MIN_SAMPLES:
        speedup, low, high = bootstrap_speedup(base_samples, samples, resamples=resamples,
                                               confidence=confidence, seed=seed)
        significant = bool(low > 1 or high < 1)
        out.update(ci_low=low, ci_high=high, significant=significant)
    else:
        speedup, significant = base_median / median, False
    beyond = speedup >= factor or speedup <= 1 / factor
    mark = ("-" if speedup > 1 else "+") if beyond and significant else ("~" if beyond else "")
    return SystemResult(**common, **out, speedup=speedup, mark=mark)


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
        f"Epoch time: median in {unit} over the timed epochs; (! XX%) marks IQR/median > {IQR_WARN:.0%}.",
        f"Speedup: {c.baseline} median / system median (above 1 is faster), claimed {gate}; "
        f"{c.confidence:.0%} CI by bootstrap of the ratio of medians ({c.resamples} resamples).",
        f"Marks: - faster, + slower (beyond {c.factor:g}x and CI excludes 1), "
        f"~ beyond {c.factor:g}x but not significant, ! run did not succeed.",
        f"Peak memory: system / {c.baseline}. Test accuracy: system - {REFERENCE}, in percentage points.",
    ] + (["f: the run borrowed operators from a fallback system, whose kernel time is in its epoch; "
          "no speedup is credited to the system."] if any(r.mark == "f" for r in c.results) else [])


def _fmt_number(v: float) -> str:
    digits = 3 if abs(v) < 1 else 2 if abs(v) < 10 else 1 if abs(v) < 100 else 0
    return f"{v:.{digits}f}"


class _Table:
    """Rows of formatted cells shared by the text, markdown and HTML renderings."""

    def __init__(self, header: list[str], right: list[bool], cells: list[list[str]]):
        self.header, self.right, self.cells = header, right, cells

    @classmethod
    def build(cls, c: Comparison) -> "_Table":
        unit, scale = c.unit
        header = ["", *c.group_by, "system", "verified", f"epoch time ({unit})", "speedup",
                  f"{c.confidence:.0%} CI", f"peak mem vs {c.baseline}", f"test acc vs {REFERENCE}"]
        right = [False] * (len(c.group_by) + 3) + [True] * 5
        cells = []
        for r in c.results:
            if r.status != "ok":
                time = r.status
            elif r.median_s is None:
                time = "n/a"
            else:
                time = _fmt_number(r.median_s / scale)
                if r.noise is not None and r.noise > IQR_WARN:
                    time += f" (! {r.noise:.0%})"
            if r.speedup is not None:
                speedup = f"{r.speedup:.2f}x"
            else:  # a failed run's status already shows in the time cell
                speedup = r.note if r.note and r.status == "ok" else "n/a"
            ci = f"[{r.ci_low:.2f}, {r.ci_high:.2f}]" if r.ci_low is not None else ""
            mem = f"{r.memory_ratio:.2f}x" if r.memory_ratio is not None else "n/a"
            acc = f"{r.accuracy_diff * 100:+.2f} pp" if r.accuracy_diff is not None else "n/a"
            cells.append([r.mark, *("" if v is None else str(v) for v in r.group.values()), r.system,
                          r.verified, time, speedup, ci, mem, acc])
        return cls(header, right, cells)

    def text(self, notes: list[str]) -> str:
        widths = [max(len(row[i]) for row in [self.header, *self.cells]) for i in range(len(self.header))]

        def line(row: list[str]) -> str:
            return "  ".join(v.rjust(w) if r else v.ljust(w) for v, w, r in zip(row, widths, self.right)).rstrip()

        out = [line(self.header), "  ".join("-" * w for w in widths), *map(line, self.cells)]
        return "\n".join(out + [""] + notes) + "\n"

    def markdown(self, notes: list[str]) -> str:
        def line(row: list[str]) -> str:
            return "| " + " | ".join(v.replace("|", "\\|") for v in row) + " |"

        rule = "|" + "".join(" ---: |" if r else " --- |" for r in self.right)
        out = [line(self.header), rule, *map(line, self.cells)]
        return "\n".join(out) + "".join(f"\n\n{n}" for n in notes) + "\n"

    def html(self, notes: list[str]) -> str:
        def line(tag: str, row: list[str]) -> str:
            align = [' style="text-align:right"' if r else "" for r in self.right]
            return "<tr>" + "".join(f"<{tag}{a}>{html.escape(v)}</{tag}>" for v, a in zip(row, align)) + "</tr>"

        out = ['<table class="gnnbench-compare">', "<thead>", line("th", self.header), "</thead>", "<tbody>",
               *(line("td", row) for row in self.cells), "</tbody>", "</table>",
               *(f"<p>{html.escape(n)}</p>" for n in notes)]
        return "\n".join(out) + "\n"


def _render_csv(c: Comparison) -> str:
    columns = [*c.group_by, "system", "status", "verified", "mark", "epoch_time_median_s", "epoch_time_iqr_s",
               "samples", "speedup", "speedup_ci_low", "speedup_ci_high", "significant", "note",
               "peak_memory_ratio", "test_accuracy_diff", "run_id"]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in c.results:
        values = [*r.group.values(), r.system, r.status, r.verified, r.mark, r.median_s, r.iqr_s, r.samples,
                  r.speedup, r.ci_low, r.ci_high, r.significant, r.note, r.memory_ratio, r.accuracy_diff,
                  r.run_id]
        writer.writerow(["" if v is None else v for v in values])
    return buf.getvalue()
