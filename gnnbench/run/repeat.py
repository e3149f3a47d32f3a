"""Repetitions: one configuration run in several processes, and the spread between their medians.

Note [repetitions]
    ``gnnbench run --repeat N`` and ``gnnbench sweep --rounds N`` (alias
    ``--repeat N``; campaign key ``rounds``, or ``repeat`` as the same integer)
    run every configuration in N worker processes, each stored as its own row
    with the same provenance and the same seed: the repetitions measure the
    noise between processes (memory layout, placement, the machine's other
    work), not between seeds, which are an axis of their own. ``compare``
    pools the rows of one provenance.

    The count is not a :class:`~gnnbench.run.config.RunConfig` field: a
    RunConfig is what one worker runs and what its row records (Note [one run
    configuration]), and the N rows of a configuration must agree on every
    identity field (Note [provenance] in :mod:`gnnbench.run.sweep`). How many
    processes run is a property of the invocation, as the sweep's rounds
    always were, so ``run`` takes it as its own option and a campaign as its
    ``rounds``; its bounds are :data:`MAX_PROCESSES` and :func:`process_count`.

    A sweep's processes of one configuration are interleaved round by round
    with the other configurations (Note [sweep order]); ``run --repeat``
    starts them one after another. Either way a process that fails is stored
    as failed and the others still run and are stored.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gnnbench.core.measurement import Measurement
from gnnbench.core.stability import SPREAD_LIMIT
from gnnbench.errors import UserError

__all__ = ["MAX_PROCESSES", "process_count", "ProcessSpread", "process_spread"]

#: the most processes one configuration may ask for (a bound against typos, not a resource limit)
MAX_PROCESSES = 10_000


def process_count(value: Any, name: str) -> int:
    """``value`` (an integer, or its ASCII digits) as a count of processes in ``[1, MAX_PROCESSES]``.

    Args:
        value: what the user gave.
        name: how the user wrote it, for the message (``--repeat``, ``campaign.toml: 'rounds'``).

    Raises:
        UserError: one line naming ``name`` and the value given.
    """
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PROCESSES:
        raise UserError(f"{name} must be an integer in [1, {MAX_PROCESSES}] (got {value!r})")
    return value


@dataclass(frozen=True)
class ProcessSpread:
    """The per-process medians of one configuration and their spread (Note [stability thresholds]).

    Args:
        processes (int): processes run, successful or not.
        medians (tuple of float): each successful process's median epoch (or pass) time, seconds, in run order.
    """

    processes: int
    medians: tuple[float, ...]

    @property
    def median(self) -> float | None:
        """The median of the process medians; None without a successful process."""
        return statistics.median(self.medians) if self.medians else None

    @property
    def low(self) -> float | None:
        return min(self.medians) if self.medians else None

    @property
    def high(self) -> float | None:
        return max(self.medians) if self.medians else None

    @property
    def spread(self) -> float | None:
        """Sample standard deviation of the process medians over their mean; None below two of them."""
        if len(self.medians) < 2 or statistics.fmean(self.medians) <= 0:
            return None
        return statistics.stdev(self.medians) / statistics.fmean(self.medians)

    @property
    def unstable(self) -> bool:
        """The spread passes :data:`~gnnbench.core.stability.SPREAD_LIMIT`."""
        return self.spread is not None and self.spread > SPREAD_LIMIT


def process_spread(rows: Iterable[Mapping[str, Any]]) -> ProcessSpread:
    """The :class:`ProcessSpread` of the rows of one configuration's processes (failed ones counted, not used)."""
    rows = list(rows)
    ok = (Measurement.from_row(row) for row in rows if row.get("status") == "ok")
    return ProcessSpread(len(rows), tuple(m.median for m in ok if not m.empty))
