"""The sequential test's error rates, by simulation from process noise as measured on this machine.

:class:`ProcessNoise` draws the log median of each process along a run
sequence: a slow drift that neighbouring processes share (an AR(1) series)
plus what each process keeps for its whole life (its memory layout, its
placement), fitted to issue 54's A/A figures (:data:`QUIET`,
:data:`ASLR_OFF`). :func:`simulate` lays paired rounds over such sequences
(Note [paired rounds] in :mod:`gnnbench.core.sequential`), runs
:func:`~gnnbench.core.sequential.decide`'s test on each trial and counts the
verdicts. ``benchmarks/studies/bench_sequential.py`` renders the table
(results/studies/sequential.md); a fast test pins the rates at a modest size.

Note [what pairing buys]
    Issue 54's A/A runs (GCN on a 262,144-edge R-MAT graph, 30 rounds of
    aa_one then aa_two, quiet): process medians spread 10-12 %, with a lag-1
    autocorrelation of 0.54 (0.36 at lag 2). Taken apart, the two systems'
    figures differ by the spread of a difference of two independent process
    medians, 14.8 %; taken as pairs run back to back, by 11.5 %, since the
    drift they share cancels. A comparison's variance is its sd squared, so
    pairing alone cuts the processes a verdict needs by (14.8 / 11.5)^2 = 1.66
    (90 % power at a 10 % effect: about 15 pairs against 25 processes a side).
    ABBA rounds cancel also the drift's linear part across the round, and the
    sequential test stops as soon as the rounds decide: on :data:`QUIET`
    noise a 10 % slowdown is called slower after a median of 12 ABBA rounds
    (90th percentile 15) at the default 5 % threshold (results/studies/sequential.md has the
    figures, with the 90th percentile and ASLR off beside them). With ASLR off
    the paired sd fell to 8.4 %; that is layout luck the cheap processes must
    still sample, not a setting to turn off (issue 54).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gnnbench.core.sequential import (ALPHA, BETA, BASELINE, MIN_ROUNDS, PER_ROUND, THRESHOLD, WORDS, decisions,
                                      round_order)

__all__ = ["ProcessNoise", "QUIET", "ASLR_OFF", "OUTLIER", "Simulation", "simulate", "round_values"]

#: how much slower an outlier process runs (:attr:`ProcessNoise.outliers`)
OUTLIER = 0.3


@dataclass(frozen=True)
class ProcessNoise:
    """Log process medians along a run sequence: an AR(1) drift plus independent noise.

    Args:
        spread (float): standard deviation of the log process medians (about stdev / mean).
        lag1, lag2 (float): their autocorrelation at lags 1 and 2; the drift's coefficient is ``lag2 / lag1``
            and its share of the variance ``lag1^2 / lag2``.
        trend (float): a steady change of the log median per process (default: none).
        outliers (float): the share of processes that run :data:`OUTLIER` slower besides (default: none):
            a process that landed badly, as the A/A runs' slowest (16.9 ms against a median of 12.7).
    """

    spread: float
    lag1: float
    lag2: float
    trend: float = 0.0
    outliers: float = 0.0

    def __post_init__(self) -> None:
        if not (0 < self.lag2 <= self.lag1 < 1 and self.lag1 ** 2 / self.lag2 <= 1):
            raise ValueError(f"lags {self.lag1}, {self.lag2} are not an AR(1) drift plus noise")

    def draw(self, rng: np.random.Generator, trials: int, processes: int) -> np.ndarray:
        """``trials`` sequences of ``processes`` log medians (around 0)."""
        phi = self.lag2 / self.lag1
        drift_sd = self.spread * math.sqrt(self.lag1 / phi)
        own_sd = self.spread * math.sqrt(max(0.0, 1 - self.lag1 / phi))
        steps = rng.normal(0, drift_sd * math.sqrt(1 - phi ** 2), (trials, processes))
        drift = np.empty((trials, processes))
        drift[:, 0] = rng.normal(0, drift_sd, trials)
        for k in range(1, processes):
            drift[:, k] = phi * drift[:, k - 1] + steps[:, k]
        slow = (rng.random((trials, processes)) < self.outliers) * math.log(1 + OUTLIER)
        return drift + rng.normal(0, own_sd, (trials, processes)) + self.trend * np.arange(processes) + slow

    def paired_sd(self) -> float:
        """The sd of the log-ratio of two neighbouring processes: ``spread * sqrt(2 (1 - lag1))``."""
        return self.spread * math.sqrt(2 * (1 - self.lag1))


#: issue 54, quiet: spread 12 % (the top of the 10-12 % measured) and lags 0.54, 0.36, which give its paired sd 11.5 %
QUIET = ProcessNoise(0.12, 0.54, 0.36)
#: issue 54 with address-space randomisation off: paired sd 8.4 %, the same lags assumed
ASLR_OFF = ProcessNoise(0.084 / math.sqrt(2 * (1 - 0.54)), 0.54, 0.36)


def round_values(noise: ProcessNoise, effect: float, rounds: int, trials: int, per_round: int = PER_ROUND,
                 seed: int = 0) -> np.ndarray:
    """``trials x rounds`` round values (Note [paired rounds]) of a system ``effect`` slower than its baseline
    (``0.1``: 10 % slower), one continuous run sequence a trial, so that drift carries across rounds."""
    rng = np.random.default_rng(seed)
    order = [role for r in range(rounds) for role in round_order(r, per_round)]
    is_base = np.array([role == BASELINE for role in order])
    logs = noise.draw(rng, trials, len(order)) + np.where(is_base, 0.0, math.log(1 + effect))
    width = 2 * per_round
    logs, is_base = logs.reshape(trials, rounds, width), is_base.reshape(rounds, width)
    base = np.where(is_base, logs, 0).sum(axis=2) / per_round
    own = np.where(~is_base, logs, 0).sum(axis=2) / per_round
    return base - own


@dataclass(frozen=True)
class Simulation:
    """The verdicts of :func:`simulate`'s trials.

    Args:
        effect, threshold (float): the true slowdown and the test's threshold.
        counts (dict): trials by verdict word.
        rounds (numpy array): rounds each trial used.
        per_round (int): processes of each system in a round.
    """

    effect: float
    threshold: float
    counts: dict[str, int]
    rounds: np.ndarray
    per_round: int

    @property
    def trials(self) -> int:
        return int(sum(self.counts.values()))

    def share(self, *words: str) -> float:
        return sum(self.counts[w] for w in words) / self.trials

    @property
    def different(self) -> float:
        """Share called faster or slower: at effect 0, the false-positive rate."""
        return self.share("faster", "slower")

    def rounds_quantile(self, q: float) -> float:
        return float(np.percentile(self.rounds, 100 * q))

    def processes_quantile(self, q: float) -> float:
        """Processes of both systems a trial ran, at quantile ``q``."""
        return 2 * self.per_round * self.rounds_quantile(q)


def simulate(noise: ProcessNoise = QUIET, effect: float = 0.0, threshold: float = THRESHOLD, trials: int = 1000,
             max_rounds: int = 60, per_round: int = PER_ROUND, seed: int = 0, alpha: float = ALPHA,
             beta: float = BETA, min_rounds: int = MIN_ROUNDS) -> Simulation:
    """Run the test of Note [sequential test] on ``trials`` simulated comparisons of up to ``max_rounds`` rounds.

    Args:
        noise (ProcessNoise): how process medians vary (default: :data:`QUIET`).
        effect (float): the system's true slowdown (default: 0, an A/A pair).
        threshold, alpha, beta, min_rounds: the test's (defaults: those of :func:`~gnnbench.core.sequential.decide`).
        max_rounds (int): the budget, in rounds; a trial undecided by then counts as undecided.
        seed (int): of ``numpy.random.default_rng``.
    """
    values = round_values(noise, effect, max_rounds, trials, per_round, seed)
    codes, rounds = decisions(values, threshold, alpha, beta, min_rounds)
    counts = {word: int((codes == i).sum()) for i, word in enumerate(WORDS)}
    return Simulation(effect, threshold, counts, rounds, per_round)
