"""A measurement knows its samples, its spread and whether to trust it.

Like ``torch.utils.benchmark.Measurement``: raw per-epoch times are kept, the
median and interquartile range are computed from them on demand, and a
measurement whose IQR is a large share of its median flags itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Measurement", "NOISY", "VERY_NOISY"]

#: IQR / median above which a measurement is flagged as noisy / very noisy
NOISY, VERY_NOISY = 0.10, 0.25


@dataclass(frozen=True)
class Measurement:
    """Raw samples in seconds (one per timed epoch) and statistics over them."""

    samples: tuple[float, ...]
    label: str = "epoch"
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def _quantiles(self) -> tuple[float, float, float]:
        if "q" not in self._cache:
            if not self.samples:
                self._cache["q"] = (float("nan"),) * 3
            else:
                self._cache["q"] = tuple(float(v) for v in np.percentile(self.samples, [25, 50, 75]))
        return self._cache["q"]

    @property
    def median(self) -> float:
        return self._quantiles()[1]

    @property
    def iqr(self) -> float:
        q1, _, q3 = self._quantiles()
        return q3 - q1

    @property
    def relative_spread(self) -> float:
        return self.iqr / self.median if self.median > 0 else float("nan")

    @property
    def warning(self) -> str:
        """``""``, or ``"(! 12%)"`` when IQR/median passes 10 %."""
        spread = self.relative_spread
        return f"(! {spread:.0%})" if spread > NOISY else ""

    def __str__(self) -> str:
        return f"{self.label}: median {self.median * 1e3:.3f} ms, IQR {self.iqr * 1e3:.3f} ms over {len(self.samples)} {self.warning}".rstrip()
