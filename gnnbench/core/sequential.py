"""Paired rounds and a sequential test on them: is a system faster, slower or the same as a baseline?

``gnnbench ab`` (and campaigns that decide against a baseline) run the two
systems in *rounds* (Note [paired rounds]) and, after each round, ask
:func:`decide` whether the rounds so far settle the question (Note
[sequential test]). :mod:`gnnbench.core.simulation` shows the test's error
rates on noise drawn as this machine's processes vary (Note [what pairing
buys]).

Note [paired rounds]
    The unit is a *round*: ``per_round`` processes of each system run back to
    back in ABBA order (:func:`round_order`; ``per_round=2`` is ABBA itself),
    the order mirrored (BAAB) every other round, so neither system is always
    first. The round's value (:func:`round_value`) is the log of the geometric
    mean of the baseline's process medians over the geometric mean of the
    system's: above 0 when the system is faster. Neighbouring processes share
    the machine's slow drift (the lag-1 autocorrelation of process medians was
    0.54 in issue 54's A/A runs), and ABBA cancels a drift that is linear
    across the round, so the round values vary less than processes do. The
    rounds are the replicates: the figure is ``exp`` of the mean round value,
    its interval a Student t interval over round values (:data:`CONFIDENCE`),
    never one over processes as if they were independent.

Note [sequential test]
    After every round :func:`decide` runs Sobel and Wald's three-hypothesis
    sequential probability ratio test on the round values ``x_1..x_n``, whose
    mean is ``mu``, with ``delta = log(1 + threshold)``:

    * an upper SPRT of ``mu <= 0`` against ``mu >= +delta`` (the system faster
      by the threshold or more) and a lower one of ``mu >= 0`` against
      ``mu <= -delta``, each
      with Wald's bounds ``A = log((1 - beta) / (alpha / 2))`` and
      ``B = log(beta / (1 - alpha / 2))``;
    * the variance is unknown, and a system may differ by far more than the
      threshold, so each log-likelihood ratio is the generalised one
      (GSPRT, as fishtest's): the likelihood maximised over the mean in
      each side's range (``mu >= delta`` against ``mu <= 0`` for the upper
      test) and over the variance, ``n / 2 * log(sum (x - m0)^2 / sum (x -
      m1)^2)`` with ``m1 = max(mean, delta)`` and ``m0 = min(mean, 0)``. It
      does not change when every value is scaled (a t-type statistic), and
      a large difference is decided at the first look. Plugging in the
      sample variance instead let noise that looked small early cross a
      bound (:mod:`gnnbench.core.simulation`, looking from round 5: 11 % of
      identical pairs called different at a 5 % threshold); fixing the means
      at ``0`` and ``delta`` made a 30 % difference wait 20 rounds, since
      both hypotheses then fit it badly;
    * neither looks before :data:`MIN_ROUNDS` rounds: with fewer values the
      variance is too uncertain. On :data:`~gnnbench.core.simulation.QUIET`
      noise (4 x 10,000 trials) the false-different rate was 4.6 % looking
      from round 10 (4.2-5.1 % by seed), 4.0 % from 12 and 3.6 % from 14; a
      10 % slowdown was decided after a median of 10, 12 and 14 rounds (90th
      percentile 14, 15, 15). 12 keeps alpha with a margin for noise less
      kind than the model's;
    * a test that crosses a bound has concluded and stays so. **faster** when
      the upper one accepts its alternative, **slower** when the lower one
      does, **same** when both have accepted ``0``, and **undecided**
      while neither has concluded for a side (at the budget, with the interval
      so far). The two alternatives exclude each other at any one look
      (each needs the mean beyond ``+-delta / 2``).

    What the numbers mean. The *threshold* is the smallest change worth
    calling different: a system ``threshold`` faster or slower is called so
    with probability at least ``1 - beta``; identical systems are called
    different (faster or slower) with probability at most ``alpha`` (each side
    ``alpha / 2``); between 0 and the threshold either answer may come, and the
    interval says where the ratio lies. ``alpha = beta = 0.05`` as fishtest's.

    Why looking after every round does not inflate false positives: Wald's
    bounds bound the probability that the likelihood ratio *ever* crosses the
    wrong bound, over the whole unbounded sequence of looks (a supermartingale
    argument), not the probability at one fixed sample size, which is what a
    p-value cut-off checked after every round (Chromium Pinpoint's) fails to
    control. Stopping at the budget only turns would-be decisions into
    "undecided", which lowers both error rates. The unknown variance makes the
    bound approximate, which is why the rates are shown by simulation
    (:func:`gnnbench.core.simulation.simulate`) and by the A/A campaign
    (``benchmarks/studies/bench_aa.py --decide``). The interval printed beside a
    verdict is the fixed-sample interval of the rounds run: it reads the size
    of the difference, the test makes the call.

    A group-sequential design (O'Brien-Fleming or Pocock alpha spending) was
    the other candidate; it needs the largest number of rounds fixed in advance,
    where ``gnnbench ab`` is given a time budget whose rounds depend on the
    machine, and it stops no sooner than the SPRT on the data it is planned for.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gnnbench.core.statistics import CONFIDENCE

__all__ = ["ALPHA", "BETA", "THRESHOLD", "MIN_ROUNDS", "PER_ROUND", "WORDS", "BASELINE", "SYSTEM",
           "round_order", "round_value", "Verdict", "decide", "decisions"]

#: the sequential test's error rates (Note [sequential test]): fishtest's alpha = beta = 0.05
ALPHA, BETA = 0.05, 0.05
#: the smallest relative change called faster or slower, by default
THRESHOLD = 0.05
#: rounds before the test looks at all (Note [sequential test])
MIN_ROUNDS = 12
#: processes of each system in one round: ABBA (Note [paired rounds])
PER_ROUND = 2
#: a verdict's words, in the order of its codes in :func:`decisions`
WORDS = ("undecided", "faster", "slower", "same")
#: the two roles in a round
BASELINE, SYSTEM = "baseline", "system"


def round_order(index: int, per_round: int = PER_ROUND) -> tuple[str, ...]:
    """The roles of round ``index``'s processes in run order (Note [paired rounds]).

    ``per_round`` baseline and system processes as AB, BA, AB, ... pairs (ABBA for 2), mirrored every other
    round: round 0 ``ABBA``, round 1 ``BAAB``.
    """
    pairs = [(BASELINE, SYSTEM) if i % 2 == 0 else (SYSTEM, BASELINE) for i in range(per_round)]
    order = tuple(role for pair in pairs for role in pair)
    if index % 2:
        order = tuple(SYSTEM if role == BASELINE else BASELINE for role in order)
    return order


def round_value(baseline_medians: Sequence[float], system_medians: Sequence[float]) -> float:
    """``log(geomean(baseline) / geomean(system))`` of one round's process medians: above 0 when the system is
    faster (Note [paired rounds])."""
    base, own = np.log(np.asarray(baseline_medians, float)), np.log(np.asarray(system_medians, float))
    if not (len(base) and len(own)):
        raise ValueError(f"a round needs processes of both systems (got {len(base)} and {len(own)})")
    return float(base.mean() - own.mean())


@dataclass(frozen=True)
class Verdict:
    """What the rounds say (Note [sequential test]).

    Args:
        word (str): one of :data:`WORDS`.
        speedup (float): ``exp`` of the mean round value: the baseline's time over the system's (NaN
            without rounds).
        low, high (float or None): its :data:`CONFIDENCE` interval over rounds; None below two rounds.
        rounds (int): rounds the verdict used (for a decision, the round at which it was reached).
        threshold, alpha, beta (float): the test's parameters.
    """

    word: str
    speedup: float
    low: float | None
    high: float | None
    rounds: int
    threshold: float = THRESHOLD
    alpha: float = ALPHA
    beta: float = BETA

    @property
    def decided(self) -> bool:
        return self.word != "undecided"

    def as_dict(self) -> dict:
        return {"verdict": self.word, "speedup": self.speedup, "ci_low": self.low, "ci_high": self.high,
                "rounds": self.rounds, "threshold": self.threshold, "alpha": self.alpha, "beta": self.beta}


def _bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's bounds of each one-sided test, each at ``alpha / 2``."""
    return math.log((1 - beta) / (alpha / 2)), math.log(beta / (1 - alpha / 2))


def _first(mask: np.ndarray) -> np.ndarray:
    """Per row, the first column where ``mask`` holds, or the row length."""
    return np.where(mask.any(axis=1), mask.argmax(axis=1), mask.shape[1])


def decisions(values: np.ndarray, threshold: float = THRESHOLD, alpha: float = ALPHA, beta: float = BETA,
              min_rounds: int = MIN_ROUNDS) -> tuple[np.ndarray, np.ndarray]:
    """The test of Note [sequential test] on each row of ``values`` (sequences x rounds) at once.

    Returns:
        ``(codes, rounds)``: per row the index into :data:`WORDS` and the rounds used (the round of the
        decision; all of them when undecided).
    """
    x = np.atleast_2d(np.asarray(values, float))
    n = np.arange(1, x.shape[1] + 1)
    delta = math.log(1 + threshold)
    upper_bound, lower_bound = _bounds(alpha, beta)
    s, q = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    mean = s / n

    def log_fit(mu: np.ndarray) -> np.ndarray:  # log of sum (x - mu)^2 over the rounds so far
        tiny = np.finfo(float).tiny  # identical values (a fake clock): finite, and huge, ratios
        return np.log(np.maximum(q - 2 * mu * s + n * mu ** 2, tiny))

    llr = {1: n / 2 * (log_fit(np.minimum(mean, 0)) - log_fit(np.maximum(mean, delta))),
           -1: n / 2 * (log_fit(np.maximum(mean, 0)) - log_fit(np.minimum(mean, -delta)))}
    early = n < max(min_rounds, 2)
    ends = {}
    for sign, ratio in llr.items():  # each test concludes at its first crossing (Note [sequential test])
        stop = _first(((ratio >= upper_bound) | (ratio <= lower_bound)) & ~early)
        concluded = stop < x.shape[1]
        alternative = concluded & (np.take_along_axis(ratio, np.minimum(stop, x.shape[1] - 1)[:, None],
                                                      axis=1)[:, 0] >= upper_bound)
        ends[sign] = (stop, concluded, alternative)
    never = x.shape[1] + 1
    (up_at, up_done, faster), (down_at, down_done, slower) = ends[1], ends[-1]
    candidates = np.stack([np.where(faster, up_at, never), np.where(slower, down_at, never),
                           np.where(up_done & ~faster & down_done & ~slower, np.maximum(up_at, down_at), never)])
    at = candidates.min(axis=0)
    codes = np.where(at < never, candidates.argmin(axis=0) + 1, 0)
    return codes, np.where(codes > 0, at + 1, x.shape[1])


def decide(values: Sequence[float], threshold: float = THRESHOLD, alpha: float = ALPHA, beta: float = BETA,
           min_rounds: int = MIN_ROUNDS, confidence: float = CONFIDENCE) -> Verdict:
    """The :class:`Verdict` of the per-round values so far, in the order the rounds ran (Note [sequential test]).

    Args:
        values (sequence of float): :func:`round_value` of each round.
        threshold (float): the smallest relative change called different, in (0, 1) (default: :data:`THRESHOLD`).
        alpha, beta (float): the test's error rates (default: :data:`ALPHA`, :data:`BETA`).
        min_rounds (int): rounds before the test looks (default: :data:`MIN_ROUNDS`).
        confidence (float): the interval's coverage (default: :data:`CONFIDENCE`).

    A decision reached before the last value stands (the rounds after it are not used), so the verdict
    rebuilt from a store equals the one given when the rounds ran.
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must lie in (0, 1) (got {threshold!r})")
    x = np.asarray(values, float)
    if not len(x):
        return Verdict("undecided", float("nan"), None, None, 0, threshold, alpha, beta)
    codes, rounds = decisions(x[None, :], threshold, alpha, beta, min_rounds)
    used = x[:int(rounds[0])]
    mean = float(used.mean())
    low = high = None
    if len(used) >= 2:
        from scipy.stats import t

        half = float(t.ppf(0.5 + confidence / 2, len(used) - 1) * used.std(ddof=1) / math.sqrt(len(used)))
        low, high = math.exp(mean - half), math.exp(mean + half)
    return Verdict(WORDS[int(codes[0])], math.exp(mean), low, high, len(used), threshold, alpha, beta)
