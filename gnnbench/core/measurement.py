"""A measurement knows its samples, its spread and whether to trust it.

Like ``torch.utils.benchmark.Measurement``: raw per-epoch times are kept, the
median and interquartile range are computed from them on demand, and a
measurement whose IQR is a large share of its median flags itself. Every
statistic gnnbench shows (the harness's stored medians, ``compare``, ``plot``,
the report, the benchmarks) comes from here, and :data:`NOISE_THRESHOLD` is the
one place the noise limit is written.

Note [noise threshold]
    IQR / median above 10 % marks a measurement as noisy, shown as ``(! XX%)``
    next to its median (torch ``Measurement.has_warnings`` uses the same 10 %).
    Such a figure is kept and shown, never dropped: the mark tells the reader
    the machine was busy, and a rerun is the remedy.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gnnbench.core.phases import phase
from gnnbench.core.stability import SPREAD_LIMIT

__all__ = ["Measurement", "NOISE_THRESHOLD"]

#: IQR / median above which a measurement flags itself as noisy (Note [noise threshold]; the limit itself is
#: Note [stability thresholds]'s SPREAD_LIMIT)
NOISE_THRESHOLD = SPREAD_LIMIT


def _finite(values: Iterable[Any] | None) -> tuple[float, ...]:
    out = []
    for v in values or ():
        if v is not None:
            f = float(v)
            if math.isfinite(f):
                out.append(f)
    return tuple(out)


@dataclass(frozen=True)
class Measurement:
    """Raw samples in seconds (one per timed epoch) and statistics over them.

    Args:
        samples (tuple of float): the raw samples.
        label (str): what was measured (default: ``"epoch"``).
        stored_median, stored_iqr (float, optional): statistics of a row stored
            without its samples (old rows); used only when ``samples`` is empty.
    """

    samples: tuple[float, ...]
    label: str = "epoch"
    stored_median: float | None = None
    stored_iqr: float | None = None
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], name: str = "epoch") -> "Measurement":
        """Timed phase ``name``'s samples in a stored run (nulls and non-finite values dropped), falling back to
        its stored median (and interquartile range, where the phase has one) when no samples were kept; the
        columns are the phase's (Note [phases by name] in gnnbench/core/phases.py).

        Raises:
            KeyError: ``name`` is no timed phase.
        """
        columns = phase(name)

        def number(key: str | None) -> float | None:
            v = row.get(key) if key else None
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

        return cls(_finite(row.get(columns.samples)), name, number(columns.median), number(columns.iqr))

    def _quantiles(self) -> tuple[float, float, float]:
        if "q" not in self._cache:
            if self.samples:
                self._cache["q"] = tuple(float(v) for v in np.percentile(self.samples, [25, 50, 75]))
            elif self.stored_median is not None:
                half = (self.stored_iqr or 0.0) / 2
                self._cache["q"] = (self.stored_median - half, self.stored_median, self.stored_median + half)
            else:
                self._cache["q"] = (float("nan"),) * 3
        return self._cache["q"]

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def empty(self) -> bool:
        """No samples and no stored median: nothing to show."""
        return math.isnan(self.median)

    @property
    def quartiles(self) -> tuple[float, float, float]:
        """``(q1, median, q3)``; NaN when :attr:`empty`."""
        return self._quantiles()

    @property
    def median(self) -> float:
        return self._quantiles()[1]

    @property
    def iqr(self) -> float:
        q1, _, q3 = self._quantiles()
        return q3 - q1

    @property
    def relative_spread(self) -> float:
        """IQR / median (NaN without a positive median)."""
        return self.iqr / self.median if self.median > 0 else float("nan")

    @property
    def noisy(self) -> bool:
        """IQR / median passes :data:`NOISE_THRESHOLD`."""
        return self.relative_spread > NOISE_THRESHOLD

    @property
    def warning(self) -> str:
        """``""``, or ``"(! 12%)"`` when the measurement is :attr:`noisy`."""
        return f"(! {self.relative_spread:.0%})" if self.noisy else ""

    def __str__(self) -> str:
        return (f"{self.label}: median {self.median * 1e3:.3f} ms, IQR {self.iqr * 1e3:.3f} ms over "
                f"{len(self.samples)} {self.warning}").rstrip()
