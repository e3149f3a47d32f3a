"""Statistics over processes: a configuration's figure, a speedup's interval, and when a figure is unsteady.

Every stored run is one process. :class:`Processes` holds the runs of one
configuration (Note [configurations] in :mod:`gnnbench.results.configurations`),
one :class:`~gnnbench.core.measurement.Measurement` per process, and
:func:`speedup` sets two of them against each other. ``compare`` (also
``--by build`` and ``--baseline-results``), ``regressions`` and the report read
their figures, intervals and stability flags here and nowhere else.

Note [between-process statistics]
    Two processes of one configuration differ by more than the epochs of either
    one vary (on a busy 2-core machine, by tens of percent:
    ``results/design_figures.md``), so a bootstrap over one process's epochs calls identical
    configurations different. The unit of replication is the process:

    * the *figure* is the median of the per-process median epoch times;
    * the *speedup* is the ratio of two figures (baseline / system);
    * its *interval* is a two-level (hierarchical) percentile bootstrap: each
      resample draws the processes with replacement, then each drawn process's
      epochs with replacement, and takes the median of the per-process
      medians; the two sides are resampled independently, ``resamples`` times,
      from ``numpy.random.default_rng(seed)``, vectorised in numpy
      (``scipy.stats.bootstrap`` resamples one level only). Chosen over a rank
      test on process medians (Mann-Whitney U, as asv) because it keeps what
      the CI column has always meant (an interval of the ratio of medians) and
      uses the epochs too, where a rank test on 5 against 5 medians can never
      reach p < 0.01. With one process it would reduce to the old bootstrap
      over epochs, which is exactly the claim the issue showed false, so with
      one process on either side no interval is computed and nothing is
      claimed (``1 process: no significance claimed``).

    A figure is *unstable* (:meth:`Processes.instability`; every limit from
    Note [stability thresholds] in :mod:`gnnbench.core.stability`) when
    (a) the median over its processes of the epochs' IQR / median passes
    ``SPREAD_LIMIT`` (the noise mark ``(! XX%)``; the median, so one noisy
    process among ten does not flag a figure that (b) and (c) judge);
    (b) the standard deviation of the process medians over their mean passes
    ``SPREAD_LIMIT``; (c) some process median lies ``OUTLIER_LIMIT`` or more
    from the figure; (d) a pooled run's ``machine_state.other_cpu_share``
    passes ``OTHER_CPU_LIMIT``; (e) it has fewer processes than it needs:
    at least ``MIN_PROCESSES``, and ``(z * CV / PRECISION)^2`` rounded up,
    where CV is (b)'s spread and z the normal quantile of the confidence
    (1.96 at 95 %): the processes for which a CI of the figure's mean would
    be within ``PRECISION`` of it. A speedup involving an unstable figure
    (either side) is shown with its interval but never marked ``-`` or ``+``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Callable

import numpy as np

from gnnbench.core.measurement import Measurement
from gnnbench.core.stability import MIN_PROCESSES, OTHER_CPU_LIMIT, OUTLIER_LIMIT, PRECISION, SPREAD_LIMIT

__all__ = ["Processes", "speedup", "other_cpu_share", "FACTOR", "RESAMPLES", "CONFIDENCE", "SEED", "MIN_SAMPLES",
           "ONE_PROCESS", "relative_change", "processes_for_power", "PerSeed", "seed_values", "trimmed_mean", "seed_speedup",
           "converges_early", "CONVERGENCE_ALPHA"]

#: comparison defaults, stated once: the factor beyond which a speedup is marked, the bootstrap's resamples
#: and confidence level, its seed (Note [marks] in gnnbench.results.compare)
FACTOR, RESAMPLES, CONFIDENCE, SEED = 1.1, 2000, 0.95, 0
#: fewest epochs a process needs to enter a bootstrap; below it no interval is computed
MIN_SAMPLES = 3
#: what a figure of one process says instead of a claim (Note [between-process statistics])
ONE_PROCESS = "1 process: no significance claimed"
_CELLS = 2_000_000  # bootstrap values drawn at once, bounding memory (16 MB of float64)


def other_cpu_share(row: Mapping[str, Any]) -> float | None:
    """``machine_state.other_cpu_share`` of a stored run, or ``None`` (older rows have no ``machine_state``)."""
    state = row.get("machine_state")
    share = state.get("other_cpu_share") if isinstance(state, dict) else None
    return float(share) if isinstance(share, (int, float)) and math.isfinite(share) else None


@dataclass(frozen=True)
class Processes:
    """The processes of one configuration and statistics over them (Note [between-process statistics]).

    Args:
        measurements (tuple of Measurement): one per process; empty ones are ignored.
        other_cpu_shares (tuple of float): the known ``other_cpu_share`` of the pooled runs (default: none).
    """

    measurements: tuple[Measurement, ...]
    other_cpu_shares: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "measurements", tuple(m for m in self.measurements if not m.empty))

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]],
                  measure: Callable[[Mapping[str, Any]], Measurement] = Measurement.from_row) -> "Processes":
        """One process per stored run; ``measure`` reads a run's times (default: its epoch times)."""
        rows = list(rows)
        shares = tuple(s for s in map(other_cpu_share, rows) if s is not None)
        return cls(tuple(map(measure, rows)), shares)

    def __len__(self) -> int:
        return len(self.measurements)

    @property
    def medians(self) -> np.ndarray:
        return np.array([m.median for m in self.measurements], dtype=float)

    @property
    def median(self) -> float:
        """The figure: the median of the per-process medians (NaN without processes)."""
        return float(np.median(self.medians)) if len(self) else float("nan")

    @property
    def quartiles(self) -> tuple[float, float, float]:
        """The medians over processes of each process's quartiles; one process's own quartiles."""
        if not len(self):
            return (float("nan"),) * 3
        q = np.median(np.array([m.quartiles for m in self.measurements]), axis=0)
        return float(q[0]), float(q[1]), float(q[2])

    @property
    def iqr(self) -> float:
        """The median over processes of each process's IQR."""
        return float(np.median([m.iqr for m in self.measurements])) if len(self) else float("nan")

    @property
    def samples(self) -> int:
        """Epochs over all processes."""
        return sum(len(m) for m in self.measurements)

    @property
    def within_spread(self) -> float:
        """(a): the median over processes of IQR / median."""
        return float(np.median([m.relative_spread for m in self.measurements])) if len(self) else float("nan")

    @property
    def between_spread(self) -> float:
        """(b): standard deviation of the process medians over their mean; NaN below two processes."""
        medians = self.medians
        return float(np.std(medians, ddof=1) / np.mean(medians)) if len(self) >= 2 else float("nan")

    @property
    def farthest(self) -> float:
        """(c): the largest relative distance of a process median from the figure."""
        return float(np.max(np.abs(self.medians / self.median - 1))) if len(self) else float("nan")

    def needed(self, confidence: float = CONFIDENCE) -> int:
        """(e): processes this figure needs for :data:`PRECISION` at ``confidence``, at least MIN_PROCESSES."""
        spread = self.between_spread
        if math.isnan(spread):
            return MIN_PROCESSES
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        return max(MIN_PROCESSES, math.ceil((z * spread / PRECISION) ** 2))

    @property
    def noisy(self) -> bool:
        """(a) alone: the time cell's ``(! XX%)``."""
        return self.within_spread > SPREAD_LIMIT

    def instability(self, confidence: float = CONFIDENCE) -> list[str]:
        """Why this figure can carry no significance mark, shortest first; ``[]`` when it is stable."""
        n = len(self)
        if n == 0:
            return []
        reasons = [ONE_PROCESS] if n == 1 else (
            [f"{n} processes, {self.needed(confidence)} needed"] if n < self.needed(confidence) else [])
        if self.noisy:
            reasons.append(f"epoch spread {self.within_spread:.0%} within "
                           + ("the process" if n == 1 else "processes"))
        if n >= 2 and self.between_spread > SPREAD_LIMIT:
            reasons.append(f"spread {self.between_spread:.0%} across {n} processes")
        if n >= 2 and self.farthest >= OUTLIER_LIMIT:
            reasons.append(f"a process {self.farthest:.0%} from the median")
        fewest = min((len(m) for m in self.measurements if len(m)), default=0)
        if n >= 2 and fewest < MIN_SAMPLES:  # speedup() resamples no such side: its ratio comes bare
            reasons.append(f"{fewest} timed epochs a process, {MIN_SAMPLES} needed")
        busy = [s for s in self.other_cpu_shares if s > OTHER_CPU_LIMIT]
        if busy:
            reasons.append(f"busy machine: other processes took up to {max(busy):.0%} of the CPUs")
        return reasons

    def note(self, confidence: float = CONFIDENCE) -> str | None:
        """:meth:`instability` as one phrase (``unstable: ...``, or the one-process sentence), else ``None``."""
        reasons = self.instability(confidence)
        if not reasons:
            return None
        if reasons[0] == ONE_PROCESS:
            return ONE_PROCESS + ("; unstable: " + "; ".join(reasons[1:]) if reasons[1:] else "")
        return "unstable: " + "; ".join(reasons)

    @property
    def resamplable(self) -> bool:
        """Two or more processes, each with :data:`MIN_SAMPLES` epochs: an interval means something."""
        return len(self) >= 2 and all(len(m) >= MIN_SAMPLES for m in self.measurements)


def _resampled_figures(ps: Processes, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``resamples`` figures of ``ps``: processes drawn with replacement, then each drawn process's epochs.

    Each process's epochs are sorted once, so the median of a resample is read at the middle order
    statistics of its drawn indices (sorting integers is several times faster than medians of floats).
    """
    lengths = np.array([len(m) for m in ps.measurements])
    count, width = len(lengths), int(lengths.max())
    ordered = np.zeros((count, width))
    for i, m in enumerate(ps.measurements):
        ordered[i, :lengths[i]] = np.sort(m.samples)
    out = np.empty(resamples)
    block = max(1, _CELLS // (count * width))
    for start in range(0, resamples, block):
        r = min(block, resamples - start)
        picked = rng.integers(0, count, size=(r, count))[..., None]
        n = lengths[picked]
        drawn = (rng.random((r, count, width)) * n).astype(np.intp)
        drawn[np.arange(width) >= n] = width  # a shorter process draws only as many epochs as it has
        drawn.sort(axis=2)
        low = np.take_along_axis(drawn, (n - 1) // 2, axis=2)
        high = np.take_along_axis(drawn, n // 2, axis=2)
        medians = (ordered[picked, low] + ordered[picked, high])[..., 0] / 2
        out[start:start + r] = np.median(medians, axis=1)
    return out


def speedup(baseline: Processes, system: Processes, *, resamples: int = RESAMPLES,
            confidence: float = CONFIDENCE, seed: int = SEED) -> tuple[float, float | None, float | None]:
    """``baseline.median / system.median`` and its two-level bootstrap interval (Note [between-process statistics]).

    Args:
        baseline, system (Processes): the two configurations.
        resamples (int): bootstrap resamples (default: :data:`RESAMPLES`).
        confidence (float): interval coverage (default: :data:`CONFIDENCE`).
        seed (int): seed of ``numpy.random.default_rng`` (default: :data:`SEED`).

    Returns:
        ``(speedup, low, high)``, above 1 when the system is faster; ``low`` and ``high`` are ``None``
        unless both sides are :attr:`Processes.resamplable` (one process claims nothing).

    Raises:
        ValueError: a side without processes.
    """
    if not len(baseline) or not len(system):
        raise ValueError(f"a speedup needs processes on both sides (got {len(baseline)} and {len(system)})")
    ratio = baseline.median / system.median
    if not (baseline.resamplable and system.resamplable):
        return ratio, None, None
    rng = np.random.default_rng(seed)
    ratios = _resampled_figures(baseline, resamples, rng) / _resampled_figures(system, resamples, rng)
    low, high = np.percentile(ratios, [50 * (1 - confidence), 50 * (1 + confidence)])
    return ratio, float(low), float(high)


def processes_for_power(spread: float, change: float, power: float = 0.9,
                        confidence: float = CONFIDENCE) -> int | None:
    """Processes a side that a comparison needs to see a true relative ``change`` with probability ``power``.

    Note [processes for power]
        A planning figure, not a test: the normal approximation for two
        samples of equal size, ``n = 2 (z_c + z_p)^2 spread^2 / change^2``
        (``z_c`` the two-sided quantile of ``confidence``, ``z_p`` that of
        ``power``), times pi / 2 because the figure is a median of process
        medians, which for normal data needs pi / 2 times the processes of a
        mean. ``spread`` is the spread across processes of
        :meth:`Processes.between_spread`. It says what a campaign's
        ``rounds`` must be on a machine as noisy as the one measured; the
        marks themselves still come from the bootstrap and the flags.
    """
    if not (math.isfinite(spread) and spread >= 0 and change > 0):
        return None
    z = NormalDist().inv_cdf(0.5 + confidence / 2) + NormalDist().inv_cdf(power)
    return max(2, math.ceil(math.pi / 2 * 2 * (z * spread / change) ** 2))


def relative_change(result: Sequence[float | None]) -> tuple[float, float | None, float | None]:
    """A :func:`speedup` result as the change ``after / before - 1`` and its interval (``+0.18``: 18 % slower)."""
    ratio, low, high = result
    return 1 / ratio - 1, (None if high is None else 1 / high - 1), (None if low is None else 1 / low - 1)


# ---------------------------------------------------------------- over seeds: time to accuracy

#: a set of runs over seeds: a list, or seed -> value, which lets two systems' runs be paired by seed
PerSeed = Sequence[float] | Mapping[Any, float]


def seed_values(runs: PerSeed) -> np.ndarray:
    """The values of a :data:`PerSeed`, in its order."""
    return np.asarray(list(runs.values()) if isinstance(runs, Mapping) else list(runs), dtype=float)


def trimmed_mean(values: PerSeed) -> float:
    """MLPerf's score of a set of runs: the mean with the fastest and the slowest dropped (Note [seed
    statistics]); a run that missed its target counts as ``inf``, so one miss is dropped as the slowest and two
    make the figure ``inf``. Fewer than three runs: the plain mean."""
    ordered = np.sort(seed_values(values))
    kept = ordered[1:-1] if len(ordered) >= 3 else ordered
    return float(np.mean(kept)) if len(kept) else float("nan")


def _trimmed_means(drawn: np.ndarray) -> np.ndarray:
    """:func:`trimmed_mean` of every row of ``drawn`` (resamples x seeds), at once."""
    ordered = np.sort(drawn, axis=1)
    return (ordered[:, 1:-1] if drawn.shape[1] >= 3 else ordered).mean(axis=1)


def seed_speedup(baseline: PerSeed, system: PerSeed, *, resamples: int = RESAMPLES,
                 confidence: float = CONFIDENCE, seed: int = SEED) -> tuple[float, float | None, float | None]:
    """``trimmed_mean(baseline) / trimmed_mean(system)`` and its percentile bootstrap interval over seeds.

    Note [seed statistics]
        Time to accuracy is a distribution over seeds, not over epochs: each
        seed trains another model to the target. The figure is MLPerf's, the
        mean with the fastest and slowest runs dropped (robust to one lucky or
        unlucky seed); its interval is a percentile bootstrap that resamples
        seeds with replacement (``numpy.random.default_rng(seed)``).

        *Paired by seed* when both sides are given as seed -> value over the
        same seeds: a resample draws seeds and keeps both sides' runs of each
        drawn seed. Every system starts a seed from the same weights and
        draws the same batches, so an exact system needs the baseline's
        epochs on every seed; what differs between seeds (epochs to the
        target ranged 19-55 on Cora GCN, results/studies/time_to_accuracy.md) then
        cancels in the ratio instead of widening its interval. Otherwise
        (lists, or different seeds) each side is resampled on its own.

        No interval is computed, and nothing is claimed, below
        :data:`~gnnbench.core.stability.MIN_PROCESSES` seeds a side, when a
        side's figure is infinite (two seeds or more missed the target), or
        when missed seeds decide a bound: a bound that falls on a resample in
        which a side's figure is infinite is 0 or unbounded, an open interval
        rather than a figure.

    Returns:
        ``(speedup, low, high)``, above 1 when the system reaches the target sooner.
    """
    base, own = seed_values(baseline), seed_values(system)
    ratio = trimmed_mean(base) / trimmed_mean(own)
    if min(len(base), len(own)) < MIN_PROCESSES or not math.isfinite(ratio) or ratio == 0:
        return ratio, None, None
    rng = np.random.default_rng(seed)
    paired = isinstance(baseline, Mapping) and isinstance(system, Mapping) and set(baseline) == set(system)
    if paired:  # the system's runs in the baseline's seed order, so that one draw picks a seed on both sides
        own = np.asarray([system[s] for s in baseline], dtype=float)
        drawn_base = drawn_own = rng.integers(0, len(base), size=(resamples, len(base)))
    else:
        drawn_base = rng.integers(0, len(base), size=(resamples, len(base)))
        drawn_own = rng.integers(0, len(own), size=(resamples, len(own)))
    with np.errstate(invalid="ignore"):  # inf / inf: both sides missed in a resample, no ratio at all
        ratios = _trimmed_means(base[drawn_base]) / _trimmed_means(own[drawn_own])
        ratios = ratios[~np.isnan(ratios)]
        if not len(ratios):
            return ratio, None, None
        low, high = np.percentile(ratios, [50 * (1 - confidence), 50 * (1 + confidence)])
    if not (low > 0 and math.isfinite(high)):
        return ratio, None, None
    return ratio, float(low), float(high)


#: significance of the convergence check (Note [convergence check]), MLPerf's
CONVERGENCE_ALPHA = 0.05


def converges_early(epochs: PerSeed, reference_epochs: PerSeed,
                    alpha: float = CONVERGENCE_ALPHA) -> float | None:
    """The p-value when ``epochs`` to the target lie significantly below ``reference_epochs``, else ``None``.

    Note [convergence check]
        MLPerf rejects a submission whose runs converge faster than its
        reference convergence points allow (a one-sided t-test at p = 0.05):
        a model that reaches the target in fewer epochs than the exact oracle
        is likely training something else. Here the reference points are
        ``reference``'s epochs to the target on the same configuration and
        seeds; the test is Welch's one-sided t-test (unequal variances) of the
        system's epochs against them. Two samples without spread (every seed
        the same number of epochs) have no t statistic: they are flagged when
        the system's epochs all lie below all of the reference's. A flag is
        a finding worth a look before any speed claim, never a verdict.
    """
    own, ref = seed_values(epochs), seed_values(reference_epochs)
    own, ref = own[np.isfinite(own)], ref[np.isfinite(ref)]
    if len(own) < 2 or len(ref) < 2:
        return None
    if np.std(own) == 0 and np.std(ref) == 0:
        return 0.0 if own.max() < ref.min() else None
    from scipy.stats import ttest_ind

    p = float(ttest_ind(own, ref, equal_var=False, alternative="less").pvalue)
    return p if p < alpha else None
